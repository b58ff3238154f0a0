package sloconfig

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// NodeChangedFunc reports whether what a controller derives for a node with these labels differs between two
// snapshots. old is nil at the first load, and every node then counts as changed. It must not modify either
// snapshot. ColocationChanged, NodeSLOChanged and NodeMetricChanged are the ones gleaner-manager's controllers use.
type NodeChangedFunc func(old, new *Snapshot, nodeLabels map[string]string) bool

// listRetry is how long NodeSource waits before listing the nodes again after a failed list.
const listRetry = time.Second

// NodeSource returns a controller-runtime source that enqueues the nodes a config change affects, for a controller
// whose reconcile.Request is a Node's name:
//
//	ctrl.NewControllerManagedBy(mgr).
//		For(&corev1.Node{}, ...).
//		WatchesRawSource(store.NodeSource(mgr.GetCache(), sloconfig.ColocationChanged)).
//		Complete(r)
//
// After every newly published snapshot it lists the Nodes through nodes (the manager's cache: no API request) and
// adds reconcile.Request{NamespacedName: {Name: node.Name}} for each node for which changed(seen, current, labels)
// is true, where seen is the snapshot this source handled last (nil before the first). Snapshots published in a
// burst coalesce: the source compares the last one it handled with the newest, which enqueues exactly the nodes
// whose derived strategy differs between the two. A change that only rewrites a key's text, or a rejected edit,
// enqueues nothing.
//
// The reconciler reads Store.Current itself; it never receives a snapshot through the queue. A failed list is
// retried every second until it succeeds or the controller stops.
func (s *Store) NodeSource(nodes client.Reader, changed NodeChangedFunc) source.Source {
	return &nodeSource{store: s, nodes: nodes, changed: changed}
}

type nodeSource struct {
	store   *Store
	nodes   client.Reader
	changed NodeChangedFunc
}

var _ source.Source = &nodeSource{}

// Start subscribes to the store and returns at once; the work happens in a goroutine that ends with ctx.
func (n *nodeSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	wake, cancel := n.store.Subscribe()
	go func() {
		defer cancel()
		logger := log.FromContext(ctx).WithName("sloconfig-node-source")
		var seen *Snapshot
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
			cur := n.store.Current()
			if cur == nil || cur == seen {
				continue
			}
			for {
				added, err := n.enqueue(ctx, q, seen, cur)
				if err == nil {
					logger.V(1).Info("config changed", "from", versionOf(seen), "to", cur.Version(), "nodesEnqueued", added)
					break
				}
				logger.Error(err, "listing nodes for a config change; retrying", "version", cur.Version())
				select {
				case <-ctx.Done():
					return
				case <-time.After(listRetry):
				}
			}
			seen = cur
		}
	}()
	return nil
}

func (n *nodeSource) enqueue(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], old, cur *Snapshot) (int, error) {
	var list corev1.NodeList
	// Only labels are read, so the cache's objects are used as they are.
	if err := n.nodes.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	added := 0
	for i := range list.Items {
		node := &list.Items[i]
		if n.changed(old, cur, node.Labels) {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: node.Name}})
			added++
		}
	}
	return added, nil
}

func versionOf(s *Snapshot) uint64 {
	if s == nil {
		return 0
	}
	return s.version
}
