package reporter

import (
	"time"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// Policy is a NodeMetric's collect policy with the defaults filled in.
type Policy struct {
	// AggregateDuration is the window of nodeUsage, systemUsage and the pods' and host applications' usage.
	AggregateDuration time.Duration
	// ReportInterval is how often the status is written.
	ReportInterval time.Duration
	// Durations are the windows of the aggregated usages.
	Durations []time.Duration
}

// PolicyOf returns the collect policy of nm's spec, each unset field taken from the colocation strategy's
// defaults (300 s, 60 s, 5m/10m/15m). nm may be nil.
func PolicyOf(nm *slov1alpha1.NodeMetric) Policy {
	p := Policy{
		AggregateDuration: time.Duration(slov1alpha1.DefaultMetricAggregateDurationSeconds) * time.Second,
		ReportInterval:    time.Duration(slov1alpha1.DefaultMetricReportIntervalSeconds) * time.Second,
	}
	durations := slov1alpha1.DefaultAggregateDurations()
	if nm != nil && nm.Spec.CollectPolicy != nil {
		cp := nm.Spec.CollectPolicy
		if cp.AggregateDurationSeconds != nil && *cp.AggregateDurationSeconds > 0 {
			p.AggregateDuration = time.Duration(*cp.AggregateDurationSeconds) * time.Second
		}
		if cp.ReportIntervalSeconds != nil && *cp.ReportIntervalSeconds > 0 {
			p.ReportInterval = time.Duration(*cp.ReportIntervalSeconds) * time.Second
		}
		if cp.NodeAggregatePolicy != nil {
			durations = cp.NodeAggregatePolicy.Durations
		}
	}
	for _, dur := range durations {
		if dur.Duration > 0 {
			p.Durations = append(p.Durations, dur.Duration)
		}
	}
	return p
}
