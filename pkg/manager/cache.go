package manager

import (
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// CacheOptions are the manager's informer cache options, exported for the controllers' envtests, which run through
// the same transforms so that a field dropped here that a controller reads fails their reconcile results. They keep
// the caches small. Every pod of the cluster is cached, so what a pod costs in memory decides the manager's
// footprint at scale: the caches hold only bound pods, and of each pod only what the controllers read (identity,
// the class labels, priority, phase, a static pod's mirror annotation, and everything that makes up requests and
// limits; no other labels, annotations, owner references, images, env, probes or volumes), with the parts pods of
// one workload have in common stored once (podSlimmer). Nodes lose their image lists, NodeMetrics their aggregated
// usages. Objects in the cache are read-only for everybody; a test of this file checks that nothing read was
// dropped. ConfigMaps are read only in the manager's own namespace (the SLO config): caching every ConfigMap of the
// cluster would cost memory for nothing.
func CacheOptions(namespace string) cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{namespace: {}}},
			&corev1.Pod{}: {
				Field:     fields.OneTermNotEqualSelector("spec.nodeName", ""),
				Transform: newPodSlimmer().slim,
			},
			&corev1.Node{}:            {Transform: slimNode},
			&slov1alpha1.NodeMetric{}: {Transform: slimNodeMetric},
		},
	}
}

var _ toolscache.TransformFunc = newPodSlimmer().slim

// podSlimmer is the pod transform. It keeps of a pod only what the controllers read (see CacheOptions), and what
// pods have in common with others, their slimmed containers (with their resource lists, most of a slim pod), their
// class labels and the short strings (namespace, node, priority class, phase, QoS class), is stored once for every
// pod that has it equal, as the pods of one workload do: a pod then costs the corev1.Pod struct (1.2 KB) and its
// name, UID and resource version. Sharing is safe because cached objects are read-only, and exact because
// containers are shared by their protobuf encoding, what the API server sends, and labels by their keys and values.
// Each table is bounded: full, it starts again empty, which costs sharing for a while and nothing else.
type podSlimmer struct {
	mu         sync.Mutex // client-go calls a transform from one goroutine; the tables do not rely on it
	containers internTable[[]corev1.Container]
	labels     internTable[map[string]string]
	strings    internTable[string]
}

func newPodSlimmer() *podSlimmer {
	return &podSlimmer{
		containers: internTable[[]corev1.Container]{max: 4096},
		labels:     internTable[map[string]string]{max: 256},
		strings:    internTable[string]{max: 65536},
	}
}

// slim keeps what the controllers read of a pod, sharing what it can with the pods before it.
func (s *podSlimmer) slim(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pod.ObjectMeta = metav1.ObjectMeta{
		Name:              pod.Name,
		Namespace:         s.shared(pod.Namespace),
		UID:               pod.UID,
		ResourceVersion:   pod.ResourceVersion,
		CreationTimestamp: pod.CreationTimestamp,
		DeletionTimestamp: pod.DeletionTimestamp,
		Labels:            s.classLabels(pod.Labels),
		Annotations:       mirrorAnnotation(pod.Annotations),
	}
	pod.Spec = corev1.PodSpec{
		NodeName:          s.shared(pod.Spec.NodeName),
		Priority:          pod.Spec.Priority,
		PriorityClassName: s.shared(pod.Spec.PriorityClassName),
		Overhead:          pod.Spec.Overhead,
		Resources:         pod.Spec.Resources,
		Containers:        s.slimContainers(pod.Spec.Containers),
		InitContainers:    s.slimContainers(pod.Spec.InitContainers),
	}
	pod.Status = corev1.PodStatus{
		Phase:                 corev1.PodPhase(s.shared(string(pod.Status.Phase))),
		QOSClass:              corev1.PodQOSClass(s.shared(string(pod.Status.QOSClass))),
		Resize:                pod.Status.Resize,
		Conditions:            resizeConditions(pod.Status.Conditions),
		ContainerStatuses:     resizedStatuses(pod.Status.ContainerStatuses),
		InitContainerStatuses: resizedStatuses(pod.Status.InitContainerStatuses),
		Resources:             pod.Status.Resources,
		AllocatedResources:    pod.Status.AllocatedResources,
	}
	return pod, nil
}

// shared returns the shared copy of v.
func (s *podSlimmer) shared(v string) string {
	if v == "" {
		return ""
	}
	return s.strings.get(v, func() string { return v })
}

// slimContainers returns what is read of containers (name, resources, restart policy), shared with every pod
// whose containers are the same in these.
func (s *podSlimmer) slimContainers(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	key, err := (&corev1.PodSpec{Containers: out}).Marshal()
	if err != nil { // cannot happen for a decoded pod; keep the pod's own copy
		return out
	}
	return s.containers.get(string(key), func() []corev1.Container { return out })
}

// mirrorAnnotation keeps the one annotation a controller reads: a static pod's mirror annotation, which makes
// slov1alpha1.ClassOf protect the pod (nothing else of its annotations: kubectl's last-applied copy alone can double a
// pod's size).
func mirrorAnnotation(annotations map[string]string) map[string]string {
	v, ok := annotations[corev1.MirrorPodAnnotationKey]
	if !ok {
		return nil
	}
	return map[string]string{corev1.MirrorPodAnnotationKey: v}
}

// podClassLabels are the only pod labels a controller reads: those slov1alpha1.ClassOf decides a pod's class by.
var podClassLabels = []string{
	slov1alpha1.LabelPriorityClass, slov1alpha1.LabelPriorityClassAlias, slov1alpha1.LabelQoSClass, slov1alpha1.LabelQoSClassAlias,
}

// classLabels keeps the class labels of labels, nil when it has none, shared with every pod that has the same: a
// map even of one label costs a pod 300 bytes, 18 MB at 60,000 pods.
func (s *podSlimmer) classLabels(labels map[string]string) map[string]string {
	var key strings.Builder
	for _, k := range podClassLabels {
		if v, ok := labels[k]; ok {
			key.WriteString(k + "=" + v + "\x00")
		}
	}
	if key.Len() == 0 {
		return nil
	}
	return s.labels.get(key.String(), func() map[string]string {
		kept := make(map[string]string, 1)
		for _, k := range podClassLabels {
			if v, ok := labels[k]; ok {
				kept[k] = v
			}
		}
		return kept
	})
}

// resizedStatuses keeps of the container statuses those of containers an in-place resize has touched (status
// resources set), and of them what the requests and limits are computed from: resourcehelper reads a container's
// status only when it has resources. Most pods keep none: a status of name alone would cost 200 bytes a container.
func resizedStatuses(ss []corev1.ContainerStatus) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, s := range ss {
		if s.Resources != nil {
			out = append(out, corev1.ContainerStatus{Name: s.Name, AllocatedResources: s.AllocatedResources, Resources: s.Resources})
		}
	}
	return out
}

// internTable holds the shared copy of values by key. Full (max entries), it starts again empty.
type internTable[T any] struct {
	max int
	m   map[string]T
}

// get returns the shared value of key, made by newValue and kept when there is none.
func (t *internTable[T]) get(key string, newValue func() T) T {
	if v, ok := t.m[key]; ok {
		return v
	}
	if t.m == nil || len(t.m) >= t.max {
		t.m = map[string]T{}
	}
	v := newValue()
	t.m[key] = v
	return v
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
