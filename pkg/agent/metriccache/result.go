package metriccache

import (
	"math"
	"slices"
	"time"
)

// Aggregation is a statistic of a series over a window.
type Aggregation string

// The aggregations Result.Value computes.
const (
	Avg   Aggregation = "avg"
	P50   Aggregation = "p50"
	P90   Aggregation = "p90"
	P95   Aggregation = "p95"
	P99   Aggregation = "p99"
	Last  Aggregation = "last"
	Count Aggregation = "count"
)

// Result is the samples of one series in a window. The zero Result has no samples.
type Result struct {
	// Count is the number of samples in the window.
	Count int
	// First and Last are the start of the time buckets of the oldest and newest sample.
	First, Last time.Time
	// Coverage is how far back the samples reach, as a share of the window: (window end - First) / window length,
	// at most 1. A series that started (or an agent that restarted) halfway through the window has 0.5. It does not
	// count gaps between samples; Count does.
	Coverage float64
	// Resolution is the step of the ring the samples came from: Config.Step, or Config.CoarseStep (samples are
	// then bucket averages) for windows longer than the fine ring.
	Resolution time.Duration

	values []float64 // oldest first until a percentile sorts them
	sorted bool
	sum    float64
	last   float64
}

// Value is the aggregation agg of the samples; NaN when there are none (or agg is unknown). Percentiles are
// nearest-rank: the smallest sample with at least p% of the samples at or below it.
func (r *Result) Value(agg Aggregation) float64 {
	if r.Count == 0 {
		return math.NaN()
	}
	switch agg {
	case Avg:
		return r.sum / float64(r.Count)
	case Last:
		return r.last
	case Count:
		return float64(r.Count)
	case P50:
		return r.percentile(50)
	case P90:
		return r.percentile(90)
	case P95:
		return r.percentile(95)
	case P99:
		return r.percentile(99)
	}
	return math.NaN()
}

// Values appends the samples in the window to dst and returns it: oldest first, empty buckets skipped, except that
// after a percentile was asked for they come sorted. Callers that need the samples themselves (peak prediction's
// histograms) read them here instead of one aggregation.
func (r *Result) Values(dst []float64) []float64 { return append(dst, r.values...) }

func (r *Result) percentile(p float64) float64 {
	if !r.sorted {
		slices.Sort(r.values)
		r.sorted = true
	}
	i := int(math.Ceil(p/100*float64(len(r.values)))) - 1
	return r.values[max(i, 0)]
}
