package prediction

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Resources are a CPU and a memory amount: millicores and bytes.
type Resources struct {
	MilliCPU    int64
	MemoryBytes int64
}

// Add returns r + o.
func (r Resources) Add(o Resources) Resources {
	return Resources{MilliCPU: r.MilliCPU + o.MilliCPU, MemoryBytes: r.MemoryBytes + o.MemoryBytes}
}

// Max is the larger of r and o, per resource.
func (r Resources) Max(o Resources) Resources {
	return Resources{MilliCPU: max(r.MilliCPU, o.MilliCPU), MemoryBytes: max(r.MemoryBytes, o.MemoryBytes)}
}

// List is r as a ResourceList of cpu and memory.
func (r Resources) List() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(r.MemoryBytes, resource.BinarySI),
	}
}

// WithMargin is a predicted peak raised by the safety margin: peak x (100 + marginPercent) / 100, rounded up, so
// that a margin never makes the peak smaller than predicted.
func WithMargin(peak Resources, marginPercent int64) Resources {
	scale := func(v int64) int64 { return int64(math.Ceil(float64(v) * float64(100+marginPercent) / 100)) }
	return Resources{MilliCPU: scale(peak.MilliCPU), MemoryBytes: scale(peak.MemoryBytes)}
}

// PodTerm is one prod pod's part of the pod-reclaimable prediction.
type PodTerm struct {
	// Request is the pod's CPU and memory request (init containers, sidecars and overhead as the scheduler counts).
	Request Resources
	// Peak is the pod's predicted peak: the largest CPU and memory sample of the last 25 hours or of the three hours
	// starting a week ago (docs/prediction.md).
	Peak Resources
	// Warm says the pod's model is older than the cold-start period; a cold pod reclaims nothing.
	Warm bool
}

// PodReclaimable is the pod-reclaimable prediction: over the warm prod pods, the sum of what each requested above
// its peak with the margin, per resource; a pod whose peak is above its request adds nothing (never negative).
func PodReclaimable(pods []PodTerm, marginPercent int64) Resources {
	var out Resources
	for _, p := range pods {
		if !p.Warm {
			continue
		}
		peak := WithMargin(p.Peak, marginPercent)
		out.MilliCPU += max(p.Request.MilliCPU-peak.MilliCPU, 0)
		out.MemoryBytes += max(p.Request.MemoryBytes-peak.MemoryBytes, 0)
	}
	return out
}

// PriorityReclaimable is the priority-reclaimable prediction: the prod pods' requests less the predicted peak of the
// system part and of the prod pods together (each the predicted peak of its own model, added, then the margin),
// never negative. While either model is cold it reclaims nothing.
func PriorityReclaimable(prodRequest, systemPeak, prodPeak Resources, warm bool, marginPercent int64) Resources {
	if !warm {
		return Resources{}
	}
	peak := WithMargin(systemPeak.Add(prodPeak), marginPercent)
	return Resources{
		MilliCPU:    max(prodRequest.MilliCPU-peak.MilliCPU, 0),
		MemoryBytes: max(prodRequest.MemoryBytes-peak.MemoryBytes, 0),
	}
}

// Reclaimable is what the node reports: per resource the smaller of the two predictions, so that neither a pod
// whose peak another pod's slack hides nor a node whose system part grew is over-promised.
func Reclaimable(pod, priority Resources) Resources {
	return Resources{MilliCPU: min(pod.MilliCPU, priority.MilliCPU), MemoryBytes: min(pod.MemoryBytes, priority.MemoryBytes)}
}
