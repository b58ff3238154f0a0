package v1alpha1

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// AmountOf is a quantity as an integer in the resource's calculation unit: millicores for CPU, bytes otherwise.
func AmountOf(q resource.Quantity, r corev1.ResourceName) int64 {
	if r == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// QuantityOf turns an AmountOf back into a quantity of r: 1200 CPU becomes 1200m, memory stays bytes.
func QuantityOf(amount int64, r corev1.ResourceName) resource.Quantity {
	if r == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(amount, resource.DecimalSI)
	}
	return *resource.NewQuantity(amount, resource.BinarySI)
}

// ReportBound is what a NodeMetric may report of r on node: the node's capacity of r, its allocatable when it
// reports no capacity, as an AmountOf.
func ReportBound(node *corev1.Node, r corev1.ResourceName) int64 {
	if q, ok := node.Status.Capacity[r]; ok {
		return AmountOf(q, r)
	}
	return AmountOf(node.Status.Allocatable[r], r)
}

// ClampReported is a quantity q of r that a NodeMetric reports (a usage, a reclaimable amount, a predicted peak) as
// an AmountOf held to [0, bound] (ReportBound), and whether q lay outside. The report is written by one node's agent
// and is trusted only within physics: unclamped, a negative usage would raise batch capacity, and a quantity too
// large for an int64 of milli-units would wrap (1E CPU reads as 0). The comparison is on the quantities themselves,
// which have arbitrary precision: only a value known to fit is turned into an amount.
//
// It is the one rule: gleaner-manager calculates from the clamped values, and `kubectl glean top` shows them.
func ClampReported(q resource.Quantity, r corev1.ResourceName, bound int64) (int64, bool) {
	if q.Sign() < 0 {
		return 0, true
	}
	if q.Cmp(QuantityOf(bound, r)) > 0 {
		return bound, true
	}
	return AmountOf(q, r), false
}

// NodeMetricOutOfRange says which quantities of r in the NodeMetric m of node lie outside [0, bound] and what
// ClampReported made of them (the first three, and how many more), or "" when none does or m is nil.
func NodeMetricOutOfRange(node string, m *NodeMetric, r corev1.ResourceName, bound int64) string {
	if m == nil {
		return ""
	}
	var clamped []string
	// what is a function so that no name is built for a quantity in range, which nearly all are.
	checkOne := func(what func() string, q resource.Quantity) {
		if v, out := ClampReported(q, r, bound); out {
			to := QuantityOf(v, r)
			clamped = append(clamped, fmt.Sprintf("%s %s to %s", what(), q.String(), to.String()))
		}
	}
	check := func(what string, list corev1.ResourceList) {
		if q, ok := list[r]; ok {
			checkOne(func() string { return what }, q)
		}
	}
	s := m.Status
	if s.NodeMetric != nil {
		check("nodeUsage", s.NodeMetric.NodeUsage)
		check("systemUsage", s.NodeMetric.SystemUsage)
	}
	for i := range s.PodRecords() {
		pm := s.PodRecord(i)
		if q, ok := pm.Usage(r); ok {
			checkOne(func() string { return "pod " + pm.String() }, q)
		}
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
	if len(clamped) == 0 {
		return ""
	}
	const shown = 3
	more := ""
	if len(clamped) > shown {
		more = fmt.Sprintf(" and %d more", len(clamped)-shown)
		clamped = clamped[:shown]
	}
	capacity := QuantityOf(bound, r)
	return fmt.Sprintf("NodeMetric %s reports %s outside [0, capacity %s]; clamped %s%s",
		node, r, capacity.String(), strings.Join(clamped, ", "), more)
}
