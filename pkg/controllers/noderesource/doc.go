// Package noderesource is the controller that publishes reclaimed resources (kubernetes.io/batch-*,
// kubernetes.io/mid-*) on nodes through the node-resource framework (package framework) and its plugins (packages
// under plugins/).
//
// Per node, a reconcile reads the Node, its pods (package podcache), its NodeMetric, its NodeResourceTopology when the
// cluster has that CRD, and the node's merged colocation strategy; runs the plugins' stages; and writes the node
// status (resources), only when a plugin's NeedSync asks for it, or a value that must reach the node at once moved
// at all (framework.ResourceItem.Urgent: batch-memory and mid-memory while the NodeMetric reports memory pressure,
// and their first change after it), or the last write is older than
// updateTimeThresholdSeconds and the values moved, or the node still carries the explanation annotation of an
// earlier manager (which the write removes), or the node is degraded and its explanation does not say so yet (a
// node that never published, or one degraded by a newer report: only the explanation is written then, the patch
// being empty). The write is a merge patch of the node status subresource carrying only
// what changed, so it never conflicts with the kubelet. After a write, the derivation goes to the node's
// NodeResourceExplanation through a queue and client of their own (explanation.go), so that the Node carries only
// what the scheduler needs and the explanation never holds up a Node write.
//
// It reconciles on node changes that matter (labels, reservation annotations, capacity, allocatable of other resources), NodeMetric status
// updates, NodeResourceTopology changes, pod creations, deletions and changes of node, phase, priority or requests,
// config changes (affected nodes only), and again when a node's NodeMetric goes stale or its forced-update time comes,
// so degradation happens even when nothing else does: a reconcile returns RequeueAfter up to the earlier of the two.
//
// That delay is measured on the injected clock, not only computed from it: the controller's workqueue is
// client-go's rate-limited queue built on the same clock (controller.Options.NewQueue), so a test with a fake clock
// re-reconciles a node whose NodeMetric goes stale by stepping the clock. This replaces an own resync loop (a
// Runnable with a ticker feeding a channel source, and a flag for its period) with what controller-runtime has for
// it. It does without controller-runtime's priority queue (its clock cannot be injected), as every controller of
// gleaner-manager now does (manager.ControllerConfig: it can deadlock on shutdown); its gain (live events before the
// initial list at start-up) matters little to a controller that must visit every node anyway.
package noderesource
