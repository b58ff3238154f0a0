package v1alpha1

import "time"

// Upper bounds of the durations and counts of NodeSLO and NodeMetric specs (and of the slo-controller-config fields
// they come from). Without them a value that passes every "at least 1" check overflows time.Duration once
// multiplied into nanoseconds (a report interval of 10^10 seconds is a negative duration: a timer that fires at once,
// a busy loop) or asks for something the agent never delivers (a window longer than its metric cache keeps: no
// report at all). The CRD markers carry the same numbers (a Go constant cannot be a marker argument); a test in
// this package checks that the generated schemas and these constants agree. docs/configuration.md says why each
// bound is where it is.
const (
	// MaxMetricAggregateDurationSeconds bounds NodeMetric spec.metricCollectPolicy.aggregateDurationSeconds: the
	// agent's metric cache keeps one hour by default, and a window it cannot cover is never reported.
	MaxMetricAggregateDurationSeconds int64 = 3600
	// MaxMetricReportIntervalSeconds bounds spec.metricCollectPolicy.reportIntervalSeconds: one hour, far beyond
	// degradeTimeMinutes' default of 15 (the manager also refuses an interval not shorter than the degrade time).
	MaxMetricReportIntervalSeconds int64 = 3600
	// MaxAggregateDuration bounds each window of spec.metricCollectPolicy.nodeAggregatePolicy.durations, for the
	// same reason as MaxMetricAggregateDurationSeconds.
	MaxAggregateDuration = time.Hour
	// MaxAggregateDurations bounds how many windows nodeAggregatePolicy.durations lists: each is a statistic per
	// resource in every report.
	MaxAggregateDurations = 10
	// MaxCPUEvictTimeWindowSeconds bounds spec.resourceUsedThresholdWithBE.cpuEvictTimeWindowSeconds: the window
	// is read from the same one-hour metric cache.
	MaxCPUEvictTimeWindowSeconds int64 = 3600
	// MaxPressureEvictWindowSeconds bounds spec.resourceUsedThresholdWithBE.pressureEvictWindowSeconds: the stall is
	// averaged from the metric cache's per-second ring, which spans 300 s by default.
	MaxPressureEvictWindowSeconds int64 = 300
	// MaxMemoryEvictHoldSeconds bounds spec.resourceUsedThresholdWithBE.memoryEvictHoldSeconds: an hour. A node
	// that has been under its eviction threshold that long has long shown what it can offer again.
	MaxMemoryEvictHoldSeconds int64 = 3600
	// MaxMemoryPressurePods bounds NodeMetric status.memoryPressure.evictedPods: the pods of a node (the agent
	// lists at most as many in status.podUsages), whatever the episode's length.
	MaxMemoryPressurePods = 1000
	// MaxCFSQuotaBurstPeriodSeconds bounds spec.cpuBurstStrategy.cfsQuotaBurstPeriodSeconds: a burst allowed to
	// last longer than a day is no limit; -1 says that explicitly.
	MaxCFSQuotaBurstPeriodSeconds int64 = 86400
	// MaxCPUBurstPercent bounds cpuBurstPercent and cfsQuotaBurstPercent: a quota a hundred times the limit no
	// longer limits anything, and the bound keeps quota x percent far from overflowing.
	MaxCPUBurstPercent int64 = 10000
)
