// Package memoryevict is the QoS plugin that evicts best-effort pods when the node's memory use passes
// memoryEvictThresholdPercent of the NodeSLO, until the projected use is under memoryEvictLowerPercent (Koordinator's
// memory eviction).
//
// The node's use is MemTotal - MemAvailable of /proc/meminfo, read on every run (the same figure the collector
// stores as node_memory_usage, but fresh); the pods' use is their latest pod_memory_usage sample. Pods go in the
// order qosmanager.SortForEviction gives (lowest priority, then largest memory use), each one's use taken off the
// projection once the Evictor accepts it; pods already on their way out (qosmanager.Evictions) are taken off first.
//
// It also keeps the node in memory pressure (pressure.go): from the first run above the threshold until
// memoryEvictHoldSeconds after the last one, the NodeMetric's status.memoryPressure says so and lists the pods
// evicted for it, each written before its eviction is sent, and gleaner-manager offers batch and mid pods no more
// memory on the node than those already there request, so that an evicted pod's replacement is not placed on the
// node only to be evicted again.
//
// docs/qos.md explains the formula, the knobs, the memory pressure and the reaction time.
package memoryevict
