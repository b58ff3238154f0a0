package allocation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubectlresource "k8s.io/kubectl/pkg/util/resource"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// Unit is what a resource's quantity counts, in Prometheus's base units: the unit of the metric that carries it.
type Unit string

const (
	// Cores is the unit of cpu, and of the batch and mid tiers' CPU, whose integer quantity counts millicores.
	Cores Unit = "cores"
	// Bytes is the unit of memory, ephemeral-storage, hugepages-* and the batch and mid tiers' memory.
	Bytes Unit = "bytes"
	// Count is the unit of every other extended resource (an integer count of its items: GPUs, devices) and of pods.
	Count Unit = "count"
)

// InUnit returns q, a quantity of the resource name, in name's Unit: cpu's 1500m and kubernetes.io/batch-cpu's
// 1500 are both 1.5 cores.
func InUnit(name corev1.ResourceName, q resource.Quantity) (float64, Unit) {
	switch {
	case name == corev1.ResourceCPU:
		return q.AsApproximateFloat64(), Cores
	case name == slov1alpha1.BatchCPU || name == slov1alpha1.MidCPU:
		return q.AsApproximateFloat64() / 1000, Cores
	case name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage || kubectlresource.IsHugePageResourceName(name) ||
		name == slov1alpha1.BatchMemory || name == slov1alpha1.MidMemory:
		return q.AsApproximateFloat64(), Bytes
	}
	return q.AsApproximateFloat64(), Count
}
