package allocation

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/kubectl/pkg/util/qos"
)

// Counted reports whether `kubectl describe node` counts pod among the node's pods: every pod whose phase is neither
// Succeeded nor Failed. Terminating pods count, since they still hold their resources. Whether the pod is bound to
// the node is the caller's business.
func Counted(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// PodRequestsAndLimits returns what a pod adds to its node's totals, as `kubectl describe node` sums them: the
// Kubernetes rules for init containers, restartable sidecars, pod-level resources and overhead (added to limits
// only where the limit is non-zero), from the pod's spec. The lists are new; the caller may keep or change them.
func PodRequestsAndLimits(pod *corev1.Pod) (requests, limits corev1.ResourceList) {
	opts := resourcehelper.PodResourcesOptions{}
	return resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts)
}

// EffectivePodRequestsAndLimits is PodRequestsAndLimits with an in-place resize taken into account: for a container
// whose status reports resources, a request is the largest of the desired, allocated and actuated values and a limit
// the larger of desired and actuated (only the actuated and allocated ones when the resize is infeasible). This is
// what `kubectl describe node` prints in a pod's row; its node totals use the spec alone (PodRequestsAndLimits).
func EffectivePodRequestsAndLimits(pod *corev1.Pod) (requests, limits corev1.ResourceList) {
	opts := resourcehelper.PodResourcesOptions{UseStatusResources: true}
	return resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts)
}

// QoSClass returns the pod's Kubernetes QoS class (Guaranteed, Burstable or BestEffort): status.qosClass when the
// API server has set it, otherwise computed from the spec with the same rules. It is unrelated to Gleaner's own QoS
// classes (slov1alpha1.ClassOf).
func QoSClass(pod *corev1.Pod) corev1.PodQOSClass {
	return qos.GetPodQOS(pod)
}
