package evictor

import (
	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// IsBestEffort reports whether the Evictor may evict or kill pod: its Gleaner QoS class is BE (label
// gleaner.sh/qos-class, or koordinator.sh/qosClass), or its spec.priority lies in the batch (5000-5999) or free
// (3000-3999) band. Everything else (services, the mid tier, pods without either) is never touched.
//
// This switches to the API package's shared pod-class function when issue 12 lands, so that manager and agent
// decide who a pod is in one place (DESIGN.md, "Enforcement on the node").
func IsBestEffort(pod *corev1.Pod) bool {
	if slov1alpha1.QoSClassOf(pod) == slov1alpha1.QoSBE {
		return true
	}
	switch slov1alpha1.PriorityClassOf(pod.Spec.Priority) {
	case slov1alpha1.PriorityBatch, slov1alpha1.PriorityFree:
		return true
	}
	return false
}
