package reporter

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/gpu"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// The status lists the GPUs the gpu collector found with their averaged memory and utilisation, and each pod's
// GPU usage where its processes used one; a GPU whose series is too short still has its static fields.
func TestBuildReportsGPUs(t *testing.T) {
	store := statesinformer.NewStore()
	store.SetPod(testutil.Pod("trainer").Obj())
	store.SetPod(testutil.Pod("web").Obj())
	cache := fill(t,
		node(metriccache.NodeCPUUsage, 300, constant(1)), node(metriccache.NodeMemoryUsage, 300, constant(gi)),
		pod(metriccache.PodCPUUsage, "uid-trainer", 300, 1), pod(metriccache.PodMemoryUsage, "uid-trainer", 300, gi),
		pod(metriccache.PodCPUUsage, "uid-web", 300, 1), pod(metriccache.PodMemoryUsage, "uid-web", 300, gi),
		pod(metriccache.PodGPUMemory, "uid-trainer", 300, 20*gi), pod(metriccache.PodGPUUtilization, "uid-trainer", 300, 1.5),
		series{key: metriccache.NamedKey(metriccache.GPUMemoryUsed, "GPU-0"), seconds: 300, value: constant(30 * gi)},
		series{key: metriccache.NamedKey(metriccache.GPUUtilization, "GPU-0"), seconds: 300, value: constant(0.754)},
		series{key: metriccache.NamedKey(metriccache.GPUMemoryUsed, "GPU-1"), seconds: 10, value: constant(gi)},
	)
	cache.SetInfo(metriccache.InfoGPUs, []gpu.Device{
		{Index: 0, UUID: "GPU-0", Model: "NVIDIA H100 80GB HBM3", MemoryTotal: 80 * gi},
		{Index: 1, UUID: "GPU-1", Model: "NVIDIA H100 80GB HBM3", MemoryTotal: 80 * gi},
	})
	r := New(nil, store, cache, clocktesting.NewFakeClock(now), metrics.New(), "n", DefaultOptions())
	got := r.Build(now, Policy{AggregateDuration: 300 * time.Second})
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	wantGPUs := []slov1alpha1.GPUMetricInfo{
		{Index: 0, UUID: "GPU-0", Model: "NVIDIA H100 80GB HBM3", MemoryTotal: q("80Gi"), MemoryUsed: q("30Gi"), UtilizationPercent: ptr.To[int32](75)},
		{Index: 1, UUID: "GPU-1", Model: "NVIDIA H100 80GB HBM3", MemoryTotal: q("80Gi")},
	}
	eq := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	if d := cmp.Diff(wantGPUs, got.GPUs, eq); d != "" {
		t.Errorf("GPUs (-want +got):\n%s", d)
	}
	wantPods := map[string]*slov1alpha1.PodGPUUsage{"uid-trainer": {MemoryUsed: q("20Gi"), UtilizationPercent: 150}, "uid-web": nil}
	for _, p := range got.PodUsages {
		if d := cmp.Diff(wantPods[p.UID], p.GPU, eq); d != "" {
			t.Errorf("GPU of pod %s (-want +got):\n%s", p.UID, d)
		}
	}
	if len(got.PodUsages) != 2 {
		t.Errorf("%d pods, want 2", len(got.PodUsages))
	}
}

// A node without GPUs reports none; more GPUs than the API holds are cut at its bound.
func TestBuildGPUBounds(t *testing.T) {
	base := []series{node(metriccache.NodeCPUUsage, 300, constant(1)), node(metriccache.NodeMemoryUsage, 300, constant(gi))}
	r := New(nil, statesinformer.NewStore(), fill(t, base...), clocktesting.NewFakeClock(now), metrics.New(), "n", DefaultOptions())
	if got := r.Build(now, Policy{AggregateDuration: 300 * time.Second}); got.GPUs != nil {
		t.Errorf("a node without GPUs reports %v", got.GPUs)
	}
	cache := fill(t, base...)
	var many []gpu.Device
	for i := range slov1alpha1.MaxReportedGPUs + 3 {
		many = append(many, gpu.Device{Index: i, UUID: fmt.Sprintf("GPU-%d", i)})
	}
	cache.SetInfo(metriccache.InfoGPUs, many)
	r = New(nil, statesinformer.NewStore(), cache, clocktesting.NewFakeClock(now), metrics.New(), "n", DefaultOptions())
	if got := r.Build(now, Policy{AggregateDuration: 300 * time.Second}); len(got.GPUs) != slov1alpha1.MaxReportedGPUs {
		t.Errorf("%d GPUs reported, want the API's bound %d", len(got.GPUs), slov1alpha1.MaxReportedGPUs)
	}
}
