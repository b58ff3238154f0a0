package framework

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// Amount is a quantity as an integer in the resource's calculation unit: millicores for CPU, bytes otherwise.
func Amount(q resource.Quantity, r corev1.ResourceName) int64 {
	if r == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// Quantity turns an Amount back into a quantity of r: 1200 CPU becomes 1200m, memory stays bytes.
func Quantity(amount int64, r corev1.ResourceName) resource.Quantity {
	if r == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(amount, resource.DecimalSI)
	}
	return *resource.NewQuantity(amount, resource.BinarySI)
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
func Active(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning || pod.Status.Phase == corev1.PodPending || pod.Status.Phase == ""
}

// PodRequests is a pod's requests as the scheduler counts them (init containers, sidecars, overhead, pod-level
// resources, resized allocations), computed once per reconcile.
func (in *Input) PodRequests(pod *corev1.Pod) corev1.ResourceList {
	if in.podRequests == nil {
		in.podRequests = make(map[types.UID]corev1.ResourceList, len(in.Pods))
	}
	if reqs, ok := in.podRequests[pod.UID]; ok {
		return reqs
	}
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true})
	in.podRequests[pod.UID] = reqs
	return reqs
}

// PodRequest is a pod's request of r (see PodRequests), plus its request of the mid-tier resource of the same
// kind, so that a mid pod counts with its kubernetes.io/mid-* request.
func (in *Input) PodRequest(pod *corev1.Pod, r corev1.ResourceName) int64 {
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

// NodeCapacity is the node's capacity of r, falling back to allocatable when the node reports no capacity.
func (in *Input) NodeCapacity(r corev1.ResourceName) int64 {
	if q, ok := in.Node.Status.Capacity[r]; ok {
		return Amount(q, r)
	}
	return Amount(in.Node.Status.Allocatable[r], r)
}

// NodeReserved is what the kubelet keeps for the system: capacity - allocatable, at least zero.
func (in *Input) NodeReserved(r corev1.ResourceName) int64 {
	alloc, ok := in.Node.Status.Allocatable[r]
	if !ok {
		return 0
	}
	return max(in.NodeCapacity(r)-Amount(alloc, r), 0)
}

// SystemUsage is the NodeMetric's system usage of r (node usage outside pods and host applications).
func (in *Input) SystemUsage(r corev1.ResourceName) int64 {
	if in.Metric == nil || in.Metric.Status.NodeMetric == nil {
		return 0
	}
	return Amount(in.Metric.Status.NodeMetric.SystemUsage[r], r)
}

// NodeUsage is the NodeMetric's node usage of r.
func (in *Input) NodeUsage(r corev1.ResourceName) int64 {
	if in.Metric == nil || in.Metric.Status.NodeMetric == nil {
		return 0
	}
	return Amount(in.Metric.Status.NodeMetric.NodeUsage[r], r)
}

// HostApplicationUsage sums the usage of r of the host applications outside the batch and free bands, and says how
// many there were: they compete with services, so they count as system usage.
func (in *Input) HostApplicationUsage(r corev1.ResourceName) (int64, int) {
	if in.Metric == nil {
		return 0, 0
	}
	var sum int64
	n := 0
	for _, app := range in.Metric.Status.HostApplicationMetric {
		if app.Priority == slov1alpha1.PriorityBatch || app.Priority == slov1alpha1.PriorityFree {
			continue
		}
		sum += Amount(app.Usage[r], r)
		n++
	}
	return sum, n
}

// SystemUsed is max(system usage + non-batch host applications, reserved), with the terms that make it up.
func (in *Input) SystemUsed(r corev1.ResourceName) (int64, []slov1alpha1.DerivationTerm) {
	sys := in.SystemUsage(r)
	apps, n := in.HostApplicationUsage(r)
	reserved := in.NodeReserved(r)
	used := max(sys+apps, reserved)
	return used, []slov1alpha1.DerivationTerm{
		Term("systemUsage", sys, r, "NodeMetric system usage"),
		Term("hostApplications", apps, r, fmt.Sprintf("%d host applications outside batch/free", n)),
		Term("reserved", reserved, r, "capacity - allocatable"),
		Term("systemUsed", used, r, "max(systemUsage + hostApplications, reserved)"),
	}
}

// Term builds a derivation term from an Amount.
func Term(name string, amount int64, r corev1.ResourceName, detail string) slov1alpha1.DerivationTerm {
	return slov1alpha1.DerivationTerm{Name: name, Value: Quantity(amount, r), Detail: detail}
}
