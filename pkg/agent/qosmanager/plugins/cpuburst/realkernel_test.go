package cpuburst

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/topology"
	"github.com/gleaner-sh/gleaner/test/cgrouptest"
	"github.com/gleaner-sh/gleaner/test/ci"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// burstEnv makes the test binary the bursting workload of TestRealKernelBurst (TestBursterProcess).
const burstEnv = "GLEANER_CPUBURST_BURSTER"

// The workload: burstWork of CPU time, then burstIdle and up to burstJitter more asleep, for ever: about 0.3 cores
// on average, under a 500m limit, but 80 ms at a time, more than the 50 ms quota of one 100 ms period. The jitter
// keeps the bursts from locking onto the CFS period: on an idle machine a fixed 200 ms cycle settled where each
// burst straddles two periods with under 50 ms in each, and was never throttled.
const (
	burstWork   = 80 * time.Millisecond
	burstIdle   = 120 * time.Millisecond
	burstJitter = 100 * time.Millisecond
)

// TestBursterProcess is the workload process TestRealKernelBurst starts; run by hand it does nothing.
func TestBursterProcess(t *testing.T) {
	if os.Getenv(burstEnv) != "1" {
		return
	}
	for {
		start := cpuTime()
		for x := 0; cpuTime()-start < burstWork; x++ {
			for range 10000 {
				x ^= x << 1
			}
		}
		time.Sleep(burstIdle + rand.N(burstJitter))
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// realBurst is the plugin on a private kubepods hierarchy (cgroup v1 or v2) of the real kernel, with one Burstable
// pod whose container has a 500m limit and runs the bursting workload.
type realBurst struct {
	t           *testing.T
	fs          *cgroup.FS
	cache       *metriccache.MemoryCache
	store       *statesinformer.Store
	exec        *executor.Executor
	pod         *corev1.Pod
	p           qosmanager.RunPlugin
	podDir, dir string
	limit       cgroup.CPUQuota
}

func startRealBurst(t *testing.T) *realBurst {
	box := cgrouptest.New(t)
	r := &realBurst{t: t, fs: box.FS(), limit: cgroup.CPUQuota{Quota: 50 * time.Millisecond, Period: cgroup.CFSPeriod}}
	if _, err := r.fs.CPUBurst(box.Parent); err != nil {
		ci.Skipf(t, "this kernel has no CFS burst (cpu.cfs_burst_us, v2 cpu.max.burst): %v", err)
	}
	l := box.Layout()
	pod := tu.Pod("web").UID("c0b0b0b0-0000-4000-8000-000000000001").
		Container("app").Requests("cpu", "100m").Limits("cpu", "500m").Running("containerd://burstapp").Obj()
	r.podDir = l.PodDir(pod)
	var err error
	if r.dir, err = l.ContainerDir(r.podDir, "containerd://burstapp"); err != nil {
		t.Fatal(err)
	}
	box.Mkdir(r.dir)
	for _, d := range []string{r.podDir, r.dir} { // the kubelet's part
		if err := r.fs.SetCPUQuota(d, r.limit); err != nil {
			t.Fatal(err)
		}
	}
	// The machine is shared: the largest weight for the sandbox, so that the quota alone throttles the workload.
	if err := r.fs.SetCPUShares(box.Parent, cgroup.MaxShares); err != nil {
		t.Fatal(err)
	}
	store := statesinformer.NewStore()
	store.SetNode(tu.Node("node-1").Capacity("cpu", "2").Allocatable("cpu", "2").Obj())
	store.SetPod(pod)
	r.store, r.pod = store, pod
	clk := clock.RealClock{}
	if r.cache, err = metriccache.New(metriccache.DefaultConfig(), clk); err != nil {
		t.Fatal(err)
	}
	// The collector's part: the share pool falls back to the topology where the kubepods cpuset cannot be read (a
	// v2 kernel without the cpuset controller).
	top, err := topology.Read("/sys")
	if err != nil {
		t.Fatal(err)
	}
	r.cache.SetInfo(metriccache.InfoNodeTopology, top)
	exe, err := executor.New(r.fs, clk, prometheus.NewRegistry(), executor.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	r.exec = exe
	if r.p, err = New(qosmanager.Deps{States: store, Cache: r.cache, Executor: exe, Cgroups: r.fs, Layout: l, Clock: clk, Interval: DefaultInterval}); err != nil {
		t.Fatal(err)
	}
	t.Setenv(burstEnv, "1")
	box.Start(r.dir, os.Args[0], "-test.run=^TestBursterProcess$")
	return r
}

func (r *realBurst) run(spec *slov1alpha1.NodeSLOSpec) {
	r.t.Helper()
	if err := r.p.Run(context.Background(), spec); err != nil {
		r.t.Fatal(err)
	}
}

// measure is the container's throttling over 4 s, after 0.5 s to settle.
func (r *realBurst) measure() cgroup.CPUStat {
	r.t.Helper()
	time.Sleep(500 * time.Millisecond)
	before, err := r.fs.CPUStat(r.dir)
	if err != nil {
		r.t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	after, err := r.fs.CPUStat(r.dir)
	if err != nil {
		r.t.Fatal(err)
	}
	return cgroup.CPUStat{Periods: after.Periods - before.Periods, ThrottledPeriods: after.ThrottledPeriods - before.ThrottledPeriods,
		ThrottledTime: after.ThrottledTime - before.ThrottledTime}
}

func (r *realBurst) quotas() (container, pod time.Duration) {
	r.t.Helper()
	c, err1 := r.fs.CPUQuota(r.dir)
	p, err2 := r.fs.CPUQuota(r.podDir)
	if err1 != nil || err2 != nil {
		r.t.Fatal(err1, err2)
	}
	return c.Quota, p.Quota
}

// TestRealKernelBurst runs the plugin on this machine's kernel (cgroup v1) with a container of limit 500m whose
// process works 80 ms at a time: with cpuBurstOnly the kernel takes cpu.cfs_burst_us (clamped to the 50 ms quota)
// on the container and its pod, and the process is throttled in far fewer periods than with burst 0, measured in
// one run. Not in the v2 test kernel, whose CPUs are emulated (and, in the user-mode kernel used before, charged
// CPU time by whole ticks: a workload that sleeps most of the time read as throttled in nearly every period with and
// without burst); there TestRealKernelQuotaBurst, TestRealKernelResizeDown and the executor's
// TestRealKernelQuotaWithBurst prove cpu.max.burst's writes.
func TestRealKernelBurst(t *testing.T) {
	if k := os.Getenv(cgrouptest.KernelEnv); k != "" {
		t.Skipf("the test kernel %q runs on emulated CPUs: burst's effect on throttling is measured on a real CPU only", k)
	}
	r := startRealBurst(t)
	// The machine is shared (CI runs the real-kernel tests of other packages at the same time): when the workload
	// could not even reach its quota without burst, there is nothing to compare, and the pair is measured again.
	const attempts = 3
	for attempt := 1; ; attempt++ {
		r.run(strategy(slov1alpha1.CPUBurstNone))
		without := r.measure()
		r.run(strategy(slov1alpha1.CPUBurstOnly))
		for _, d := range []string{r.podDir, r.dir} {
			if b, err := r.fs.CPUBurst(d); err != nil || b != r.limit.Quota {
				t.Fatalf("cpu.cfs_burst_us of %s is %v (%v), want the quota %v (cpuBurstPercent 1000 clamped)", d, b, err, r.limit.Quota)
			}
		}
		with := r.measure()
		t.Logf("workload %v of CPU every %v to %v under a 500m limit, 4 s each: burst 0: %d of %d periods throttled, %v throttled; "+
			"burst 50ms: %d of %d periods throttled, %v throttled", burstWork, burstWork+burstIdle, burstWork+burstIdle+burstJitter,
			without.ThrottledPeriods, without.Periods, without.ThrottledTime.Round(time.Millisecond),
			with.ThrottledPeriods, with.Periods, with.ThrottledTime.Round(time.Millisecond))
		if without.ThrottledPeriods < 5 {
			if attempt < attempts {
				continue
			}
			t.Fatalf("without burst the workload was throttled in %d periods in each of %d attempts: it did not reach its quota (the machine is too busy), nothing to compare", without.ThrottledPeriods, attempts)
		}
		if with.ThrottledPeriods*2 > without.ThrottledPeriods || with.ThrottledTime*2 > without.ThrottledTime {
			t.Errorf("with burst: %+v, without: %+v; want at most half the throttled periods and time", with, without)
		}
		return
	}
}

// TestRealKernelQuotaBurst: cfsQuotaBurstOnly raises the throttled container's quota and its pod's, the kernel
// taking the executor's order (parents first on v1), and policy none puts the kubelet's quota back.
func TestRealKernelQuotaBurst(t *testing.T) {
	r := startRealBurst(t)
	for range 4 {
		// The share pool idle: a sample of the node's usage as the collectors would give it.
		r.cache.Append(time.Now(), metriccache.Sample{Key: metriccache.NodeKey(metriccache.NodeCPUUsage), Value: 0.2})
		r.run(strategy(slov1alpha1.CFSQuotaBurstOnly))
		time.Sleep(time.Second)
	}
	if c, p := r.quotas(); c <= r.limit.Quota || p < c {
		t.Errorf("quota burst: container quota %v, pod %v; want the container's raised above %v and the pod's at least as high", c, p, r.limit.Quota)
	}
	r.run(strategy(slov1alpha1.CPUBurstNone))
	if c, p := r.quotas(); c != r.limit.Quota || p != r.limit.Quota {
		t.Errorf("policy none: quotas container %v, pod %v, want the kubelet's %v", c, p, r.limit.Quota)
	}
}

// TestRealKernelResizeDown: with cpuBurstOnly the burst equals the quota (cpuBurstPercent 1000 clamped); a resize
// down is then refused by the kernel (EINVAL: burst above quota) until the plugin's next run, which lowers the burst
// to the spec's new quota without writing a quota itself; the kubelet's write then goes through.
func TestRealKernelResizeDown(t *testing.T) {
	r := startRealBurst(t)
	r.run(strategy(slov1alpha1.CPUBurstOnly))
	down := cgroup.CPUQuota{Quota: 25 * time.Millisecond, Period: cgroup.CFSPeriod}
	if err := r.fs.SetCPUQuota(r.dir, down); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("the kubelet's quota %v under a burst of %v: %v, want EINVAL (the kernel's rule burst <= quota)", down.Quota, r.limit.Quota, err)
	}
	r.store.SetPod(resized(r.pod, "app", "250m", "500m")) // asked, not applied (the kubelet's write was refused)
	n := len(r.exec.Audit())
	r.run(strategy(slov1alpha1.CPUBurstOnly))
	if w := quotaWrites(r.exec.Audit()[n:]); len(w) != 0 {
		t.Errorf("cpuBurstOnly wrote quotas %v", w)
	}
	for _, d := range []string{r.podDir, r.dir} {
		if b, err := r.fs.CPUBurst(d); err != nil || b != down.Quota {
			t.Errorf("burst of %s is %v (%v), want the spec's new quota %v", d, b, err, down.Quota)
		}
	}
	if c, p := r.quotas(); c != r.limit.Quota || p != r.limit.Quota {
		t.Errorf("quotas container %v, pod %v, want the kubelet's %v: the plugin writes none", c, p, r.limit.Quota)
	}
	for _, d := range []string{r.dir, r.podDir} { // the kubelet's order for a decrease: containers, then the pod
		if err := r.fs.SetCPUQuota(d, down); err != nil {
			t.Errorf("the kubelet's quota %v of %s after the plugin's run: %v", down.Quota, d, err)
		}
	}
}
