package statesinformer

import (
	corev1 "k8s.io/api/core/v1"
)

// lastApplied is the annotation kubectl apply leaves on objects: a full copy of the object, often the largest
// part of a pod.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// slimPod drops, before a pod enters the informer's cache, what no module of the agent reads: managed fields, the
// last-applied annotation, volumes, and each container's command, arguments, environment, mounts, probes and
// lifecycle hooks. On a node with 200 pods this is most of the informer's memory. A module that needs one of
// these fields adds it back here. Objects that are not pods pass through unchanged.
func slimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod.ManagedFields = nil
	delete(pod.Annotations, lastApplied)
	pod.Spec.Volumes = nil
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			slimContainer(&cs[i])
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		c := &pod.Spec.EphemeralContainers[i].EphemeralContainerCommon
		c.Command, c.Args, c.Env, c.EnvFrom, c.VolumeMounts = nil, nil, nil, nil, nil
	}
	return pod, nil
}

func slimContainer(c *corev1.Container) {
	c.Command, c.Args, c.Env, c.EnvFrom = nil, nil, nil, nil
	c.VolumeMounts, c.VolumeDevices = nil, nil
	c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
}
