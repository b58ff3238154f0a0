package colocation

import (
	"math"
	"slices"
	"time"
)

// Latency summarises samples: the percentiles are of the requests that succeeded or timed out (a timeout counts at
// its latency, as its user waited that long), by nearest rank (the smallest latency at or above which no more than
// 1-q of them lie), so a p99.9 of 1,000 requests is the slowest one.
type Latency struct {
	// Requests counts every request, Errors those that failed, Timeouts those of them that timed out.
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	Timeouts int `json:"timeouts,omitempty"`
	// P50, P99 and P999 (p99.9) and Max are in milliseconds; 0 when no request succeeded.
	P50  float64 `json:"p50Ms"`
	P99  float64 `json:"p99Ms"`
	P999 float64 `json:"p999Ms"`
	Max  float64 `json:"maxMs"`
	// Segments says where the time went, where the samples say (nil otherwise).
	Segments *Breakdown `json:"segments,omitempty"`
}

// Summarize returns the Latency of samples.
func Summarize(samples []Sample) Latency {
	l := Latency{Requests: len(samples)}
	ok := make([]time.Duration, 0, len(samples))
	for _, s := range samples {
		if s.Err != "" {
			l.Errors++
		}
		if s.Timeout {
			l.Timeouts++
		}
		if ranked(s) {
			ok = append(ok, s.Latency)
		}
	}
	if len(ok) == 0 {
		return l
	}
	slices.Sort(ok)
	l.P50, l.P99, l.P999 = ms(rank(ok, 0.5)), ms(rank(ok, 0.99)), ms(rank(ok, 0.999))
	l.Max = ms(ok[len(ok)-1])
	l.Segments = breakdown(samples, rank(ok, 0.99))
	return l
}

// Segments splits a request's latency, in milliseconds, into where it went: from its due time to its sending (the
// generator's own delay), from sending to the handler's start (the network, the service's accept, read and wait
// for a CPU), the handler itself, and from the handler's end to the body's end (the answer's way back and the
// client's wake-up). The four add up to the latency. HandlerCPU is the part of Handler its thread ran on a CPU
// (where the service says); the rest of Handler the handler was off the CPU, runnable behind another task or
// blocked, so a handler that grows by its CPU time ran slower, and one that grows by the rest waited.
type Segments struct {
	DueToSent     float64 `json:"dueToSentMs"`
	SentToHandler float64 `json:"sentToHandlerMs"`
	Handler       float64 `json:"handlerMs"`
	HandlerToDone float64 `json:"handlerToDoneMs"`
	HandlerCPU    float64 `json:"handlerCpuMs,omitempty"`
}

// segmentCount is how many values a Segments holds.
const segmentCount = 5

// values are s's fields in their order.
func (s Segments) values() [segmentCount]float64 {
	return [segmentCount]float64{s.DueToSent, s.SentToHandler, s.Handler, s.HandlerToDone, s.HandlerCPU}
}

// segmentsOfValues is the Segments of values in values' order.
func segmentsOfValues(v [segmentCount]float64) Segments {
	return Segments{DueToSent: v[0], SentToHandler: v[1], Handler: v[2], HandlerToDone: v[3], HandlerCPU: v[4]}
}

// Breakdown is the segments of a phase's requests.
type Breakdown struct {
	// Median is each segment's median over the requests that succeeded; Tail each segment's mean over those of them
	// at or above the p99, the slowest percent.
	Median Segments `json:"median"`
	Tail   Segments `json:"tail"`
}

// breakdown is the segments of the samples that succeeded and carry the service's timestamps, with p99 the
// latency at or above which the tail lies; nil when none carries them.
func breakdown(samples []Sample, p99 time.Duration) *Breakdown {
	var all [segmentCount][]float64
	var tail [segmentCount]float64
	tailN := 0
	for _, s := range samples {
		if s.Err != "" || s.Sent.IsZero() || s.HandlerStart.IsZero() || s.HandlerEnd.IsZero() {
			continue
		}
		seg := segmentsOf(s).values()
		for i, v := range seg {
			all[i] = append(all[i], v)
		}
		if s.Latency >= p99 {
			for i, v := range seg {
				tail[i] += v
			}
			tailN++
		}
	}
	if len(all[0]) == 0 {
		return nil
	}
	var med [segmentCount]float64
	for i, v := range all {
		slices.Sort(v)
		med[i] = v[(len(v)-1)/2]
	}
	b := &Breakdown{Median: segmentsOfValues(med)}
	if tailN > 0 {
		for i := range tail {
			tail[i] /= float64(tailN)
		}
		b.Tail = segmentsOfValues(tail)
	}
	return b
}

// segmentsOf is one request's segments.
func segmentsOf(s Sample) Segments {
	done := s.Due.Add(s.Latency)
	return Segments{
		DueToSent:     ms(s.Sent.Sub(s.Due)),
		SentToHandler: ms(s.HandlerStart.Sub(s.Sent)),
		Handler:       ms(s.HandlerEnd.Sub(s.HandlerStart)),
		HandlerToDone: ms(done.Sub(s.HandlerEnd)),
		HandlerCPU:    ms(s.HandlerCPU),
	}
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
