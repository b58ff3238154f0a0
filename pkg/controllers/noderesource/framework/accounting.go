package framework

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/podcache"
)

// Amount is a quantity as an integer in the resource's calculation unit: millicores for CPU, bytes otherwise.
// It is slov1alpha1.AmountOf, named here for the plugins.
func Amount(q resource.Quantity, r corev1.ResourceName) int64 { return slov1alpha1.AmountOf(q, r) }

// Quantity turns an Amount back into a quantity of r: 1200 CPU becomes 1200m, memory stays bytes.
// It is slov1alpha1.QuantityOf, named here for the plugins.
func Quantity(amount int64, r corev1.ResourceName) resource.Quantity {
	return slov1alpha1.QuantityOf(amount, r)
}

// ExtendedQuantity is how a reclaimed resource is published: CPU as an integer count of millicores (the
// kubernetes.io/batch-cpu convention), memory as bytes.
func ExtendedQuantity(amount int64, r corev1.ResourceName) resource.Quantity {
	if r == corev1.ResourceCPU {
		return *resource.NewQuantity(amount, resource.DecimalSI)
	}
	return *resource.NewQuantity(amount, resource.BinarySI)
}

// Active reports whether a pod holds resources on its node: it is Pending or Running (terminating pods included).
// Succeeded, Failed and Unknown pods do not count.
func Active(pod *podcache.Pod) bool { return pod.Active() }

// Requested sums what the node's active pods request of the extended resource name (such as
// kubernetes.io/batch-memory, an integer), leaving out the pods whose UIDs are in except (nil leaves out none).
func (in *Input) Requested(name corev1.ResourceName, except sets.Set[string]) int64 {
	var sum int64
	for _, pod := range in.Pods {
		if !Active(pod) || except.Has(string(pod.UID)) {
			continue
		}
		reqs := in.PodRequests(pod)
		sum += reqs.Name(name, resource.DecimalSI).Value()
	}
	return sum
}

// Kept is what a tier's pods hold of its memory resource while the node's NodeMetric reports memory pressure
// (Input.KeptUnderMemoryPressure): the batch and mid plugins publish no more, so that no new pod of the tier, a
// replacement of an evicted one included, finds room on the node.
type Kept struct {
	// Amount is what the node's active pods request of the resource, less the pods listed as evicted.
	Amount int64
	// Evicted is how many pods the memory pressure lists as evicted.
	Evicted int
	// Reason says since when the NodeMetric reports memory pressure: the ResourceItem's Urgent.
	Reason string
}

// KeptUnderMemoryPressure is what the node's pods keep of the extended resource name (Kept), and whether the
// NodeMetric reports memory pressure at all.
func (in *Input) KeptUnderMemoryPressure(name corev1.ResourceName) (Kept, bool) {
	mp := in.MemoryPressure()
	if mp == nil {
		return Kept{}, false
	}
	return Kept{
		Amount:  in.Requested(name, sets.New(mp.EvictedPods...)),
		Evicted: len(mp.EvictedPods),
		Reason:  "NodeMetric " + in.Node.Name + " reports memory pressure since " + mp.Since.UTC().Format(time.RFC3339),
	}, true
}

// Term is the derivation term of k, named term (batchKept, midKept), for the pods of tier.
func (k Kept) Term(term, tier string, r corev1.ResourceName) slov1alpha1.DerivationTerm {
	return Term(term, k.Amount, r, fmt.Sprintf("requested by active %s pods, less the %d the agent lists as evicted for memory", tier, k.Evicted))
}

// PodRequests is a pod's requests as the scheduler counts them (init containers, sidecars, overhead, pod-level
// resources, resized allocations), worked out once when the pod reached the cache. The list is read-only.
func (in *Input) PodRequests(pod *podcache.Pod) corev1.ResourceList { return pod.Effective }

// PodRequest is a pod's request of r (see PodRequests), plus its request of the mid-tier resource of the same
// kind, so that a mid pod counts with its kubernetes.io/mid-* request.
func (in *Input) PodRequest(pod *podcache.Pod, r corev1.ResourceName) int64 {
	reqs := in.PodRequests(pod)
	amount := Amount(reqs[r], r)
	switch r {
	case corev1.ResourceCPU:
		amount += reqs.Name(slov1alpha1.MidCPU, resource.DecimalSI).Value() // mid-cpu is already millicores
	case corev1.ResourceMemory:
		amount += reqs.Name(slov1alpha1.MidMemory, resource.BinarySI).Value()
	}
	return amount
}

// NodeCapacity is the node's capacity of r, falling back to allocatable when the node reports no capacity
// (slov1alpha1.ReportBound: what its NodeMetric may report).
func (in *Input) NodeCapacity(r corev1.ResourceName) int64 {
	return slov1alpha1.ReportBound(in.Node, r)
}

// KubeletReserved is what the kubelet keeps for the system: capacity - allocatable, at least zero. The allocatable
// is the kubelet's own, before amplification (slov1alpha1.RawAllocatable): an amplified allocatable above capacity
// would make the reservation vanish and hand it to batch pods.
func (in *Input) KubeletReserved(r corev1.ResourceName) int64 {
	alloc, ok := slov1alpha1.RawAllocatable(in.Node, r)
	if !ok {
		return 0
	}
	return max(in.NodeCapacity(r)-Amount(alloc, r), 0)
}

// reservation is what the node's reservation annotation says, read once per reconcile.
type reservation struct {
	reserved corev1.ResourceList
	from     string
	problems []error
}

func (in *Input) nodeReservation() *reservation {
	if in.reservation == nil {
		r := &reservation{}
		r.reserved, r.from, r.problems = slov1alpha1.NodeReservationOf(in.Node)
		in.reservation = r
	}
	return in.reservation
}

// AnnotationReserved is what the node's reservation annotation (slov1alpha1.AnnotationNodeReservation or its
// alias) reserves of r, and the annotation it came from ("" when none applies).
func (in *Input) AnnotationReserved(r corev1.ResourceName) (int64, string) {
	res := in.nodeReservation()
	return Amount(res.reserved[r], r), res.from
}

// ReservationProblems are the errors of reservation annotations that were ignored because they do not parse.
func (in *Input) ReservationProblems() []error { return in.nodeReservation().problems }

// NodeReserved is what is reserved for the system: max(KubeletReserved, AnnotationReserved), as
// Koordinator takes it.
func (in *Input) NodeReserved(r corev1.ResourceName) int64 {
	anno, _ := in.AnnotationReserved(r)
	return max(in.KubeletReserved(r), anno)
}

// ReservedTerms are the terms of NodeReserved: kubeletReserved, annotationReserved and reserved.
func (in *Input) ReservedTerms(r corev1.ResourceName) []slov1alpha1.DerivationTerm {
	kubelet := in.KubeletReserved(r)
	anno, from := in.AnnotationReserved(r)
	detail := "no node reservation annotation"
	if from != "" {
		detail = "node annotation " + from
	}
	for _, err := range in.ReservationProblems() {
		detail += "; " + err.Error()
	}
	return []slov1alpha1.DerivationTerm{
		Term("kubeletReserved", kubelet, r, "capacity - allocatable"),
		Term("annotationReserved", anno, r, detail),
		Term("reserved", max(kubelet, anno), r, "max(kubeletReserved, annotationReserved)"),
	}
}

// SystemUsage is the NodeMetric's system usage of r (node usage outside pods and host applications), see Usage.
func (in *Input) SystemUsage(r corev1.ResourceName) int64 {
	if in.Metric == nil || in.Metric.Status.NodeMetric == nil {
		return 0
	}
	return in.Usage(in.Metric.Status.NodeMetric.SystemUsage[r], r)
}

// NodeUsage is the NodeMetric's node usage of r, see Usage.
func (in *Input) NodeUsage(r corev1.ResourceName) int64 {
	if in.Metric == nil || in.Metric.Status.NodeMetric == nil {
		return 0
	}
	return in.Usage(in.Metric.Status.NodeMetric.NodeUsage[r], r)
}

// HostApplicationUsage sums the usage of r of the high-priority host applications, and says how many there were
// and how many of them have no class at all. A host application is high-priority unless its priority, else its
// QoS class, makes it batch or free (slov1alpha1.HostApplicationMetricInfo.EffectivePriority): one the NodeSLO
// gives neither is usage nobody offered to batch work, so it counts, and as system usage, since it competes with
// services outside any pod.
func (in *Input) HostApplicationUsage(r corev1.ResourceName) (sum int64, apps, unclassed int) {
	if in.Metric == nil {
		return 0, 0, 0
	}
	for _, app := range in.Metric.Status.HostApplicationMetric {
		p := app.EffectivePriority()
		if !p.HighPriority() {
			continue
		}
		sum += in.Usage(app.Usage[r], r)
		apps++
		if p == slov1alpha1.PriorityNone {
			unclassed++
		}
	}
	return sum, apps, unclassed
}

// SystemUsed is max(system usage + high-priority host applications, reserved), with the terms that make it up.
func (in *Input) SystemUsed(r corev1.ResourceName) (int64, []slov1alpha1.DerivationTerm) {
	sys := in.SystemUsage(r)
	apps, n, unclassed := in.HostApplicationUsage(r)
	reserved := in.NodeReserved(r)
	used := max(sys+apps, reserved)
	appDetail := fmt.Sprintf("%d host applications outside batch/free", n)
	if unclassed > 0 {
		appDetail += fmt.Sprintf(" (%d without priority or QoS class)", unclassed)
	}
	terms := []slov1alpha1.DerivationTerm{
		Term("systemUsage", sys, r, "NodeMetric system usage"),
		Term("hostApplications", apps, r, appDetail),
	}
	terms = append(terms, in.ReservedTerms(r)...)
	return used, append(terms, Term("systemUsed", used, r, "max(systemUsage + hostApplications, reserved)"))
}

// Term builds a derivation term from an Amount.
func Term(name string, amount int64, r corev1.ResourceName, detail string) slov1alpha1.DerivationTerm {
	return slov1alpha1.DerivationTerm{Name: name, Value: Quantity(amount, r), Detail: detail}
}
