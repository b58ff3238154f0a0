package runtimehook

import (
	"context"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"
	"k8s.io/utils/clock"

	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// kernelRefuses is the cgroup v1 kernel's rule for a child's CFS quota under an ancestor's, written out from
// kernel/sched/core.c (tg_cfs_schedulable_down, to_ratio): in whole microseconds, (quota << 20) / period, and the
// child's must not be larger. Independent of cgroup.CPUQuota.Exceeds, which it checks.
func kernelRefuses(child, parent cgroup.CPUQuota) bool {
	if parent.Unlimited() {
		return false
	}
	if child.Unlimited() {
		return true
	}
	ratio := func(q cgroup.CPUQuota) int64 { return q.Quota.Microseconds() << 20 / q.Period.Microseconds() } // no overflow below 8e12 µs
	return ratio(child) > ratio(parent)
}

func usQuota(quota, period int64) cgroup.CPUQuota {
	return cgroup.CPUQuota{Quota: time.Duration(quota) * time.Microsecond, Period: time.Duration(period) * time.Microsecond}
}

// The arithmetic of fitting a container's quota under the besteffort cgroup's at the edges: a limit that is not a
// whole millicore (CPU suppression's quotas are rounded to the microsecond), periods other than 100 ms, the
// kernel's 1 ms minimum, and quotas whose naive product overflows. Whatever comes out must be accepted by the
// kernel below the limit, and a quota the kernel accepts is left as it is.
func TestFittedQuotaIsAcceptedBelowTheAncestor(t *testing.T) {
	tests := []struct {
		name          string
		parent, child cgroup.CPUQuota
	}{
		{name: "200.01 millicores, child 2 cores", parent: usQuota(20001, 100000), child: usQuota(200000, 100000)},
		{name: "200.01 millicores, child a microsecond above", parent: usQuota(20001, 100000), child: usQuota(20002, 100000)},
		{name: "200.01 millicores, child at 50 ms", parent: usQuota(20001, 100000), child: usQuota(100000, 50000)},
		{name: "the kernel's minimum, child at 50 ms", parent: usQuota(1000, 100000), child: usQuota(50000, 50000)},
		{name: "the kernel's minimum, child at 10 ms", parent: usQuota(1000, 100000), child: usQuota(10000, 10000)},
		{name: "a third of a core over 100 ms, child over 333.333 ms", parent: usQuota(33333, 100000), child: usQuota(333333, 333333)},
		{name: "1.5 cores, child 64 cores over 1 s", parent: usQuota(150000, 100000), child: usQuota(64_000_000, 1_000_000)},
		{name: "64 cores over 1 s, child 100 cores over 1 s", parent: usQuota(64_000_000, 1_000_000), child: usQuota(100_000_000, 1_000_000)},
		{name: "below the limit stays", parent: usQuota(150000, 100000), child: usQuota(100000, 100000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newTree(t)
			writeFile(t, root, "cpu/cpu.cfs_quota_us", "kubepods/besteffort", itoa(tt.parent.Quota.Microseconds()))
			writeFile(t, root, "cpu/cpu.cfs_period_us", "kubepods/besteffort", itoa(tt.parent.Period.Microseconds()))
			f := fitter{cgroups: cgroup.NewFS(root, cgroup.V1), layout: cgroup.Layout{Driver: cgroup.Cgroupfs}, v1: true}
			got := f.containerValues(batchDir, nil, Values{CPUShares: 2, CPUQuota: tt.child}).CPUQuota
			if kernelRefuses(got, tt.parent) {
				t.Errorf("fitted %d/%d µs under %d/%d µs: the kernel refuses it", got.Quota.Microseconds(), got.Period.Microseconds(), tt.parent.Quota.Microseconds(), tt.parent.Period.Microseconds())
			}
			if !kernelRefuses(tt.child, tt.parent) && got != tt.child {
				t.Errorf("a quota the kernel accepts was changed: %v → %v", tt.child, got)
			}
			if kernelRefuses(tt.child, tt.parent) && kernelRefuses(tt.parent, got) {
				t.Errorf("fitted %d/%d µs: less than the ancestor's %d/%d µs allows", got.Quota.Microseconds(), got.Period.Microseconds(), tt.parent.Quota.Microseconds(), tt.parent.Period.Microseconds())
			}
		})
	}
}

// CPU suppression lowers the besteffort quota (and, children first, the pod cgroup's) between the hook's answer to
// CreateContainer and runc's creating the container's cgroup, which happens only when the kubelet starts it. What
// runc writes then must not exceed the cgroups above as they are at that moment; the container's own quota arrives
// at StartContainer, fitted to them.
func TestQuotaLoweredBetweenCreateAndStart(t *testing.T) {
	f := newFixture(t, clock.RealClock{}, batchPod())
	writeFile(t, f.root, "cpu/cpu.cfs_quota_us", "kubepods/besteffort", "150000")
	rt, _, _ := connected(t, f, NRIOptions{PodWait: time.Second})
	ctx := context.Background()
	batch := sandbox(batchPod())
	if err := rt.nri.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: batch}); err != nil {
		t.Fatal(err)
	}
	created, err := rt.nri.CreateContainer(ctx, &api.CreateContainerRequest{Pod: batch, Container: container(batch, "c-batch", "main", "")})
	if err != nil {
		t.Fatal(err)
	}

	// Suppression tightens to 200.01 millicores, as cpusuppress writes it: the pod cgroup first, then besteffort.
	lowered := executor.CPUQuota(usQuota(20001, 100000))
	if err := f.deps.Executor.Apply(ctx, "cpusuppress", executor.Update{Dir: batchDir, Value: lowered}, executor.Update{Dir: "kubepods/besteffort", Value: lowered}); err != nil {
		t.Fatal(err)
	}

	// runc creates the container's cgroup with the adjustment.
	res := created.GetAdjust().GetLinux().GetResources()
	t.Logf("the adjustment runc creates the container with: %+v", valuesOf(res))
	if q := res.GetCpu().GetQuota(); q != nil && q.GetValue() > 0 {
		runc := usQuota(q.GetValue(), int64(res.GetCpu().GetPeriod().GetValue()))
		if kernelRefuses(runc, cgroup.CPUQuota(lowered)) {
			t.Errorf("runc writes quota %d/%d µs below the pod's 20001/100000: the kernel refuses it and the container does not start", q.GetValue(), res.GetCpu().GetPeriod().GetValue())
		}
	}
	ctrDir := batchDir + "/c-batch"
	f.addCgroup(t, ctrDir)
	if err := rt.nri.StartContainer(ctx, &api.StartContainerRequest{Pod: batch, Container: container(batch, "c-batch", "main", "")}); err != nil {
		t.Fatal(err)
	}
	if got := readFiles(t, f.root, ctrDir); got.Quota != "20001" || got.Period != "100000" {
		t.Errorf("container quota after StartContainer = %s/%s, want the pod's 20001/100000", got.Quota, got.Period)
	}
}

// On cgroup v2 the kernel takes the smaller of a cgroup's and its ancestors' limits instead of refusing: the quota
// goes to runc in the adjustment, and StartContainer writes nothing.
func TestQuotaGoesToTheRuntimeOnV2(t *testing.T) {
	f := newFixture(t, clock.RealClock{}, batchPod())
	f.deps.CgroupVersion = cgroup.V2
	rt, _, st := connected(t, f, NRIOptions{PodWait: time.Second})
	ctx := context.Background()
	batch := sandbox(batchPod())
	created, err := rt.nri.CreateContainer(ctx, &api.CreateContainerRequest{Pod: batch, Container: container(batch, "c-batch", "main", "")})
	if err != nil {
		t.Fatal(err)
	}
	if got := valuesOf(created.GetAdjust().GetLinux().GetResources()); got.Quota != "200000" || got.Period != "100000" {
		t.Errorf("v2 adjustment %+v, want quota 200000 per 100000", got)
	}
	f.addCgroup(t, batchDir+"/c-batch")
	if err := rt.nri.StartContainer(ctx, &api.StartContainerRequest{Pod: batch, Container: container(batch, "c-batch", "main", "")}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, f.root, "cpu/cpu.cfs_quota_us", batchDir+"/c-batch"); got != "-1" {
		t.Errorf("v2: StartContainer wrote quota %s", got)
	}
	if n := answered(st, EventStartContainer, ResultAdjusted) + answered(st, EventStartContainer, ResultSkipped); n != 0 {
		t.Errorf("v2: StartContainer was answered %d times; it has nothing to do", n)
	}
}
