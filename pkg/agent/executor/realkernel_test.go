package executor

import (
	"context"
	"os"
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

// applyAndCheck applies each step's batch and checks that every value landed.
func applyAndCheck(t *testing.T, e *Executor, rw *cgroup.FS, steps []realStep) {
	t.Helper()
	for _, s := range steps {
		if err := e.Apply(context.Background(), "test", s.updates...); err != nil {
			t.Fatalf("%s: %v", s.name, err)
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
		{"child limited to 0.8 cores", []Update{{Dir: pod, Value: quota(0.8)}}},
		{"parent to 0.5 and child to 0.3, parent listed first", []Update{{Dir: qos, Value: quota(0.5)}, {Dir: pod, Value: quota(0.3)}}},
		{"both unlimited again, child listed first", []Update{{Dir: pod, Value: quota(-1)}, {Dir: qos, Value: quota(-1)}}},
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
			realStep{"both on the first CPU", []Update{{Dir: pod, Value: cpus(first)}, {Dir: qos, Value: cpus(first)}}},
			realStep{"both moved to the second CPU", []Update{{Dir: qos, Value: cpus(second)}, {Dir: pod, Value: cpus(second)}}})
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
		{"quota 0.8 with a 30 ms burst", []Update{{Dir: pod, Value: quota(0.8)}, {Dir: pod, Value: burst(30 * time.Millisecond)}}},
		{"quota to 0.2 and burst to 10 ms, quota listed first", []Update{{Dir: pod, Value: quota(0.2)}, {Dir: pod, Value: burst(10 * time.Millisecond)}}},
		{"burst to 60 ms and quota to 0.8, burst listed first", []Update{{Dir: pod, Value: burst(60 * time.Millisecond)}, {Dir: pod, Value: quota(0.8)}}},
	})
}
