package qosmanager

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

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

// ForRunningContainerSpecs is ForRunningContainers with each container's spec (ContainerSpec); a status without a
// spec is passed over.
func ForRunningContainerSpecs(pod *corev1.Pod, fn func(*corev1.Container, *corev1.ContainerStatus)) {
	ForRunningContainers(pod, func(st *corev1.ContainerStatus) {
		if c := ContainerSpec(pod, st.Name); c != nil {
			fn(c, st)
		}
	})
}

// ContainerSpec is the pod's container (or init container) of that name; nil when it has none.
func ContainerSpec(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		if i := slices.IndexFunc(list, func(c corev1.Container) bool { return c.Name == name }); i >= 0 {
			return &list[i]
		}
	}
	return nil
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
