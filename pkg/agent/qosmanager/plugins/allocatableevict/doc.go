// Package allocatableevict is the QoS plugin that evicts batch and mid pods when the pods of a tier on the node
// request more of the tier's resource than the node now offers (Koordinator's CPU and memory allocatable eviction).
//
// The tiers' resources — kubernetes.io/batch-cpu, batch-memory, mid-cpu and mid-memory — are what gleaner-manager
// publishes in node.status.allocatable from the services' usage and predicted peak. When the services grow, the
// allocatable shrinks, but the pods admitted against the larger figure stay: the node then promises the tier more
// than it has. For each of the four accounts on its own, when the requests of the node's pods (neither ended nor
// terminating) are above allocatableEvictThresholdPercent of the allocatable, the plugin evicts pods requesting that
// resource, in the order qosmanager.SortForEviction gives (best-effort before mid, lowest priority, then largest
// request), until the projected requests are at or below the lower percent. It reads only the states informer's
// objects. docs/qos.md explains the formula and the knobs.
package allocatableevict
