package cpusuppress

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/proc"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/topology"
	"github.com/gleaner-sh/gleaner/test/cgrouptest"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

const burn = "while :; do :; done"

// TestRealKernelSuppression runs the plugin under the QoS manager, on its real clock and interval, against this
// machine's /proc/stat and a private kubepods hierarchy (cgroup v1) holding a best-effort pod with two real CPU
// burners:
//
//  1. cfsQuota with threshold = min = 25 %: the limit is 0.5 cores whatever else the machine runs; the burners'
//     measured usage must follow (0.5 within 0.1 over 2 s);
//  2. a service pod starts burning a CPU, threshold 100 %, min 0: non-BE rises by a core, so the limit must fall
//     to at most about one core (2 CPUs - 1), and the best-effort usage with it; the reaction time is logged;
//  3. cpuset: this machine has two CPUs, so the policy's minimum of two would be all of them; the test lowers the
//     minimum to one: the burners must be pinned to one CPU (their Cpus_allowed_list) and use at most one core;
//  4. off: the quota and the cpuset are given back.
func TestRealKernelSuppression(t *testing.T) {
	if os.Getenv("CI") == "true" {
		if v, err := cgroup.DetectVersion(cgrouptest.Root); os.Geteuid() != 0 || err != nil || v != cgroup.V1 {
			t.Fatalf("CI: this test needs root and cgroup v1 at %s (euid %d, %v, %v)", cgrouptest.Root, os.Geteuid(), v, err)
		}
	}
	box := cgrouptest.New(t)
	l := box.Layout()
	be := tu.Pod("batch").UID("5a1e0000-0000-4000-8000-0000000000be").Label(slov1alpha1.LabelQoSClass, "BE").Container("c").Obj()
	svc := tu.Pod("web").UID("5a1e0000-0000-4000-8000-000000000001").Container("c").Requests("cpu", "1").Obj()
	for _, p := range []*corev1.Pod{be, svc} {
		box.Mkdir(l.PodDir(p))
	}
	fs := cgroup.NewFS(cgrouptest.Root, cgroup.V1)
	// The machine is shared: the largest weight for the sandbox, so that the limits alone decide what it gets.
	if err := fs.SetCPUShares(box.Parent, cgroup.MaxShares); err != nil {
		t.Fatal(err)
	}
	top, err := topology.Read("/sys")
	if err != nil {
		t.Fatal(err)
	}
	if top.NumCPUs() < 2 {
		t.Fatalf("this test needs two CPUs, the machine has %d", top.NumCPUs())
	}
	clk := clock.RealClock{}
	cache, err := metriccache.New(metriccache.DefaultConfig(), clk)
	if err != nil {
		t.Fatal(err)
	}
	cache.SetInfo(metriccache.InfoNodeTopology, top)
	exe, err := executor.New(fs, clk, prometheus.NewRegistry(), executor.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	pr, err := proc.New("/proc")
	if err != nil {
		t.Fatal(err)
	}
	store := statesinformer.NewStore()
	n := fmt.Sprint(top.NumCPUs())
	store.SetNode(tu.Node("node-1").Capacity("cpu", n).Allocatable("cpu", n).Obj())
	store.SetPod(be)
	store.SetPod(svc)
	d := qosmanager.Deps{States: store, Cache: cache, Executor: exe, Cgroups: fs, Layout: l, Proc: pr, Clock: clk, Interval: DefaultInterval}
	p, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	plugin := p.(*Plugin)
	plugin.minCPUs = 1
	m, err := qosmanager.NewManager(d, clk, []qosmanager.Factory{{Name: Name, Interval: DefaultInterval, Default: true,
		New: func(qosmanager.Deps) (qosmanager.RunPlugin, error) { return p, nil }}}, []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	setSLO := func(policy slov1alpha1.CPUSuppressPolicy, threshold, minPercent int64, on bool) {
		store.SetNodeSLO(&slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
			Enable: ptr.To(on), CPUSuppressPolicy: policy, CPUSuppressThresholdPercent: ptr.To(threshold), CPUSuppressMinPercent: ptr.To(minPercent),
		}}})
	}
	setSLO(slov1alpha1.CPUSuppressCFSQuota, 25, 25, true)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = m.Start(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	qos := l.QoSDir(corev1.PodQOSBestEffort)
	burners := []*exec.Cmd{box.Start(l.PodDir(be), "/bin/sh", "-c", burn), box.Start(l.PodDir(be), "/bin/sh", "-c", burn)}
	quota := func() float64 { q, _ := fs.CPUQuota(qos); return q.Cores() }
	waitFor := func(what string, cond func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for time.Since(start) < 5*time.Second {
			if cond() {
				return time.Since(start)
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("%s: not within 5 s", what)
		return 0
	}
	usage := func() float64 {
		t.Helper()
		u0, err := fs.CPUUsage(qos)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		time.Sleep(2 * time.Second)
		u1, _ := fs.CPUUsage(qos)
		return (u1 - u0).Seconds() / time.Since(t0).Seconds()
	}

	// 1. 25 % of 2 CPUs, and the floor at the same 25 %: 0.5 cores.
	waitFor("quota 0.5", func() bool { return quota() == 0.5 })
	if u := usage(); u < 0.4 || u > 0.6 {
		t.Errorf("under a 0.5-core quota the best-effort burners used %.3f cores, want 0.5 within 0.1", u)
	}

	// 2. A service burns a CPU: 2 x 100 % - non-BE (at least that core) - 0 leaves at most about one core.
	// The other work on this shared machine counts as non-BE too, so how far the limit loosens first is not
	// known; the reaction time is reported only when it had loosened past the mark.
	setSLO(slov1alpha1.CPUSuppressCFSQuota, 100, 0, true)
	time.Sleep(4 * time.Second) // loosening from 0.5 by 10 % of 2 CPUs a second
	before := quota()
	service := box.Start(l.PodDir(svc), "/bin/sh", "-c", burn)
	took := waitFor("quota at most 1.05 cores after the service's spike", func() bool { q := quota(); return q >= 0 && q <= 1.05 })
	if before <= 1.05 {
		t.Logf("the quota had loosened only to %.2f cores before the service started: the machine's other work used the rest", before)
	} else {
		t.Logf("reaction: the best-effort quota went from %.2f to %.2f cores %s after the service started burning", before, quota(), took.Round(time.Millisecond))
	}
	if u := usage(); u > 1.1 {
		t.Errorf("with a service burning a CPU the best-effort burners used %.3f cores, want at most about 1", u)
	}
	box.Stop(service)

	// 3. cpuset, one CPU (threshold = min = 25 %: 0.5 cores, at least 1 CPU): the highest one.
	setSLO(slov1alpha1.CPUSuppressCPUSet, 25, 25, true)
	last := fmt.Sprint(top.CPUSet().List()[top.NumCPUs()-1])
	waitFor("the quota lifted", func() bool { return quota() == -1 })
	waitFor("cpuset "+last, func() bool { s, _ := fs.CPUSet(qos); return s.String() == last })
	for _, b := range burners {
		if got := allowedCPUs(t, b.Process.Pid); got != last {
			t.Errorf("burner %d may run on CPUs %s, want %s", b.Process.Pid, got, last)
		}
	}
	if u := usage(); u > 1.1 {
		t.Errorf("pinned to one CPU the best-effort burners used %.3f cores, want at most 1", u)
	}

	// 4. Off: every CPU and no quota.
	setSLO(slov1alpha1.CPUSuppressCPUSet, 25, 25, false)
	all := top.CPUSet().String()
	waitFor("cpuset "+all, func() bool { s, _ := fs.CPUSet(qos); return s.String() == all })
	if q := quota(); q != -1 {
		t.Errorf("off: quota %v, want unlimited", q)
	}
	for _, b := range burners {
		if got := allowedCPUs(t, b.Process.Pid); got != all {
			t.Errorf("off: burner %d may run on CPUs %s, want %s", b.Process.Pid, got, all)
		}
	}
}

// allowedCPUs is the Cpus_allowed_list of a process: the kernel's own word on where it may run.
func allowedCPUs(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no Cpus_allowed_list in /proc/%d/status", pid)
	return ""
}
