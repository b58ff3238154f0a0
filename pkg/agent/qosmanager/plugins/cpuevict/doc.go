// Package cpuevict is the QoS plugin that evicts best-effort pods whose CPU satisfaction stays low (Koordinator's
// CPU-satisfaction eviction): when CPU suppression has squeezed them so far that their real CPU limit is a small
// share of what they requested, while they use most of that limit, some of them go so that the others get enough.
//
// Over the last cpuEvictTimeWindowSeconds (ending with the newest sample), from the beresource collector's series:
//
//	satisfaction = avg(be_cpu_real_limit) / avg(be_cpu_request)
//	utilisation  = avg(be_cpu_usage) / avg(be_cpu_real_limit)
//
// Eviction starts when satisfaction < cpuEvictBESatisfactionLowerPercent and utilisation >=
// cpuEvictBEUsageThresholdPercent, and goes on, in the order qosmanager.SortForEviction gives (lowest priority,
// then largest CPU use over the window), until the projected satisfaction
//
//	newest be_cpu_real_limit / requests of the best-effort pods that stay
//
// is at least cpuEvictBESatisfactionUpperPercent. Pods already on their way out (qosmanager.Evictions) do not
// count among those that stay. CPU eviction is off unless the strategy is enabled and both satisfaction percents
// are set. docs/qos.md explains the knobs and the reaction time.
package cpuevict
