package nodeallocation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/gleaner-sh/gleaner/pkg/allocation"
)

// nodeChanged passes node creations, deletions and the updates that change the denominator of the summary
// (status.allocatable, or status.capacity which stands in for an empty allocatable). Heartbeats, condition, label,
// image and address changes are dropped.
func nodeChanged() predicate.TypedFuncs[*corev1.Node] {
	return predicate.TypedFuncs[*corev1.Node]{
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Node]) bool {
			o, n := e.ObjectOld.Status, e.ObjectNew.Status
			return !equality.Semantic.DeepEqual(o.Allocatable, n.Allocatable) || !equality.Semantic.DeepEqual(o.Capacity, n.Capacity)
		},
	}
}

// podChanged passes what can change a node's summary: a bound pod appearing or going, and an update that moves the
// pod to another node, makes it count or stop counting (phase Succeeded or Failed), or changes its requests or
// limits (an in-place resize, pod-level resources). Status updates of running pods, label changes and the
// deletion timestamp (terminating pods still count) are dropped, as is everything about unbound pods.
func podChanged() predicate.TypedFuncs[*corev1.Pod] {
	bound := func(p *corev1.Pod) bool { return p.Spec.NodeName != "" }
	return predicate.TypedFuncs[*corev1.Pod]{
		CreateFunc:  func(e event.TypedCreateEvent[*corev1.Pod]) bool { return bound(e.Object) },
		DeleteFunc:  func(e event.TypedDeleteEvent[*corev1.Pod]) bool { return bound(e.Object) },
		GenericFunc: func(e event.TypedGenericEvent[*corev1.Pod]) bool { return bound(e.Object) },
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Pod]) bool {
			o, n := e.ObjectOld, e.ObjectNew
			switch {
			case !bound(o) && !bound(n):
				return false
			case o.Spec.NodeName != n.Spec.NodeName, allocation.Counted(o) != allocation.Counted(n):
				return true
			}
			oReqs, oLimits := allocation.PodRequestsAndLimits(o)
			nReqs, nLimits := allocation.PodRequestsAndLimits(n)
			return !equality.Semantic.DeepEqual(oReqs, nReqs) || !equality.Semantic.DeepEqual(oLimits, nLimits)
		},
	}
}

// deletedOnly passes only deletions of NodeAllocations, so one deleted by hand is written again at once while the
// controller's own writes do not come back to it as work.
func deletedOnly() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
