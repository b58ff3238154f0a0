// Package pressureevict is the QoS plugin that evicts best-effort pods, then mid-tier pods, when the services stall:
// when the share of time a protected pod's tasks waited for memory (or, on cgroup v2, for a CPU), as the kernel's
// pressure stall information measures it, stays at or above memoryEvictPressurePercent (cpuEvictPressurePercent)
// of the NodeSLO over pressureEvictWindowSeconds. The usage thresholds of memoryevict and cpusuppress act on how
// full the node is; a service can stall well before that (page cache reclaimed under a parent's limit, a memory
// bandwidth or a run queue shared with batch work), and the stall is what its latency feels.
//
// The stall is the psi collector's: each pod's own on cgroup v2, the node's on v1 (which has no per-cgroup
// pressure). One pod goes at a time, in qosmanager.SortForEviction's order; the next is judged only once the one
// before is gone and a whole window of stall measured after it. docs/qos.md has the knobs, what counts as a service's
// stall, and the proof on a real kernel.
package pressureevict
