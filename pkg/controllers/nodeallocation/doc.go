// Package nodeallocation is gleaner-manager's controller that keeps, for every Node, a NodeAllocation whose status
// is the "Allocated resources" table of `kubectl describe node`: what the pods bound to the node request and limit,
// per resource, and those totals as percentages of the node's allocatable (package allocation does the counting).
//
// It watches Nodes through the manager's cache and pods through the manager's pod cache (package podcache), which
// keeps them by node and has worked out each pod's requests and limits when it arrived, so a reconcile reads one node
// and its own pods and never lists the cluster. Events that cannot change a summary are dropped before they are
// queued: node heartbeats and every other node update that leaves capacity and allocatable alone, and pod updates
// that change neither the pod's node, whether it counts (its phase), nor its requests and limits. The status is
// written only when the summary changed. A NodeAllocation is owned by its Node and deleted with it.
//
// Metrics: gleaner_node_allocated_requests_* and gleaner_node_allocated_limits_* (per node and resource, one family
// per unit: _cpu_cores, _bytes, _extended; the deprecated gleaner_node_allocated_requests and _limits mix them),
// gleaner_nodeallocation_reconcile_duration_seconds, gleaner_nodeallocation_status_writes_total and
// gleaner_nodeallocation_retries_total. docs/metrics.md lists them all.
package nodeallocation
