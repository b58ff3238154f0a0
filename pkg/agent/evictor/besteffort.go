package evictor

import (
	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// systemCriticalPriority is where Kubernetes' system-cluster-critical and system-node-critical classes start.
const systemCriticalPriority = 2000000000

// mirrorAnnotation marks the API server's copy of a static pod, which the kubelet runs from a file: evicting it
// through the API does nothing.
const mirrorAnnotation = "kubernetes.io/config.mirror"

// IsBestEffort reports whether the Evictor may evict or kill pod, and QoS plugins suppress it: its priority class
// (slov1alpha1.ClassOf, the one answer manager and agent share to "who is this pod") is batch or free, or its QoS
// label says BE. ClassOf gives a pod without a priority label or band the priority of its QoS class, so a plain
// Kubernetes BestEffort pod is batch; a pod in the prod band is never best-effort unless labelled so. Services, the
// mid tier and everything else are never touched.
func IsBestEffort(pod *corev1.Pod) bool {
	c := slov1alpha1.ClassOf(pod)
	return BestEffortClass(pod, c.QoS, c.Priority)
}

// BestEffortClass is IsBestEffort for a pod whose class is known already (the agent's PodMeta computes it once per
// pod update). Never best-effort, whatever their class: pods of the system-critical priority classes and static
// pods, which Kubernetes itself protects from eviction or which eviction cannot remove.
func BestEffortClass(pod *corev1.Pod, qos slov1alpha1.QoSClass, priority slov1alpha1.PriorityClass) bool {
	if p := pod.Spec.Priority; p != nil && *p >= systemCriticalPriority {
		return false
	}
	if _, ok := pod.Annotations[mirrorAnnotation]; ok {
		return false
	}
	if priority == slov1alpha1.PriorityBatch || priority == slov1alpha1.PriorityFree {
		return true
	}
	// qos is BE also for an unlabelled Kubernetes BestEffort pod; only the label's word counts against the band.
	label, ok := pod.Labels[slov1alpha1.LabelQoSClass]
	if !ok {
		label = pod.Labels[slov1alpha1.LabelQoSClassAlias]
	}
	return qos == slov1alpha1.QoSBE && slov1alpha1.QoSClass(label) == slov1alpha1.QoSBE
}
