package reporter

import (
	"fmt"
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
	// Adjusted says, one line each, which values of the spec were out of range and what was used instead; empty
	// for a spec within the CRD's bounds.
	Adjusted []string
}

// PolicyOf returns the collect policy of nm's spec, each unset field taken from the colocation strategy's
// defaults (300 s, 60 s, 5m/10m/15m). nm may be nil.
//
// The spec is not trusted to be within the CRD's bounds (an object stored under an older schema, or written with
// the schema bypassed): a value is clamped to its range before it becomes a time.Duration, so 10^10 seconds is an
// hour, not an overflowed negative duration that would fire the report timer at once, over and over. A window
// outside (0, 1h] is left out rather than reported under a duration nobody asked for, and only the first
// MaxAggregateDurations windows are kept. Adjusted lists each such change.
func PolicyOf(nm *slov1alpha1.NodeMetric) Policy {
	p := Policy{
		AggregateDuration: time.Duration(slov1alpha1.DefaultMetricAggregateDurationSeconds) * time.Second,
		ReportInterval:    time.Duration(slov1alpha1.DefaultMetricReportIntervalSeconds) * time.Second,
	}
	durations := slov1alpha1.DefaultAggregateDurations()
	if nm != nil && nm.Spec.CollectPolicy != nil {
		cp := nm.Spec.CollectPolicy
		if v := cp.AggregateDurationSeconds; v != nil && *v > 0 {
			p.AggregateDuration = p.seconds("aggregateDurationSeconds", *v, slov1alpha1.MaxMetricAggregateDurationSeconds)
		}
		if v := cp.ReportIntervalSeconds; v != nil && *v > 0 {
			p.ReportInterval = p.seconds("reportIntervalSeconds", *v, slov1alpha1.MaxMetricReportIntervalSeconds)
		}
		if cp.NodeAggregatePolicy != nil {
			durations = cp.NodeAggregatePolicy.Durations
		}
	}
	for _, dur := range durations {
		switch {
		case dur.Duration <= 0:
		case dur.Duration > slov1alpha1.MaxAggregateDuration:
			p.Adjusted = append(p.Adjusted, fmt.Sprintf("nodeAggregatePolicy.durations: %s is longer than %s, left out", dur.Duration, slov1alpha1.MaxAggregateDuration))
		case len(p.Durations) == slov1alpha1.MaxAggregateDurations:
			p.Adjusted = append(p.Adjusted, fmt.Sprintf("nodeAggregatePolicy.durations: more than %d windows, %s left out", slov1alpha1.MaxAggregateDurations, dur.Duration))
		default:
			p.Durations = append(p.Durations, dur.Duration)
		}
	}
	return p
}

// seconds is v seconds, held at most hi seconds (v > 0) before it is multiplied into a time.Duration.
func (p *Policy) seconds(field string, v, hi int64) time.Duration {
	if v > hi {
		p.Adjusted = append(p.Adjusted, fmt.Sprintf("%s: %d is above %d, %d used", field, v, hi, hi))
		v = hi
	}
	return time.Duration(v) * time.Second
}
