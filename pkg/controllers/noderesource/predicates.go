package noderesource

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/podcache"
)

// published are the resources the plugins write; a node update that changes only these is the controller's own.
var published = map[corev1.ResourceName]bool{
	slov1alpha1.BatchCPU: true, slov1alpha1.BatchMemory: true, slov1alpha1.MidCPU: true, slov1alpha1.MidMemory: true,
}

// nodeChanged passes node events that can change a calculation: creation, deletion (to forget the node), label
// changes (node selectors), reservation annotation changes, changes of the ratio annotations the plugins own (to put
// back what someone else changed) and of the raw allocatable, and capacity or allocatable changes of any resource the
// controller does not publish itself. Heartbeats, condition updates and the controller's own writes are dropped.
type nodeChanged struct{ predicate.Funcs }

func (nodeChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Node)
	n, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return !maps.Equal(o.Labels, n.Labels) ||
		o.Annotations[slov1alpha1.AnnotationNodeReservation] != n.Annotations[slov1alpha1.AnnotationNodeReservation] ||
		o.Annotations[slov1alpha1.AnnotationCPUNormalizationRatio] != n.Annotations[slov1alpha1.AnnotationCPUNormalizationRatio] ||
		o.Annotations[slov1alpha1.AnnotationResourceAmplificationRatio] != n.Annotations[slov1alpha1.AnnotationResourceAmplificationRatio] ||
		o.Annotations[slov1alpha1.AnnotationRawAllocatable] != n.Annotations[slov1alpha1.AnnotationRawAllocatable] ||
		o.Annotations[slov1alpha1.AnnotationNodeReservationAlias] != n.Annotations[slov1alpha1.AnnotationNodeReservationAlias] ||
		!sameExceptPublished(o.Status.Capacity, n.Status.Capacity) ||
		!sameExceptPublished(o.Status.Allocatable, n.Status.Allocatable)
}

func sameExceptPublished(a, b corev1.ResourceList) bool {
	for name, q := range a {
		if published[name] {
			continue
		}
		if other, ok := b[name]; !ok || other.Cmp(q) != 0 {
			return false
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok && !published[name] {
			return false
		}
	}
	return true
}

// podChanged passes the pod updates that can change a node's high-priority usage or requests: one that changes
// whether the pod is active, its class (slov1alpha1.ClassOf: a label can change it on a running pod), or its
// requests. The cache passes creations, deletions and moves to another node anyway. Status-only updates (probes,
// conditions) are dropped.
func podChanged(o, n *podcache.Pod) bool {
	if o.NodeName != n.NodeName || o.Active() != n.Active() {
		return true
	}
	if o.Shape == n.Shape { // one shared shape: equal in everything below
		return false
	}
	if oc, nc := o.Class, n.Class; oc.Priority != nc.Priority || oc.QoS != nc.QoS {
		return true
	}
	return !equality.Semantic.DeepEqual(o.Effective, n.Effective)
}

// metricChanged passes NodeMetric creations, deletions and status changes; spec-only updates (the manager's own)
// are dropped.
type metricChanged struct{ predicate.Funcs }

func (metricChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*slov1alpha1.NodeMetric)
	n, ok2 := e.ObjectNew.(*slov1alpha1.NodeMetric)
	if !ok1 || !ok2 {
		return true
	}
	// An agent stamps every report: a new stamp is a change without comparing every pod's usage.
	if !o.Status.UpdateTime.Equal(n.Status.UpdateTime) {
		return true
	}
	return !equality.Semantic.DeepEqual(o.Status, n.Status)
}
