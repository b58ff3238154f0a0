package manager

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// CacheOptions are the manager's informer cache options, exported for the controllers' envtests, which run through
// the same transforms so that a field dropped here that a controller reads fails their reconcile results. They keep
// the caches small: nodes lose their image lists, NodeMetrics their aggregated usages. Pods are not in this cache at
// all: every pod of the cluster is held, so what one costs decides the manager's footprint at scale, and the
// controllers read them from package podcache, a few words a pod. Objects in the cache are read-only for everybody.
// ConfigMaps are read only in the manager's own namespace (the SLO config): caching every ConfigMap of the cluster
// would cost memory for nothing.
func CacheOptions(namespace string) cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}:       {Namespaces: map[string]cache.Config{namespace: {}}},
			&corev1.Node{}:            {Transform: slimNode},
			&slov1alpha1.NodeMetric{}: {Transform: slimNodeMetric},
		},
	}
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
