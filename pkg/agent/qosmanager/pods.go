package qosmanager

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gleaner-sh/gleaner/pkg/agent/evictor"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

// IsBestEffort reports whether a pod is best-effort: the only kind QoS plugins suppress or evict. It is the evictor's
// own test (evictor.BestEffortClass) on the class PodMeta computed, so a plugin never picks a pod the evictor refuses.
func IsBestEffort(m *statesinformer.PodMeta) bool {
	return evictor.BestEffortClass(m.Pod, m.QoS, m.Priority)
}

// ForRunningContainers calls fn with each of the pod's containers (init containers included, for sidecars) that
// runs now: those whose cgroups exist.
func ForRunningContainers(pod *corev1.Pod, fn func(*corev1.ContainerStatus)) {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range list {
			if list[i].State.Running != nil && list[i].ContainerID != "" {
				fn(&list[i])
			}
		}
	}
}

// WithRunningContainers returns the pods with a running container: those whose pod cgroups surely exist.
func WithRunningContainers(pods []*statesinformer.PodMeta) []*statesinformer.PodMeta {
	out := pods[:0:0]
	for _, m := range pods {
		n := 0
		ForRunningContainers(m.Pod, func(*corev1.ContainerStatus) { n++ })
		if n > 0 {
			out = append(out, m)
		}
	}
	return out
}
