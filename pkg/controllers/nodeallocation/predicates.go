package nodeallocation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/gleaner-sh/gleaner/pkg/controllers/podcache"
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

// podChanged passes the pod updates that can change a node's summary: one that makes the pod count or stop
// counting (phase Succeeded or Failed) or changes its requests or limits (an in-place resize, pod-level resources).
// The cache passes creations, deletions and moves to another node anyway. Status updates of running pods, label
// changes and the deletion timestamp (terminating pods still count) are dropped.
func podChanged(o, n *podcache.Pod) bool {
	if o.NodeName != n.NodeName || o.Counted() != n.Counted() {
		return true
	}
	if o.Shape == n.Shape { // one shared shape: equal requests and limits
		return false
	}
	return !equality.Semantic.DeepEqual(o.Requests, n.Requests) || !equality.Semantic.DeepEqual(o.Limits, n.Limits)
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
