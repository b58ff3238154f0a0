// Package index holds the field indexes gleaner-manager's controllers share on the manager's cache. An index can be
// registered on an informer only once, so controllers do not register them directly: they ask the manager's
// Indexes, which registers each index on first use.
package index

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodNodeName indexes pods by spec.nodeName; unbound pods are not in it. List with
// client.MatchingFields{index.PodNodeName: node} after Indexes.PodsByNode.
const PodNodeName = "spec.nodeName"

// Indexes registers the shared indexes on one manager's cache. It is safe for concurrent use; a manager has one.
type Indexes struct {
	indexer client.FieldIndexer

	mu   sync.Mutex
	done map[string]bool
}

// New returns the Indexes of the cache behind indexer (mgr.GetFieldIndexer()).
func New(indexer client.FieldIndexer) *Indexes {
	return &Indexes{indexer: indexer, done: map[string]bool{}}
}

// PodsByNode makes sure pods are indexed by PodNodeName. It must be called before the manager starts (from
// SetupWithManager); calling it again is a no-op.
func (x *Indexes) PodsByNode(ctx context.Context) error {
	return x.once(ctx, &corev1.Pod{}, PodNodeName, func(obj client.Object) []string {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			return nil
		}
		return []string{pod.Spec.NodeName}
	})
}

func (x *Indexes) once(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	key := fmt.Sprintf("%T/%s", obj, field)
	if x.done[key] {
		return nil
	}
	if err := x.indexer.IndexField(ctx, obj, field, extract); err != nil {
		return fmt.Errorf("indexing %T by %s: %w", obj, field, err)
	}
	x.done[key] = true
	return nil
}
