package runtimehook

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// CPU suppression holds the besteffort cgroup to 1 core: on cgroup v1 the kernel refuses a larger quota below it,
// so the batch pod asking for 2 cores gets 1 core, from the reconciler and at creation alike (a container that
// cannot be created would be worse than one held to what suppression leaves). The container's quota is written at
// StartContainer, not given to runc.
func TestQuotaFitsUnderSuppression(t *testing.T) {
	suppress := func(f *fixture) {
		writeFile(t, f.root, "cpu/cpu.cfs_quota_us", "kubepods/besteffort", "100000")
	}

	f := newFixture(t, clocktesting.NewFakeClock(time.Now()), batchPod())
	suppress(f)
	r := NewReconciler(f.deps, f.registry(t), f.status(t, ModeReconciler), time.Second)
	if err := r.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cgroupFiles{Shares: "2048", Quota: "100000", Period: "100000", Memory: itoa(4 << 30)}, readFiles(t, f.root, batchDir)); diff != "" {
		t.Errorf("pod cgroup under suppression (-want +got):\n%s", diff)
	}

	f = newFixture(t, clock.RealClock{}, batchPod(), bePod(), lsPod())
	suppress(f)
	rt, _, _ := connected(t, f, NRIOptions{PodWait: time.Second})
	ctx := context.Background()
	batch := sandbox(batchPod())
	if err := rt.nri.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: batch}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, f.root, "cpu/cpu.cfs_quota_us", batchDir); got != "100000" {
		t.Errorf("pod quota after RunPodSandbox = %s, want 100000", got)
	}
	created, err := rt.nri.CreateContainer(ctx, &api.CreateContainerRequest{Pod: batch, Container: container(batch, "c-batch", "main", "")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(linuxValues{Shares: "2048", Memory: itoa(4 << 30)}, valuesOf(created.GetAdjust().GetLinux().GetResources())); diff != "" {
		t.Errorf("container adjustment under suppression (-want +got):\n%s", diff)
	}
	f.addCgroup(t, batchDir+"/c-batch")
	if err := rt.nri.StartContainer(ctx, &api.StartContainerRequest{Pod: batch, Container: container(batch, "c-batch", "main", "")}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, f.root, "cpu/cpu.cfs_quota_us", batchDir+"/c-batch"); got != "100000" {
		t.Errorf("container quota after StartContainer = %s, want 100000", got)
	}
}

// CPU suppression's cpuset policy narrows best-effort pods' cgroups to CPUs 2-3; a container whose runtime asks for
// 0-3 (the static CPU manager's shared pool) would be refused by the cgroup v1 kernel, so it gets its pod's. A
// service's container is never touched.
func TestCPUSetFitsUnderSuppression(t *testing.T) {
	f := newFixture(t, clock.RealClock{}, bePod(), lsPod(), batchPod())
	for _, dir := range []string{"kubepods/besteffort", beDir, batchDir, lsDir} {
		writeFile(t, f.root, "cpuset/cpuset.effective_cpus", dir, "2-3")
	}
	rt, _, _ := connected(t, f, NRIOptions{PodWait: time.Second})
	ctx := context.Background()
	tests := []struct {
		name string
		sb   *api.PodSandbox
		cpus string
		want linuxValues
	}{
		{name: "best-effort pod, wider cpuset", sb: sandbox(bePod()), cpus: "0-3", want: linuxValues{Cpus: "2-3"}},
		{name: "best-effort pod, partly outside", sb: sandbox(bePod()), cpus: "1-2", want: linuxValues{Cpus: "2"}},
		{name: "best-effort pod, within", sb: sandbox(bePod()), cpus: "3"},
		{name: "best-effort pod, none asked", sb: sandbox(bePod())},
		{name: "batch pod: its values and the cpuset", sb: sandbox(batchPod()), cpus: "0-3", want: linuxValues{Shares: "2048", Memory: itoa(4 << 30), Cpus: "2-3"}},
		{name: "service", sb: sandbox(lsPod()), cpus: "0-3"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			created, err := rt.nri.CreateContainer(ctx, &api.CreateContainerRequest{Pod: tt.sb, Container: container(tt.sb, "c"+itoa(int64(i)), "main", tt.cpus)})
			if err != nil {
				t.Fatal(err)
			}
			got := valuesOf(created.GetAdjust().GetLinux().GetResources())
			if got.Cpus == tt.cpus && tt.want.Cpus == "" {
				got.Cpus = "" // the runtime's own request, not an adjustment
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("adjustment (-want +got):\n%s", diff)
			}
		})
	}
}

// On cgroup v2 the kernel takes the smaller of a cgroup's and its ancestors' limits itself: nothing is fitted.
func TestFitterDoesNothingOnV2(t *testing.T) {
	root := newTree(t)
	writeFile(t, root, "cpu/cpu.cfs_quota_us", "kubepods/besteffort", "100000")
	f := fitter{cgroups: cgroup.NewFS(root, cgroup.V1), layout: cgroup.Layout{Driver: cgroup.Cgroupfs}, v1: false}
	pod := Values{CPUShares: 2048, CPUQuota: quota(200)}
	if got := f.podValues(batchDir, pod); !reflect.DeepEqual(got, pod) {
		t.Errorf("v2 pod values = %+v, want %+v", got, pod)
	}
	if _, narrow := f.cpuSet(batchDir, "0-7"); narrow {
		t.Error("v2 narrowed a cpuset")
	}
	f.v1 = true
	if got := f.podValues(batchDir, pod); got.CPUQuota != quota(100) {
		t.Errorf("v1 pod quota = %+v, want 100 ms", got.CPUQuota)
	}
}

// quota is a CFS quota of ms milliseconds per the kubelet's 100 ms period.
func quota(ms float64) cgroup.CPUQuota {
	return cgroup.CPUQuota{Quota: time.Duration(ms * float64(time.Millisecond)), Period: 100 * time.Millisecond}
}
