package runtimehook

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/cgrouptest"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// On the real cgroup v1 kernel: a quota larger than the besteffort cgroup's is refused (why the hook fits its
// values), the reconciler's fitted values are taken, and once suppression lets go the pod gets its own 2 cores.
// Only files are written; no process runs.
func TestRealKernelFitsUnderTheBestEffortQuota(t *testing.T) {
	box := cgrouptest.New(t)
	l := box.Layout()
	pod := testutil.Pod("batch").Namespace("jobs").UID(batchUID).
		Container("main").Requests("kubernetes.io/batch-cpu", "2000", "kubernetes.io/batch-memory", "4Gi").Limits("kubernetes.io/batch-cpu", "2000", "kubernetes.io/batch-memory", "4Gi").
		Running("containerd://c1").Obj()
	podDir := l.PodDir(pod)
	ctrDir := podDir + "/c1"
	box.Mkdir(ctrDir)
	fs := cgroup.NewFS(cgrouptest.Root, cgroup.V1)
	qos := l.QoSDir(corev1.PodQOSBestEffort)
	period := 100 * time.Millisecond
	if err := fs.SetCPUQuota(qos, cgroup.CPUQuota{Quota: period, Period: period}); err != nil {
		t.Fatal(err)
	}
	if err := fs.SetCPUQuota(ctrDir, cgroup.CPUQuota{Quota: 2 * period, Period: period}); err == nil {
		t.Fatal("the kernel took a 2-core quota below a 1-core one; the premise of fitting is wrong")
	}

	store := statesinformer.NewStore()
	store.SetPod(pod)
	exec, err := executor.New(fs, clock.RealClock{}, prometheus.NewRegistry(), executor.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	d := Deps{States: store, Executor: exec, Cgroups: fs, Layout: l, CgroupVersion: cgroup.V1, Clock: clock.RealClock{}}
	st, err := NewStatus("reconciler", "", prometheus.NewRegistry(), d.Clock)
	if err != nil {
		t.Fatal(err)
	}
	r := NewReconciler(d, newRegistry(t, d), st, time.Second)
	expect := func(cores float64) {
		t.Helper()
		if err := r.Reconcile(context.Background()); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		for _, dir := range []string{podDir, ctrDir} {
			q, err := fs.CPUQuota(dir)
			if err != nil {
				t.Fatal(err)
			}
			shares, _ := fs.CPUShares(dir)
			mem, _ := fs.MemoryLimit(dir)
			if q.Cores() != cores || shares != 2048 || mem != 4<<30 {
				t.Errorf("%s: quota %v cores, shares %d, memory %d; want %v cores, 2048, 4 GiB", dir, q.Cores(), shares, mem, cores)
			}
		}
	}
	expect(1)
	if err := fs.SetCPUQuota(qos, cgroup.CPUQuota{Quota: -1, Period: period}); err != nil {
		t.Fatal(err)
	}
	expect(2)
}
