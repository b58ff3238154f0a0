package podcache

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Source is a controller's watch of the cache, for WatchesRawSource: every pod created or deleted, and every update
// changed reports true for, enqueues the node of the pod (both nodes, for a pod that moved). The controller waits for
// the cache's first list before it reconciles.
func (c *Cache) Source(changed func(old, new *Pod) bool) source.SyncingSource {
	return &nodeSource{cache: c, changed: changed}
}

type nodeSource struct {
	cache   *Cache
	changed func(old, new *Pod) bool
}

func (s *nodeSource) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.cache.subscribe(func(old, new *Pod) {
		if old != nil && new != nil && old.NodeName == new.NodeName && !s.changed(old, new) {
			return
		}
		if old != nil {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: old.NodeName}})
		}
		if new != nil && (old == nil || new.NodeName != old.NodeName) {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: new.NodeName}})
		}
	})
	return nil
}

func (s *nodeSource) WaitForSync(ctx context.Context) error { return s.cache.WaitForSync(ctx) }

func (s *nodeSource) String() string { return "podcache" }
