package runtimehook

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/cgrouptest"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// On the real kernel: a quota larger than the besteffort cgroup's is refused on cgroup v1 (why the hook fits its
// values) and taken but capped on v2, where the reconciler writes the pod's own 2 cores at once; on v1 its fitted
// values are taken, and once suppression lets go the pod gets its own 2 cores. v2 keeps cpu.weight, so the shares read back through the kubelet's conversion.
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
	fs := box.FS()
	qos := l.QoSDir(corev1.PodQOSBestEffort)
	period := 100 * time.Millisecond
	if err := fs.SetCPUQuota(qos, cgroup.CPUQuota{Quota: period, Period: period}); err != nil {
		t.Fatal(err)
	}
	err := fs.SetCPUQuota(ctrDir, cgroup.CPUQuota{Quota: 2 * period, Period: period})
	switch {
	case box.Version == cgroup.V1 && err == nil:
		t.Fatal("the v1 kernel took a 2-core quota below a 1-core one; the premise of fitting is wrong")
	case box.Version == cgroup.V2 && err != nil:
		t.Fatalf("the v2 kernel refused a 2-core quota below a 1-core one (it caps it): %v", err)
	}
	wantShares := uint64(2048)
	if box.Version == cgroup.V2 {
		wantShares = cgroup.WeightToShares(cgroup.SharesToWeight(2048))
	}

	store := statesinformer.NewStore()
	store.SetPod(pod)
	exec, err := executor.New(fs, clock.RealClock{}, prometheus.NewRegistry(), executor.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	d := Deps{States: store, Executor: exec, Cgroups: fs, Layout: l, CgroupVersion: box.Version, Clock: clock.RealClock{}}
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
			if q.Cores() != cores || shares != wantShares || mem != 4<<30 {
				t.Errorf("%s: quota %v cores, shares %d, memory %d; want %v cores, %d, 4 GiB", dir, q.Cores(), shares, mem, cores, wantShares)
			}
		}
	}
	if box.Version == cgroup.V1 {
		expect(1)
	} else {
		expect(2) // v2 caps the pod under its parent itself: nothing is fitted
	}
	if err := fs.SetCPUQuota(qos, cgroup.CPUQuota{Quota: -1, Period: period}); err != nil {
		t.Fatal(err)
	}
	expect(2)
}

// On the real cgroup v1 kernel, a failed start seen in review: CPU suppression lowers the besteffort quota (and the
// pod cgroup's, children first) after the hook answered CreateContainer and before runc creates the container's
// cgroup. runc's writes of the adjustment must be accepted — before, runc wrote the quota fitted to the old limit and
// the kernel refused it — and the container's own quota arrives at StartContainer, fitted to the lowered one, with
// the container's first process waiting in its cgroup as runc's init does. When suppression lets go, the reconciler
// gives the pod and its running container their 2 cores.
func TestRealKernelContainerStartsWhileSuppressionTightens(t *testing.T) {
	box := cgrouptest.New(t)
	box.Only(cgroup.V1, "the quota is written at StartContainer on v1 only; v2 caps a child at its ancestors (TestQuotaGoesToTheRuntimeOnV2)")
	l := box.Layout()
	pod := testutil.Pod("batch").Namespace("jobs").UID(batchUID).
		Container("main").Requests("kubernetes.io/batch-cpu", "2000", "kubernetes.io/batch-memory", "4Gi").Limits("kubernetes.io/batch-cpu", "2000", "kubernetes.io/batch-memory", "4Gi").Obj()
	podDir := l.PodDir(pod)
	box.Mkdir(podDir) // the kubelet makes the pod cgroup before the sandbox
	fs := box.FS()
	qos := l.QoSDir(corev1.PodQOSBestEffort)
	period := 100 * time.Millisecond
	if err := fs.SetCPUQuota(qos, cgroup.CPUQuota{Quota: 150 * time.Millisecond, Period: period}); err != nil {
		t.Fatal(err)
	}

	store := statesinformer.NewStore()
	store.SetPod(pod)
	exec, err := executor.New(fs, clock.RealClock{}, prometheus.NewRegistry(), executor.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	d := Deps{States: store, Executor: exec, Cgroups: fs, Layout: l, CgroupVersion: cgroup.V1, Clock: clock.RealClock{}}
	st, err := NewStatus("nri", "", prometheus.NewRegistry(), d.Clock)
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, d)
	h := &handler{p: NewNRI(d, reg, st, NRIOptions{PodWait: time.Second})}
	ctx := context.Background()
	if _, err := h.Configure(ctx, "", "containerd", "v2.4.2"); err != nil {
		t.Fatal(err)
	}
	sb := sandbox(pod)
	ctr := container(sb, "c1", "main", "")
	if err := h.RunPodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	adjust, _, err := h.CreateContainer(ctx, sb, ctr)
	if err != nil {
		t.Fatal(err)
	}

	// CPU suppression tightens to 200.01 millicores, as it writes it: children first.
	lowered := executor.CPUQuota{Quota: 20001 * time.Microsecond, Period: period}
	if err := exec.Apply(ctx, "cpusuppress", executor.Update{Dir: podDir, Value: lowered}, executor.Update{Dir: qos, Value: lowered}); err != nil {
		t.Fatalf("suppression could not tighten: %v", err)
	}

	// runc creates the container's cgroup and writes the adjustment, period before quota.
	ctrDir := podDir + "/c1"
	box.Mkdir(ctrDir)
	if err := runcCreate(fs, ctrDir, adjust.GetLinux().GetResources()); err != nil {
		t.Fatalf("runc create failed, as the kubelet reported it (RunContainerError): %v", err)
	}
	box.Start(ctrDir, "sleep", "300") // runc's init, waiting for the start

	if err := h.StartContainer(ctx, sb, ctr); err != nil {
		t.Fatal(err)
	}
	if q, err := fs.CPUQuota(ctrDir); err != nil || q != cgroup.CPUQuota(lowered) {
		t.Errorf("container quota after StartContainer = %v (%v), want %v", q, err, lowered)
	}
	if got := answered(st, EventStartContainer, ResultAdjusted); got != 1 {
		t.Errorf("StartContainer answered adjusted %d times, want 1", got)
	}

	// Suppression lets go; the reconciler raises the pod and its running container to 2 cores.
	if err := exec.Apply(ctx, "cpusuppress", executor.Update{Dir: qos, Value: executor.CPUQuota{Quota: -1, Period: period}}); err != nil {
		t.Fatal(err)
	}
	running := pod.DeepCopy()
	running.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", ContainerID: "containerd://c1", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	store.SetPod(running)
	if err := NewReconciler(d, reg, st, time.Second).Reconcile(ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	for _, dir := range []string{podDir, ctrDir} {
		if q, err := fs.CPUQuota(dir); err != nil || q.Cores() != 2 {
			t.Errorf("%s quota after suppression let go = %v (%v), want 2 cores", dir, q, err)
		}
	}
}

// runcCreate writes res into the new cgroup dir as runc does when it creates a container on cgroup v1: shares,
// memory limit, then the CFS period before the quota.
func runcCreate(fs *cgroup.FS, dir string, res *api.LinuxResources) error {
	if s := res.GetCpu().GetShares(); s != nil {
		if err := fs.SetCPUShares(dir, s.GetValue()); err != nil {
			return err
		}
	}
	if m := res.GetMemory().GetLimit(); m != nil {
		if err := fs.SetMemoryLimit(dir, m.GetValue()); err != nil {
			return err
		}
	}
	if q := res.GetCpu().GetQuota(); q != nil && q.GetValue() != 0 {
		quota := cgroup.CPUQuota{Quota: time.Duration(q.GetValue()) * time.Microsecond, Period: time.Duration(res.GetCpu().GetPeriod().GetValue()) * time.Microsecond}
		if err := fs.SetCPUQuota(dir, quota); err != nil {
			return fmt.Errorf("writing quota %v: %w", quota, err)
		}
	}
	return nil
}
