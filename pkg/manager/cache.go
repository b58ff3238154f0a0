package manager

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// CacheOptions are the manager's informer cache options, exported for the controllers' envtests, which run through
// the same transforms so that a field dropped here that a controller reads fails their reconcile results. They keep
// the caches small. Every pod of the cluster is cached, so what a pod costs in
// memory decides the manager's footprint at scale: the caches hold only bound pods, and of each pod only what the
// controllers read (identity, the class labels, priority, phase, and everything that makes up requests and limits;
// no other labels, annotations or owner references). Nodes lose their image lists, NodeMetrics their aggregated usages. Objects in
// the cache are read-only for everybody; a test of this file checks that nothing read was dropped. ConfigMaps are
// read only in the manager's own namespace (the SLO config): caching every ConfigMap of the cluster would cost
// memory for nothing.
func CacheOptions(namespace string) cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{namespace: {}}},
			&corev1.Pod{}: {
				Field:     fields.OneTermNotEqualSelector("spec.nodeName", ""),
				Transform: slimPod,
			},
			&corev1.Node{}:            {Transform: slimNode},
			&slov1alpha1.NodeMetric{}: {Transform: slimNodeMetric},
		},
	}
}

var _ toolscache.TransformFunc = slimPod

// slimPod keeps what the controllers read of a pod.
func slimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod.ManagedFields = nil
	pod.Annotations = nil // none read; kubectl's last-applied copy alone can double a pod's size
	pod.OwnerReferences = nil
	pod.Labels = classLabels(pod.Labels)
	slim := corev1.PodSpec{
		NodeName:          pod.Spec.NodeName,
		Priority:          pod.Spec.Priority,
		PriorityClassName: pod.Spec.PriorityClassName,
		Overhead:          pod.Spec.Overhead,
		Resources:         pod.Spec.Resources,
		Containers:        slimContainers(pod.Spec.Containers),
		InitContainers:    slimContainers(pod.Spec.InitContainers),
	}
	pod.Spec = slim
	pod.Status = corev1.PodStatus{
		Phase:                 pod.Status.Phase,
		QOSClass:              pod.Status.QOSClass,
		Resize:                pod.Status.Resize,
		Conditions:            resizeConditions(pod.Status.Conditions),
		ContainerStatuses:     slimStatuses(pod.Status.ContainerStatuses),
		InitContainerStatuses: slimStatuses(pod.Status.InitContainerStatuses),
		Resources:             pod.Status.Resources,
		AllocatedResources:    pod.Status.AllocatedResources,
	}
	return pod, nil
}

// podClassLabels are the only pod labels a controller reads: those slov1alpha1.ClassOf decides a pod's class by.
var podClassLabels = []string{
	slov1alpha1.LabelPriorityClass, slov1alpha1.LabelPriorityClassAlias, slov1alpha1.LabelQoSClass, slov1alpha1.LabelQoSClassAlias,
}

// classLabels keeps the class labels of labels, nil when it has none: a map even of one label costs a pod 300
// bytes in the cache, 25 MB at 60,000 pods.
func classLabels(labels map[string]string) map[string]string {
	var kept map[string]string
	for _, k := range podClassLabels {
		if v, ok := labels[k]; ok {
			if kept == nil {
				kept = make(map[string]string, 1)
			}
			kept[k] = v
		}
	}
	return kept
}

func slimContainers(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	return out
}

func slimStatuses(ss []corev1.ContainerStatus) []corev1.ContainerStatus {
	if ss == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(ss))
	for i, s := range ss {
		out[i] = corev1.ContainerStatus{Name: s.Name, AllocatedResources: s.AllocatedResources, Resources: s.Resources}
	}
	return out
}

func resizeConditions(cs []corev1.PodCondition) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range cs {
		if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
			out = append(out, c)
		}
	}
	return out
}

// slimNode drops what no controller reads of a node and costs the most: its image list.
func slimNode(obj any) (any, error) {
	if node, ok := obj.(*corev1.Node); ok {
		node.ManagedFields = nil
		node.Status.Images = nil
	}
	return obj, nil
}

// slimNodeMetric drops the aggregated usages (avg/p50/.../p99 per window, for node and system: dozens of resource
// lists per node) that no controller of the manager reads; the batch and mid plugins use the averaged usages.
func slimNodeMetric(obj any) (any, error) {
	if m, ok := obj.(*slov1alpha1.NodeMetric); ok {
		m.ManagedFields = nil
		if m.Status.NodeMetric != nil {
			m.Status.NodeMetric.AggregatedNodeUsages = nil
			m.Status.NodeMetric.AggregatedSystemUsages = nil
		}
	}
	return obj, nil
}
