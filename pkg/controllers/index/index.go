// Package index holds the cache indexes gleaner-manager's controllers share. Each is registered once, by the
// manager, before any controller is set up: controller-runtime refuses a second index of one name.
package index

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodNodeName indexes pods by spec.nodeName, so a controller lists one node's pods without scanning every pod.
const PodNodeName = "spec.nodeName"

// Register adds every shared index to the manager's cache.
func Register(ctx context.Context, indexer client.FieldIndexer) error {
	err := indexer.IndexField(ctx, &corev1.Pod{}, PodNodeName, func(o client.Object) []string {
		if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
			return []string{n}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("indexing pods by %s: %w", PodNodeName, err)
	}
	return nil
}

// PodsOnNode returns the list options selecting the pods bound to a node through the PodNodeName index.
func PodsOnNode(node string) client.MatchingFields {
	return client.MatchingFields{PodNodeName: node}
}
