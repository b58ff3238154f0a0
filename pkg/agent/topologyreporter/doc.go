// Package topologyreporter publishes the node's NodeResourceTopology (topology.node.k8s.io/v1alpha2): one zone per
// NUMA node, named node-<id> and typed Node, with the zone's cpu and memory. gleaner-manager's node-resource
// framework reads it to split batch resources per NUMA zone, so zone-aware batch works with Gleaner alone.
//
// Per zone and resource (CPU in millicores, memory in bytes), with the Node's status.capacity C and
// status.allocatable A, and R the requests of the node's pods that have not ended:
//
//	capacity    = the zone's online CPUs (devices/system/node/nodeN/cpulist) and MemTotal (nodeN/meminfo)
//	allocatable = floor(capacity x A / C)
//	available   = max(allocatable - floor(capacity x R / C), 0)
//
// allocatable is the node's allocatable split over the zones in proportion to their capacity: the share the
// manager's zone split takes away too, which attributes the node's reservation (C - A) to zones by capacity. available
// is allocatable less the zone's share of the pods' requests, what the API documents (allocatable minus what running
// pods reserve) and what a topology-aware scheduler compares a new pod's requests with; the agent does not know which
// zone a pod's CPUs and memory come from, so the requests are spread like the reservation.
//
// The reporter owns the cpu and memory entries of the Node zones and the zone list; other resources in a zone (the
// manager writes kubernetes.io/batch-* there) and zones of other types are kept as they are. It writes only when
// that content changed.
package topologyreporter
