package allocation

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubectlresource "k8s.io/kubectl/pkg/util/resource"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// Totals accumulates the requests and limits of the pods on one node. The zero value is empty and ready to use.
type Totals struct {
	// Requests is the sum of the counted pods' requests.
	Requests corev1.ResourceList
	// Limits is the sum of the counted pods' limits.
	Limits corev1.ResourceList
	// Pods is the number of pods counted.
	Pods int32
}

// Add adds pod's requests and limits (PodRequestsAndLimits) when Counted(pod), and reports whether it did. It does
// not look at spec.nodeName: the caller passes the pods of one node.
func (t *Totals) Add(pod *corev1.Pod) bool {
	if !Counted(pod) {
		return false
	}
	t.AddCounted(PodRequestsAndLimits(pod))
	return true
}

// AddCounted adds the requests and limits of one pod the caller has found Counted, as PodRequestsAndLimits returns
// them. The lists are only read.
func (t *Totals) AddCounted(requests, limits corev1.ResourceList) {
	if t.Requests == nil {
		t.Requests, t.Limits = corev1.ResourceList{}, corev1.ResourceList{}
	}
	addTo(t.Requests, requests)
	addTo(t.Limits, limits)
	t.Pods++
}

func addTo(sum, list corev1.ResourceList) {
	for name, q := range list {
		if v, ok := sum[name]; ok {
			v.Add(q)
			sum[name] = v
		} else {
			sum[name] = q.DeepCopy()
		}
	}
}

// Summary is a node's allocation: the numbers `kubectl describe node` prints under "Allocated resources".
type Summary struct {
	// Allocatable is the node's status.allocatable, or status.capacity when allocatable is empty (kubectl's rule).
	Allocatable corev1.ResourceList
	// Requests holds, for cpu, memory, ephemeral-storage, every resource in Allocatable except pods and every
	// resource a counted pod requests, the sum of the counted pods' requests (0 when none requests it).
	Requests corev1.ResourceList
	// Limits is like Requests, for limits.
	Limits corev1.ResourceList
	// Pods is the number of pods counted.
	Pods int32
}

// NewSummary completes totals into the summary of node: the denominator chosen, every resource kubectl prints
// present (0 when no pod asks for it).
func NewSummary(node *corev1.Node, totals Totals) Summary {
	allocatable := node.Status.Capacity
	if len(node.Status.Allocatable) > 0 {
		allocatable = node.Status.Allocatable
	}
	s := Summary{
		Allocatable: allocatable.DeepCopy(),
		Requests:    totals.Requests.DeepCopy(),
		Limits:      totals.Limits.DeepCopy(),
		Pods:        totals.Pods,
	}
	if s.Allocatable == nil {
		s.Allocatable = corev1.ResourceList{}
	}
	if s.Requests == nil {
		s.Requests, s.Limits = corev1.ResourceList{}, corev1.ResourceList{}
	}
	for _, name := range rowResources(s.Allocatable) {
		for _, list := range []corev1.ResourceList{s.Requests, s.Limits} {
			if _, ok := list[name]; !ok {
				list[name] = zero(name)
			}
		}
	}
	return s
}

// Summarize sums the pods bound to node (spec.nodeName) that Counted accepts and returns the node's summary. It is
// the convenience form of Totals and NewSummary for callers holding a plain pod list.
func Summarize(node *corev1.Node, pods []corev1.Pod) Summary {
	var t Totals
	for i := range pods {
		if pods[i].Spec.NodeName == node.Name {
			t.Add(&pods[i])
		}
	}
	return NewSummary(node, t)
}

// zero is the quantity kubectl prints for a resource no pod asks for: "0".
func zero(name corev1.ResourceName) resource.Quantity {
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(0, resource.DecimalSI)
	}
	return *resource.NewQuantity(0, resource.DecimalSI)
}

// Percent returns used as a percentage of allocatable, truncated toward zero exactly as `kubectl describe node`
// prints it: the ratio is taken in float64 over milli-units for cpu and whole units for everything else, times 100,
// then converted to an integer. ok is false when allocatable is zero, where kubectl prints 0%.
func Percent(name corev1.ResourceName, used, allocatable resource.Quantity) (percent int64, ok bool) {
	if name == corev1.ResourceCPU {
		if allocatable.MilliValue() == 0 {
			return 0, false
		}
		return int64(float64(used.MilliValue()) / float64(allocatable.MilliValue()) * 100), true
	}
	if allocatable.Value() == 0 {
		return 0, false
	}
	return int64(float64(used.Value()) / float64(allocatable.Value()) * 100), true
}

// Fraction is used/allocatable as an untruncated float64 (0 when allocatable is zero), for sorting.
func Fraction(name corev1.ResourceName, used, allocatable resource.Quantity) float64 {
	if name == corev1.ResourceCPU {
		if allocatable.MilliValue() == 0 {
			return 0
		}
		return float64(used.MilliValue()) / float64(allocatable.MilliValue())
	}
	if allocatable.Value() == 0 {
		return 0
	}
	return float64(used.Value()) / float64(allocatable.Value())
}

// Row is one line of the "Allocated resources" table.
type Row struct {
	// Resource is the resource's name.
	Resource corev1.ResourceName
	// Requests and Limits are the node's totals.
	Requests, Limits resource.Quantity
	// RequestsPercent and LimitsPercent are Percent of Requests and Limits; nil when the node's allocatable of the
	// resource is zero or absent.
	RequestsPercent, LimitsPercent *int64
	// KubectlPercent is true for the rows kubectl prints with a percentage (cpu, memory, ephemeral-storage,
	// hugepages-*): it prints 0% where the percentages are nil. kubectl prints extended resources without one.
	KubectlPercent bool
}

// Rows returns the rows `kubectl describe node` prints, in its order: cpu, memory and ephemeral-storage always; then
// the hugepages-* resources in the node's allocatable, sorted; then its other resources (extended resources such as
// kubernetes.io/batch-cpu or example.com/gpu) except pods, sorted. A resource pods request but the node does not
// offer is not a row, as in kubectl; Summary.Requests still has it.
func (s Summary) Rows() []Row {
	names := rowResources(s.Allocatable)
	rows := make([]Row, 0, len(names))
	for _, name := range names {
		row := Row{
			Resource:       name,
			Requests:       s.Requests[name],
			Limits:         s.Limits[name],
			KubectlPercent: name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage || kubectlresource.IsHugePageResourceName(name),
		}
		row.RequestsPercent = percentPtr(name, row.Requests, s.Allocatable[name])
		row.LimitsPercent = percentPtr(name, row.Limits, s.Allocatable[name])
		rows = append(rows, row)
	}
	return rows
}

func percentPtr(name corev1.ResourceName, used, allocatable resource.Quantity) *int64 {
	if p, ok := Percent(name, used, allocatable); ok {
		return &p
	}
	return nil
}

// rowResources lists the resources of kubectl's table for a node with this allocatable, in kubectl's order.
func rowResources(allocatable corev1.ResourceList) []corev1.ResourceName {
	var hugePages, extended []string
	for name := range allocatable {
		switch {
		case kubectlresource.IsHugePageResourceName(name):
			hugePages = append(hugePages, string(name))
		case !kubectlresource.IsStandardContainerResourceName(string(name)) && name != corev1.ResourcePods:
			extended = append(extended, string(name))
		}
	}
	sort.Strings(hugePages)
	sort.Strings(extended)
	names := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}
	for _, n := range append(hugePages, extended...) {
		names = append(names, corev1.ResourceName(n))
	}
	return names
}

// Status is the summary as a NodeAllocation status, without UpdateTime (the writer sets it when the summary
// changes). Percentages are given for every resource with a non-zero allocatable.
func (s Summary) Status() slov1alpha1.NodeAllocationStatus {
	return slov1alpha1.NodeAllocationStatus{
		Allocatable:     s.Allocatable.DeepCopy(),
		Requests:        s.Requests.DeepCopy(),
		Limits:          s.Limits.DeepCopy(),
		RequestsPercent: percents(s.Requests, s.Allocatable),
		LimitsPercent:   percents(s.Limits, s.Allocatable),
		PodCount:        s.Pods,
	}
}

func percents(used, allocatable corev1.ResourceList) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	for name, q := range used {
		if p, ok := Percent(name, q, allocatable[name]); ok {
			out[name] = p
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// SummaryFromStatus is the summary a NodeAllocation status records, for readers of the stored objects. The
// percentages are recomputed from the quantities, so they are those of Percent whatever the writer stored.
func SummaryFromStatus(st slov1alpha1.NodeAllocationStatus) Summary {
	s := Summary{
		Allocatable: st.Allocatable.DeepCopy(),
		Requests:    st.Requests.DeepCopy(),
		Limits:      st.Limits.DeepCopy(),
		Pods:        st.PodCount,
	}
	if s.Allocatable == nil {
		s.Allocatable = corev1.ResourceList{}
	}
	if s.Requests == nil {
		s.Requests = corev1.ResourceList{}
	}
	if s.Limits == nil {
		s.Limits = corev1.ResourceList{}
	}
	return s
}
