package reporter

import (
	"math"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/gpu"
)

// gpus lists the GPUs the gpu collector found last, by index, with their memory and utilisation averaged over
// (start, end] where covered enough; at most slov1alpha1.MaxReportedGPUs. Nil where the node has none.
func (r *Reporter) gpus(start, end time.Time) []slov1alpha1.GPUMetricInfo {
	v, ok := r.cache.Info(metriccache.InfoGPUs)
	if !ok {
		return nil
	}
	devs, _ := v.([]gpu.Device)
	var out []slov1alpha1.GPUMetricInfo
	for _, d := range devs {
		if len(out) == slov1alpha1.MaxReportedGPUs {
			break
		}
		g := slov1alpha1.GPUMetricInfo{Index: int32(d.Index), UUID: d.UUID, Model: d.Model,
			MemoryTotal: resource.NewQuantity(int64(d.MemoryTotal), resource.BinarySI)}
		if m, ok := r.query(metriccache.NamedKey(metriccache.GPUMemoryUsed, d.UUID), start, end); ok {
			g.MemoryUsed = resource.NewQuantity(roundMemory(math.Max(m.Value(metriccache.Avg), 0)), resource.BinarySI)
		}
		if u, ok := r.query(metriccache.NamedKey(metriccache.GPUUtilization, d.UUID), start, end); ok {
			p := int32(math.Round(min(max(u.Value(metriccache.Avg), 0), 1) * 100))
			g.UtilizationPercent = &p
		}
		out = append(out, g)
	}
	return out
}

// podGPU is a pod's GPU usage averaged over (start, end]; nil when it has no GPU series covered enough.
func (r *Reporter) podGPU(uid string, start, end time.Time) *slov1alpha1.PodGPUUsage {
	m, okM := r.query(metriccache.PodKey(metriccache.PodGPUMemory, uid), start, end)
	u, okU := r.query(metriccache.PodKey(metriccache.PodGPUUtilization, uid), start, end)
	if !okM || !okU {
		return nil
	}
	return &slov1alpha1.PodGPUUsage{
		MemoryUsed:         resource.NewQuantity(roundMemory(math.Max(m.Value(metriccache.Avg), 0)), resource.BinarySI),
		UtilizationPercent: int32(math.Round(min(max(u.Value(metriccache.Avg), 0), 64) * 100)),
	}
}
