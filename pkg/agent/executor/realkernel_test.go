package executor

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/cgrouptest"
)

// TestRealKernelOrderAndDrift hands the executor batches in the order the kernel refuses (a parent quota below
// its child's, a cpuset moved sideways under a parent that holds only the old CPUs) on a real cgroup v1 hierarchy,
// and checks that every write lands; then changes a value behind its back and checks one resync restores it.
func TestRealKernelOrderAndDrift(t *testing.T) {
	box := cgrouptest.New(t)
	qos := box.Layout().QoSDir(corev1.PodQOSBestEffort)
	pod := qos + "/podreal"
	box.Mkdir(pod)
	rw := cgroup.NewFS(cgrouptest.Root, cgroup.V1)
	e, _, _, _ := newExecutor(t, cgrouptest.Root, DefaultOptions())
	e.targets.cgroup = rw // the real files, no simulated rules: the kernel's own
	ctx := context.Background()
	online, err := rw.CPUSet(box.Parent)
	if err != nil {
		t.Fatal(err)
	}
	if online.Size() < 2 {
		t.Fatalf("the sandbox has CPUs %s; this test needs two", online)
	}
	first, second := online.List()[0], online.List()[1]

	steps := []struct {
		name    string
		updates []Update
	}{
		{"child limited to 0.8 cores", []Update{{Dir: pod, Value: quota(0.8)}}},
		{"parent to 0.5 and child to 0.3, parent listed first", []Update{{Dir: qos, Value: quota(0.5)}, {Dir: pod, Value: quota(0.3)}}},
		{"both unlimited again, child listed first", []Update{{Dir: pod, Value: quota(-1)}, {Dir: qos, Value: quota(-1)}}},
		{"both on the first CPU", []Update{{Dir: pod, Value: cpus(first)}, {Dir: qos, Value: cpus(first)}}},
		{"both moved to the second CPU", []Update{{Dir: qos, Value: cpus(second)}, {Dir: pod, Value: cpus(second)}}},
	}
	for _, s := range steps {
		if err := e.Apply(ctx, "test", s.updates...); err != nil {
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

	if err := e.Apply(ctx, "test", Update{Dir: pod, Value: quota(0.2)}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(cgrouptest.Root, "cpu", pod, "cpu.cfs_quota_us")
	if err := os.WriteFile(file, []byte("-1"), 0); err != nil {
		t.Fatal(err)
	}
	if err := e.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if q, _ := rw.CPUQuota(pod); q.Cores() != 0.2 {
		t.Errorf("after a resync the quota changed behind the executor's back is %v cores, want 0.2", q.Cores())
	}
	// Leave the sandbox's cpusets wide again so it can be removed whatever the order.
	_ = e.Apply(ctx, "test", Update{Dir: qos, Value: NewCPUSet(online)}, Update{Dir: pod, Value: NewCPUSet(online)})
}
