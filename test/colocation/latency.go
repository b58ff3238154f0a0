package colocation

import (
	"math"
	"slices"
	"time"
)

// Latency summarises samples: the percentiles are of the requests that succeeded, by nearest rank (the smallest
// latency at or above which no more than 1-q of them lie), so a p99.9 of 1,000 requests is the slowest one.
type Latency struct {
	// Requests counts every request, Errors those that failed.
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// P50, P99 and P999 (p99.9) and Max are in milliseconds; 0 when no request succeeded.
	P50  float64 `json:"p50Ms"`
	P99  float64 `json:"p99Ms"`
	P999 float64 `json:"p999Ms"`
	Max  float64 `json:"maxMs"`
}

// Summarize returns the Latency of samples.
func Summarize(samples []Sample) Latency {
	l := Latency{Requests: len(samples)}
	ok := make([]time.Duration, 0, len(samples))
	for _, s := range samples {
		if s.Err != "" {
			l.Errors++
			continue
		}
		ok = append(ok, s.Latency)
	}
	if len(ok) == 0 {
		return l
	}
	slices.Sort(ok)
	l.P50, l.P99, l.P999 = ms(rank(ok, 0.5)), ms(rank(ok, 0.99)), ms(rank(ok, 0.999))
	l.Max = ms(ok[len(ok)-1])
	return l
}

// rank is the nearest-rank q-quantile of sorted, which is not empty.
func rank(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Window is the latency of the requests due in [Start, Start+width) of a run.
type Window struct {
	// Start is the window's start.
	Start time.Time
	// Latency is of the requests due in it.
	Latency Latency
}

// Windows cuts samples (in due order) into windows of width from the first sample's due time; a window without
// requests is left out.
func Windows(samples []Sample, width time.Duration) []Window {
	var out []Window
	for i := 0; i < len(samples); {
		start := samples[0].Due.Add(samples[i].Due.Sub(samples[0].Due) / width * width)
		j := i
		for j < len(samples) && samples[j].Due.Before(start.Add(width)) {
			j++
		}
		out = append(out, Window{Start: start, Latency: Summarize(samples[i:j])})
		i = j
	}
	return out
}
