package qosmanager

import (
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

// systemCriticalPriority is where Kubernetes' system-cluster-critical and system-node-critical classes start.
const systemCriticalPriority = 2000000000

// mirrorAnnotation marks the API server's copy of a static pod, which the kubelet runs from a file: evicting it
// through the API does nothing.
const mirrorAnnotation = "kubernetes.io/config.mirror"

// IsBestEffort reports whether a pod is best-effort: the only kind QoS plugins suppress or evict. A pod is when its
// class (slov1alpha1.ClassOf, computed once per pod update in PodMeta) has QoS class BE or a priority in the batch or
// free band. Never best-effort, whatever their class: pods of the system-critical priority classes and static pods,
// which Kubernetes itself protects from eviction or which eviction cannot remove.
func IsBestEffort(m *statesinformer.PodMeta) bool {
	if p := m.Pod.Spec.Priority; p != nil && *p >= systemCriticalPriority {
		return false
	}
	if _, ok := m.Pod.Annotations[mirrorAnnotation]; ok {
		return false
	}
	return m.QoS == slov1alpha1.QoSBE || m.Priority == slov1alpha1.PriorityBatch || m.Priority == slov1alpha1.PriorityFree
}
