package framework

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// MaxClockSkew is how far a NodeMetric's updateTime may be ahead of the manager's clock and still be used
// (slov1alpha1.MaxNodeMetricClockSkew says why).
const MaxClockSkew = slov1alpha1.MaxNodeMetricClockSkew

// Usage is a quantity the node's NodeMetric reports of r (a usage, a reclaimable amount, a predicted peak) as an
// Amount held to [0, NodeCapacity(r)] (slov1alpha1.ClampReported, the rule kubectl glean top shares). Every
// quantity the plugins take from the NodeMetric goes through it. OutOfRange says which quantities were clamped.
func (in *Input) Usage(q resource.Quantity, r corev1.ResourceName) int64 {
	used, _ := in.clamp(q, r)
	return used
}

// clamp is Usage, and whether q was outside [0, capacity].
func (in *Input) clamp(q resource.Quantity, r corev1.ResourceName) (int64, bool) {
	return slov1alpha1.ClampReported(q, r, in.NodeCapacity(r))
}

// OutOfRange says which quantities of r in the node's NodeMetric lie outside [0, capacity] and what Usage made of
// them, or "" when none does (slov1alpha1.NodeMetricOutOfRange). The plugins put it into their derivations'
// warnings, so that `kubectl glean explain` shows an operator that the report was out of range.
func (in *Input) OutOfRange(r corev1.ResourceName) string {
	if in.Metric == nil {
		return ""
	}
	if w, ok := in.outOfRange[r]; ok {
		return w
	}
	w := slov1alpha1.NodeMetricOutOfRange(in.Node.Name, in.Metric, r, in.NodeCapacity(r))
	if in.outOfRange == nil {
		in.outOfRange = map[corev1.ResourceName]string{}
	}
	in.outOfRange[r] = w
	return w
}

// Warnings are the warnings of a derivation of r: OutOfRange, when it says anything.
func (in *Input) Warnings(r corev1.ResourceName) []string {
	if w := in.OutOfRange(r); w != "" {
		return []string{w}
	}
	return nil
}
