package cli

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/allocation"
)

// Report is what `kubectl glean nodes` shows; -o json and -o yaml print it as is.
type Report struct {
	// Source is where the totals come from: "NodeAllocation" (written by gleaner-manager) or "live" (computed by
	// the plugin from one node list and one pod list).
	Source string `json:"source"`
	// Nodes are the selected nodes, in the --sort-by order.
	Nodes []NodeReport `json:"nodes"`
}

// Sources of a Report.
const (
	SourceNodeAllocation = "NodeAllocation"
	SourceLive           = "live"
)

// NodeReport is one node's allocation.
type NodeReport struct {
	// Name is the node's name.
	Name string `json:"name"`
	// PodCount is the number of pods counted: bound to the node, phase neither Succeeded nor Failed.
	PodCount int32 `json:"podCount"`
	// UpdateTime is when gleaner-manager last changed the node's NodeAllocation (source NodeAllocation only).
	UpdateTime *metav1.Time `json:"updateTime,omitempty"`
	// Allocatable is the denominator of the percentages: status.allocatable, or status.capacity when empty.
	Allocatable corev1.ResourceList `json:"allocatable"`
	// Resources are the rows of `kubectl describe node`'s "Allocated resources" table, in its order.
	Resources []ResourceReport `json:"resources"`
	// Pods are the counted pods with their own requests and limits (--pods only).
	Pods []PodReport `json:"pods,omitempty"`

	summary allocation.Summary
}

// ResourceReport is one row of the "Allocated resources" table.
type ResourceReport struct {
	// Name is the resource's name.
	Name corev1.ResourceName `json:"name"`
	// Requests is the sum of the counted pods' requests.
	Requests resource.Quantity `json:"requests"`
	// RequestsPercent is Requests as a percentage of allocatable, truncated as kubectl prints it. kubectl prints one
	// for cpu, memory, ephemeral-storage and hugepages-* (0 when the node has none of it); Gleaner adds it for other
	// resources when the node offers them.
	RequestsPercent *int64 `json:"requestsPercent,omitempty"`
	// Limits is the sum of the counted pods' limits.
	Limits resource.Quantity `json:"limits"`
	// LimitsPercent is Limits as a percentage of allocatable, like RequestsPercent; it may exceed 100.
	LimitsPercent *int64 `json:"limitsPercent,omitempty"`
}

// PodReport is a pod's row: what the pod requests and limits, as in `kubectl describe node`'s "Non-terminated Pods"
// table (an in-place resize in progress counts with the larger of the old and new values).
type PodReport struct {
	// Namespace and Name identify the pod.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Phase is status.phase.
	Phase corev1.PodPhase `json:"phase"`
	// QoSClass is the pod's Kubernetes QoS class.
	QoSClass corev1.PodQOSClass `json:"qosClass"`
	// Created is the pod's creation time.
	Created metav1.Time `json:"creationTimestamp"`
	// Requests and Limits are the pod's own totals.
	Requests corev1.ResourceList `json:"requests"`
	Limits   corev1.ResourceList `json:"limits"`
	// RequestsPercent and LimitsPercent are per resource the node offers, truncated as kubectl prints them.
	RequestsPercent map[corev1.ResourceName]int64 `json:"requestsPercent,omitempty"`
	LimitsPercent   map[corev1.ResourceName]int64 `json:"limitsPercent,omitempty"`
}

// nodeReport builds the report of a summary.
func nodeReport(name string, s allocation.Summary) NodeReport {
	nr := NodeReport{Name: name, PodCount: s.Pods, Allocatable: s.Allocatable, summary: s}
	for _, row := range s.Rows() {
		rr := ResourceReport{Name: row.Resource, Requests: row.Requests, Limits: row.Limits,
			RequestsPercent: row.RequestsPercent, LimitsPercent: row.LimitsPercent}
		if row.KubectlPercent {
			rr.RequestsPercent, rr.LimitsPercent = orZero(rr.RequestsPercent), orZero(rr.LimitsPercent)
		}
		nr.Resources = append(nr.Resources, rr)
	}
	return nr
}

func orZero(p *int64) *int64 {
	if p == nil {
		return new(int64)
	}
	return p
}

// liveTotals sums pods into the totals of a set of nodes as they arrive, one at a time, so a cluster's pods never
// need to be held at once. Pods of other nodes are skipped.
type liveTotals struct {
	withPods  bool
	namespace string
	byNode    map[string]*liveNode
}

type liveNode struct {
	totals  allocation.Totals
	counted []*corev1.Pod
}

// newLiveTotals prepares the totals of nodes. With withPods, the counted pods are kept for their rows, restricted to
// namespace when it is not empty; the totals always count every namespace.
func newLiveTotals(nodes []corev1.Node, withPods bool, namespace string) *liveTotals {
	t := &liveTotals{withPods: withPods, namespace: namespace, byNode: make(map[string]*liveNode, len(nodes))}
	for i := range nodes {
		t.byNode[nodes[i].Name] = &liveNode{}
	}
	return t
}

// add counts pod on its node. It keeps pod (with --pods), so the caller must not change it afterwards.
func (t *liveTotals) add(pod *corev1.Pod) {
	n, ok := t.byNode[pod.Spec.NodeName]
	if !ok || !n.totals.Add(pod) {
		return
	}
	if t.withPods && (t.namespace == "" || pod.Namespace == t.namespace) {
		n.counted = append(n.counted, pod)
	}
}

// reports returns the nodes' reports, in the order of nodes.
func (t *liveTotals) reports(nodes []corev1.Node) []NodeReport {
	reports := make([]NodeReport, 0, len(nodes))
	for i := range nodes {
		n := t.byNode[nodes[i].Name]
		nr := nodeReport(nodes[i].Name, allocation.NewSummary(&nodes[i], n.totals))
		for _, pod := range n.counted {
			nr.Pods = append(nr.Pods, podReport(pod, nr.Allocatable))
		}
		reports = append(reports, nr)
	}
	return reports
}

// liveReports computes the reports of nodes from pods, which may hold pods of any node.
func liveReports(nodes []corev1.Node, pods []corev1.Pod, withPods bool, namespace string) []NodeReport {
	t := newLiveTotals(nodes, withPods, namespace)
	for i := range pods {
		t.add(&pods[i])
	}
	return t.reports(nodes)
}

func podReport(pod *corev1.Pod, allocatable corev1.ResourceList) PodReport {
	reqs, limits := allocation.EffectivePodRequestsAndLimits(pod)
	return PodReport{
		Namespace: pod.Namespace, Name: pod.Name, Phase: pod.Status.Phase, QoSClass: allocation.QoSClass(pod),
		Created: pod.CreationTimestamp, Requests: reqs, Limits: limits,
		RequestsPercent: podPercents(reqs, allocatable), LimitsPercent: podPercents(limits, allocatable),
	}
}

// podPercents are the percentages of a pod's row: for every resource it uses, and for cpu and memory always (kubectl
// prints "0 (0%)" there), wherever the node's allocatable is not zero.
func podPercents(used, allocatable corev1.ResourceList) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	add := func(name corev1.ResourceName, q resource.Quantity) {
		if p, ok := allocation.Percent(name, q, allocatable[name]); ok {
			out[name] = p
		}
	}
	add(corev1.ResourceCPU, used[corev1.ResourceCPU])
	add(corev1.ResourceMemory, used[corev1.ResourceMemory])
	for name, q := range used {
		add(name, q)
	}
	return out
}

// storedReports builds the reports of nodes from their NodeAllocations, and names the nodes that have none.
func storedReports(nodes []corev1.Node, allocs []slov1alpha1.NodeAllocation) (reports []NodeReport, missing []string) {
	byName := make(map[string]*slov1alpha1.NodeAllocation, len(allocs))
	for i := range allocs {
		byName[allocs[i].Name] = &allocs[i]
	}
	for i := range nodes {
		na, ok := byName[nodes[i].Name]
		if !ok {
			missing = append(missing, nodes[i].Name)
			continue
		}
		nr := nodeReport(na.Name, allocation.SummaryFromStatus(na.Status))
		nr.UpdateTime = na.Status.UpdateTime
		reports = append(reports, nr)
	}
	return reports, missing
}

// sortKey is a parsed --sort-by: by name, or by a resource's requests or limits.
type sortKey struct {
	resource corev1.ResourceName
	limits   bool
}

// parseSortBy reads --sort-by: "name", or RESOURCE.requests / RESOURCE.limits (cpu.requests, memory.limits,
// kubernetes.io/batch-cpu.requests).
func parseSortBy(s string) (sortKey, error) {
	if s == "" || s == "name" {
		return sortKey{}, nil
	}
	i := strings.LastIndex(s, ".")
	if i > 0 {
		switch s[i+1:] {
		case "requests":
			return sortKey{resource: corev1.ResourceName(s[:i])}, nil
		case "limits":
			return sortKey{resource: corev1.ResourceName(s[:i]), limits: true}, nil
		}
	}
	return sortKey{}, fmt.Errorf("--sort-by %q: want name, RESOURCE.requests or RESOURCE.limits (e.g. cpu.requests, memory.limits)", s)
}

// sortReports orders nodes by name, or by the fraction of allocatable the key's resource holds, largest first (the
// untruncated fraction, so 65.9% sorts above 65.1%); pods inside a node by namespace and name, or by their own
// quantity of the resource, largest first. Ties go by name.
func sortReports(reports []NodeReport, key sortKey) {
	for i := range reports {
		pods := reports[i].Pods
		slices.SortStableFunc(pods, func(a, b PodReport) int {
			if key.resource != "" {
				qa, qb := podQuantity(a, key), podQuantity(b, key)
				if c := qb.Cmp(qa); c != 0 {
					return c
				}
			}
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
	}
	slices.SortStableFunc(reports, func(a, b NodeReport) int {
		if key.resource != "" {
			if c := cmp.Compare(nodeFraction(b, key), nodeFraction(a, key)); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

func podQuantity(p PodReport, key sortKey) resource.Quantity {
	if key.limits {
		return p.Limits[key.resource]
	}
	return p.Requests[key.resource]
}

func nodeFraction(n NodeReport, key sortKey) float64 {
	used := n.summary.Requests[key.resource]
	if key.limits {
		used = n.summary.Limits[key.resource]
	}
	return allocation.Fraction(key.resource, used, n.summary.Allocatable[key.resource])
}
