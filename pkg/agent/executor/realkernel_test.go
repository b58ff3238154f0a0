package executor

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/cgrouptest"
)

// realExecutor is an executor writing the sandbox's real files, with the kernel's own rules and none simulated.
func realExecutor(t *testing.T, box *cgrouptest.Sandbox) (*Executor, *cgroup.FS) {
	t.Helper()
	rw := box.FS()
	e, _, _, _ := newExecutor(t, cgrouptest.Root, DefaultOptions())
	e.targets.cgroup = rw
	return e, rw
}

// applyAndCheck applies each step's batch and checks that every value landed, and, where the step says, that the
// writes went in its order (from the audit trail: for an order the kernel accepts either way but that leaves a
// cgroup less protected in between).
func applyAndCheck(t *testing.T, e *Executor, rw *cgroup.FS, steps []realStep) {
	t.Helper()
	for _, s := range steps {
		before := len(e.Audit())
		if err := e.Apply(context.Background(), "test", s.updates...); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if s.order != nil {
			var got []string
			for _, r := range e.Audit()[before:] {
				got = append(got, r.Dir)
			}
			if !slices.Equal(got, s.order) {
				t.Errorf("%s: written in the order %v, want %v", s.name, got, s.order)
			}
		}
		for _, u := range s.updates {
			got, err := u.Value.read(targets{cgroup: rw}, u.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != u.Value.String() {
				t.Errorf("%s: %s of %s = %s, want %s", s.name, u.Value.Resource(), u.Dir, got, u.Value)
			}
		}
	}
}

type realStep struct {
	name    string
	updates []Update
	order   []string // the cgroups in the order they must be written; nil: any order
}

// TestRealKernelOrderAndDrift hands the executor batches in the order the kernel refuses (a parent quota below
// its child's, refused by cgroup v1 and capped by v2; a cpuset moved sideways under a parent that holds only the old
// CPUs, where the kernel has the cpuset controller) on a real cgroup hierarchy, and checks that every write lands;
// then changes a value behind its back and checks one resync restores it.
func TestRealKernelOrderAndDrift(t *testing.T) {
	box := cgrouptest.New(t)
	qos := box.Layout().QoSDir(corev1.PodQOSBestEffort)
	pod := qos + "/podreal"
	box.Mkdir(pod)
	e, rw := realExecutor(t, box)
	ctx := context.Background()

	steps := []realStep{
		{"child limited to 0.8 cores", []Update{{Dir: pod, Value: quota(0.8)}}, nil},
		{"parent to 0.5 and child to 0.3, parent listed first", []Update{{Dir: qos, Value: quota(0.5)}, {Dir: pod, Value: quota(0.3)}}, []string{pod, qos}},
		{"both unlimited again, child listed first", []Update{{Dir: pod, Value: quota(-1)}, {Dir: qos, Value: quota(-1)}}, []string{qos, pod}},
	}
	if box.Has("cpuset") {
		online, err := rw.CPUSet(box.Parent)
		if err != nil {
			t.Fatal(err)
		}
		if online.Size() < 2 {
			t.Fatalf("the sandbox has CPUs %s; this test needs two", online)
		}
		first, second := online.List()[0], online.List()[1]
		steps = append(steps,
			realStep{"both on the first CPU", []Update{{Dir: pod, Value: cpus(first)}, {Dir: qos, Value: cpus(first)}}, nil},
			realStep{"both moved to the second CPU", []Update{{Dir: qos, Value: cpus(second)}, {Dir: pod, Value: cpus(second)}}, nil})
		// Leave the sandbox's cpusets wide again so it can be removed whatever the order.
		defer func() {
			_ = e.Apply(ctx, "test", Update{Dir: qos, Value: NewCPUSet(online)}, Update{Dir: pod, Value: NewCPUSet(online)})
		}()
	} else {
		t.Logf("the kernel has no cpuset controller: the cpuset steps are left out")
	}
	applyAndCheck(t, e, rw, steps)

	if err := e.Apply(ctx, "test", Update{Dir: pod, Value: quota(0.2)}); err != nil {
		t.Fatal(err)
	}
	// The quota removed behind the executor's back, in the version's own file.
	file, unlimited := box.Path("cpu", pod)+"/cpu.cfs_quota_us", "-1"
	if box.Version == cgroup.V2 {
		file, unlimited = box.Path("cpu", pod)+"/cpu.max", "max 100000"
	}
	if err := os.WriteFile(file, []byte(unlimited), 0); err != nil {
		t.Fatal(err)
	}
	if q, _ := rw.CPUQuota(pod); !q.Unlimited() {
		t.Fatalf("writing %q to %s left the quota at %v cores", unlimited, file, q.Cores())
	}
	if err := e.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if q, _ := rw.CPUQuota(pod); q.Cores() != 0.2 {
		t.Errorf("after a resync the quota changed behind the executor's back is %v cores, want 0.2", q.Cores())
	}
}

// TestRealKernelQuotaWithBurst hands the executor a cgroup's quota and burst together, in the order the kernel
// refuses: it takes no burst above the quota of the same cgroup (cpu.cfs_burst_us on v1, cpu.max.burst on v2), so a
// quota tightened below the current burst must wait for the burst to shrink, and a burst raised above the current
// quota for the quota to grow.
func TestRealKernelQuotaWithBurst(t *testing.T) {
	box := cgrouptest.New(t)
	pod := box.Layout().QoSDir(corev1.PodQOSBurstable) + "/podburst"
	box.Mkdir(pod)
	e, rw := realExecutor(t, box)
	if _, err := rw.CPUBurst(pod); err != nil {
		t.Skipf("this kernel has no CFS burst (5.14 and later): %v", err)
	}
	burst := func(d time.Duration) CPUBurst { return CPUBurst(d) }
	applyAndCheck(t, e, rw, []realStep{
		{"quota 0.8 with a 30 ms burst", []Update{{Dir: pod, Value: quota(0.8)}, {Dir: pod, Value: burst(30 * time.Millisecond)}}, nil},
		{"quota to 0.2 and burst to 10 ms, quota listed first", []Update{{Dir: pod, Value: quota(0.2)}, {Dir: pod, Value: burst(10 * time.Millisecond)}}, nil},
		{"burst to 60 ms and quota to 0.8, burst listed first", []Update{{Dir: pod, Value: burst(60 * time.Millisecond)}, {Dir: pod, Value: quota(0.8)}}, nil},
	})
}

// TestRealKernelMemoryProtectionOrder hands the executor memory.min, memory.low and memory.high of a pod and its QoS
// parent in the order that leaves the pod less protected than asked in between (the kernel accepts a child's
// protection above its parent's but caps what it gets by the parent's): more protection goes parents first, less
// children first, and every value lands. memory.min/low/high exist only on cgroup v2.
func TestRealKernelMemoryProtectionOrder(t *testing.T) {
	box := cgrouptest.New(t)
	box.Only(cgroup.V2, "memory QoS's files exist only on v2")
	box.Require("memory")
	qos := box.Layout().QoSDir(corev1.PodQOSBurstable)
	pod := qos + "/podprotected"
	box.Mkdir(pod)
	e, rw := realExecutor(t, box)
	const mb = 1 << 20
	var steps []realStep
	for _, v := range []struct {
		name string
		of   func(int64) Value
	}{
		{"memory.min", func(n int64) Value { return MemoryMin(n) }},
		{"memory.low", func(n int64) Value { return MemoryLow(n) }},
	} {
		steps = append(steps,
			realStep{v.name + " raised, pod listed first", []Update{{Dir: pod, Value: v.of(64 * mb)}, {Dir: qos, Value: v.of(128 * mb)}}, []string{qos, pod}},
			realStep{v.name + " lowered, parent listed first", []Update{{Dir: qos, Value: v.of(32 * mb)}, {Dir: pod, Value: v.of(16 * mb)}}, []string{pod, qos}})
	}
	steps = append(steps,
		realStep{"memory.high lowered, parent listed first", []Update{{Dir: qos, Value: MemoryHigh(512 * mb)}, {Dir: pod, Value: MemoryHigh(256 * mb)}}, []string{pod, qos}},
		realStep{"memory.high removed, pod listed first", []Update{{Dir: pod, Value: MemoryHigh(-1)}, {Dir: qos, Value: MemoryHigh(-1)}}, []string{qos, pod}})
	applyAndCheck(t, e, rw, steps)
}
