package framework

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// MaxClockSkew is how far a NodeMetric's updateTime may be ahead of the manager's clock and still be used
// (slov1alpha1.MaxNodeMetricClockSkew says why).
const MaxClockSkew = slov1alpha1.MaxNodeMetricClockSkew

// Usage is a quantity the node's NodeMetric reports of r (a usage, a reclaimable amount, a predicted peak) as an
// Amount held to [0, NodeCapacity(r)]. Every quantity the plugins take from the NodeMetric goes through it: the
// report is written by one node's agent, and is trusted only within physics. Unclamped, a negative usage would
// raise batch capacity, and a quantity too large for an int64 of milli-units would wrap in Amount (1E CPU reads
// as 0). OutOfRange says which quantities were clamped.
func (in *Input) Usage(q resource.Quantity, r corev1.ResourceName) int64 {
	used, _ := in.clamp(q, r)
	return used
}

// clamp is Usage, and whether q was outside [0, capacity]. The comparison is on the quantities themselves, which
// have arbitrary precision: only a value known to fit is turned into an Amount.
func (in *Input) clamp(q resource.Quantity, r corev1.ResourceName) (int64, bool) {
	if q.Sign() < 0 {
		return 0, true
	}
	capacity := in.NodeCapacity(r)
	if q.Cmp(Quantity(capacity, r)) > 0 {
		return capacity, true
	}
	return Amount(q, r), false
}

// OutOfRange says which quantities of r in the node's NodeMetric lie outside [0, capacity] and what Usage made of
// them, or "" when none does. The plugins put it into their derivations' warnings, so that `kubectl glean explain`
// shows an operator that the report was out of range.
func (in *Input) OutOfRange(r corev1.ResourceName) string {
	if in.Metric == nil {
		return ""
	}
	if w, ok := in.outOfRange[r]; ok {
		return w
	}
	var clamped []string
	check := func(what string, list corev1.ResourceList) {
		q, ok := list[r]
		if !ok {
			return
		}
		if v, out := in.clamp(q, r); out {
			to := Quantity(v, r)
			clamped = append(clamped, fmt.Sprintf("%s %s to %s", what, q.String(), to.String()))
		}
	}
	s := in.Metric.Status
	if s.NodeMetric != nil {
		check("nodeUsage", s.NodeMetric.NodeUsage)
		check("systemUsage", s.NodeMetric.SystemUsage)
	}
	for _, pm := range s.PodsMetric {
		check("pod "+pm.Namespace+"/"+pm.Name, pm.Usage)
	}
	for _, app := range s.HostApplicationMetric {
		check("host application "+app.Name, app.Usage)
	}
	if p := s.ProdReclaimableMetric; p != nil {
		check("prodReclaimable", p.Resource)
		if p.Prediction != nil {
			check("prediction prodRequest", p.Prediction.ProdRequest)
			check("prediction prodPeak", p.Prediction.ProdPeak)
			check("prediction systemPeak", p.Prediction.SystemPeak)
		}
	}
	w := ""
	if len(clamped) > 0 {
		const shown = 3
		more := ""
		if len(clamped) > shown {
			more = fmt.Sprintf(" and %d more", len(clamped)-shown)
			clamped = clamped[:shown]
		}
		capacity := Quantity(in.NodeCapacity(r), r)
		w = fmt.Sprintf("NodeMetric %s reports %s outside [0, capacity %s]; clamped %s%s",
			in.Node.Name, r, capacity.String(), strings.Join(clamped, ", "), more)
	}
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
