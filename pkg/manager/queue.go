package manager

import (
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
)

// ControllerConfig is the configuration every controller of gleaner-manager gets: client-go's rate-limited
// workqueue, not controller-runtime's priority queue.
//
// controller-runtime v0.24's priority queue can deadlock when it shuts down (kubernetes-sigs/controller-runtime
// issue 3538, fixed in v0.25, which needs the Kubernetes 1.37 libraries): a worker waiting for an item leaves on
// ShutDown without taking one, the queue's hand-out goroutine then blocks forever sending it one while holding the
// queue's lock, and a controller's other worker that finishes its reconcile blocks on that lock in Done. The
// controller never stops, and the manager's shutdown runs into GracefulShutdownTimeout and fails. Every controller
// with more than one worker (nodeslo, nodemetric, nodeallocation, the explanation writer) could hit it at each stop.
// What the priority queue adds, live events handled before those of the initial list, matters little to
// controllers that visit every node at start anyway. test/testenv gives test managers the same configuration.
//
// cacheSyncTimeout is how long a controller waits for its sources' first lists before it fails the manager
// (--cache-sync-timeout; controller-runtime's own default, 2 minutes, was shorter than the first list of a
// 10,000-node cluster's pods on a loaded API server: docs/benchmarks.md).
func ControllerConfig(cacheSyncTimeout time.Duration) config.Controller {
	return config.Controller{UsePriorityQueue: ptr.To(false), CacheSyncTimeout: cacheSyncTimeout}
}
