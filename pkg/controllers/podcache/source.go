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
	return c.SourceFunc(func(old, new *Pod) []reconcile.Request {
		if old != nil && new != nil && old.NodeName == new.NodeName && !changed(old, new) {
			return nil
		}
		var reqs []reconcile.Request
		if old != nil {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: old.NodeName}})
		}
		if new != nil && (old == nil || new.NodeName != old.NodeName) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: new.NodeName}})
		}
		return reqs
	})
}

// SourceFunc is a controller's watch of the cache that enqueues what requests returns for each change: old nil for
// a new pod, new nil for one gone, both for an update. requests runs on the reflector's goroutine, under no lock of
// the cache, and must not block. The controller waits for the cache's first list before it reconciles.
func (c *Cache) SourceFunc(requests func(old, new *Pod) []reconcile.Request) source.SyncingSource {
	return &funcSource{cache: c, requests: requests}
}

type funcSource struct {
	cache    *Cache
	requests func(old, new *Pod) []reconcile.Request
}

func (s *funcSource) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.cache.subscribe(func(old, new *Pod) {
		for _, r := range s.requests(old, new) {
			q.Add(r)
		}
	})
	return nil
}

func (s *funcSource) WaitForSync(ctx context.Context) error { return s.cache.WaitForSync(ctx) }

func (s *funcSource) String() string { return "podcache" }
