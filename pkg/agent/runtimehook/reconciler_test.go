package runtimehook

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// A round gives a batch pod's cgroup and its running containers' (sidecar included) their values through the
// executor, under the reconciler's name, and leaves other pods and containers that are not running alone.
func TestReconcilerWritesBatchPods(t *testing.T) {
	batch := testutil.Pod("batch").Namespace("jobs").UID(batchUID).
		InitContainer("proxy", true).Requests("kubernetes.io/batch-cpu", "500").Limits("kubernetes.io/batch-cpu", "500").Running("containerd://c-proxy").
		Container("main").Requests("kubernetes.io/batch-cpu", "2000", "kubernetes.io/batch-memory", "4Gi").Limits("kubernetes.io/batch-cpu", "2000", "kubernetes.io/batch-memory", "4Gi").Running("containerd://c-main").
		Container("waiting").Requests("kubernetes.io/batch-cpu", "1000").Limits("kubernetes.io/batch-cpu", "1000").Obj()
	ls := lsPod()
	ls.Status.ContainerStatuses = testutil.Pod("x").Container("main").Running("containerd://c-ls").Obj().Status.ContainerStatuses
	clk := clocktesting.NewFakeClock(time.Now())
	f := newFixture(t, clk, batch, ls)
	for _, d := range []string{batchDir + "/c-proxy", batchDir + "/c-main", batchDir + "/c-waiting", lsDir + "/c-ls"} {
		f.addCgroup(t, d)
	}
	st := f.status(t, ModeReconciler)
	r := NewReconciler(f.deps, f.registry(t), st, 10*time.Second)
	if err := r.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Pod: shares from 2500m (sidecar + app; the waiting container is in the spec), quota 350 ms (all declare a
	// limit), memory unlimited (the sidecar declares none).
	for dir, want := range map[string]cgroupFiles{
		batchDir:                {Shares: "3584", Quota: "350000", Period: "100000", Memory: unlimitedMemory},
		batchDir + "/c-proxy":   {Shares: "512", Quota: "50000", Period: "100000", Memory: unlimitedMemory},
		batchDir + "/c-main":    {Shares: "2048", Quota: "200000", Period: "100000", Memory: itoa(4 << 30)},
		batchDir + "/c-waiting": kubeletBestEffort,
		lsDir:                   kubeletBestEffort,
		lsDir + "/c-ls":         kubeletBestEffort,
	} {
		if diff := cmp.Diff(want, readFiles(t, f.root, dir)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", dir, diff)
		}
	}
	// Every running container's process gets its class's oom_score_adj: the batch pod's 1000, the service's (256Mi
	// of 8Gi, 969 from the kubelet) 323; the container that is not running keeps what it had.
	for dir, want := range map[string]string{batchDir + "/c-proxy": "1000", batchDir + "/c-main": "1000", batchDir + "/c-waiting": "0", lsDir + "/c-ls": "323"} {
		if got := f.oomScore(t, dir); got != want {
			t.Errorf("oom_score_adj in %s = %s, want %s", dir, got, want)
		}
	}
	owners := map[string]bool{}
	for _, rec := range f.deps.Executor.Audit() {
		owners[rec.Owner] = true
		if rec.Result != executor.ResultWritten {
			t.Errorf("write %+v did not succeed", rec)
		}
	}
	if diff := cmp.Diff(map[string]bool{OwnerReconciler: true}, owners); diff != "" {
		t.Errorf("audit owners (-want +got):\n%s", diff)
	}
	if got := st.Info().ReconciledPods; got != 2 {
		t.Errorf("reconciled pods = %d, want 2 (the batch pod, and the service for its OOM score)", got)
	}
}

// Start reconciles at once and then every interval: a batch pod that started while no NRI plugin was connected gets
// its values at the next tick.
func TestReconcilerRunsAtStartAndEveryInterval(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	first := batchPod()
	first.Status.ContainerStatuses = testutil.Pod("x").Container("main").Running("containerd://c1").Obj().Status.ContainerStatuses
	f := newFixture(t, clk, first)
	f.addCgroup(t, batchDir+"/c1")
	st := f.status(t, ModeNRI)
	r := NewReconciler(f.deps, f.registry(t), st, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	waitFor(t, "the first round", func() bool { return readFile(t, f.root, "cpu/cpu.shares", batchDir+"/c1") == "2048" })

	second := batchPod()
	second.Name, second.UID = "second", "66666666-6666-6666-6666-666666666666"
	second.Status.ContainerStatuses = testutil.Pod("x").Container("main").Running("containerd://c2").Obj().Status.ContainerStatuses
	dir := "kubepods/besteffort/pod" + string(second.UID)
	f.addCgroup(t, dir)
	f.addCgroup(t, dir+"/c2")
	f.store.SetPod(second)
	if got := readFile(t, f.root, "cpu/cpu.shares", dir+"/c2"); got != "2" {
		t.Fatalf("the second pod's container has shares %s before the tick", got)
	}
	waitFor(t, "the ticker to be waited on", func() bool { return clk.HasWaiters() })
	clk.Step(10 * time.Second)
	waitFor(t, "the round after the tick", func() bool {
		return readFile(t, f.root, "cpu/cpu.cfs_quota_us", dir+"/c2") == "200000" && readFile(t, f.root, "cpu/cpu.cfs_quota_us", dir) == "200000"
	})
	if got := st.Info().ReconciledPods; got != 2 {
		t.Errorf("reconciled pods = %d, want 2", got)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
