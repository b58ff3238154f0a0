// Package retry is how gleaner-manager's per-node controllers retry a node whose reconcile failed.
package retry

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	// First is a node's first retry after a failure; each further failure in a row doubles the wait.
	First = 5 * time.Millisecond
	// Max is the longest a node waits between retries.
	Max = time.Minute
)

// PerNode is the rate limiter of a controller that reconciles one node at a time: each node's retries back off on
// their own, from First to Max, and nothing limits the retries of the controller as a whole.
//
// controller-runtime's default limiter also shares one bucket of 10 retries a second (burst 100) among all nodes, and
// lets one node's back-off grow to 16 minutes. When an API-server outage fails a pass over 10,000 nodes, that bucket
// spreads their retries over 17 minutes after the API server is back (docs/benchmarks.md, "10,000 nodes: start,
// failover, outage"). What the retries cost the API server is bounded anyway, by the manager's client
// (--kube-api-qps).
func PerNode() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](First, Max)
}
