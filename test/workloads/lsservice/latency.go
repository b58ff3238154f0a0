package main

import (
	"slices"
	"sync"
	"time"
)

// Stats summarise the latencies in a recorder's window.
type Stats struct {
	// Count is how many samples the window holds.
	Count int `json:"count"`
	// P50, P90, P99 and Max are the latency percentiles, in milliseconds.
	P50 float64 `json:"p50Ms"`
	P90 float64 `json:"p90Ms"`
	P99 float64 `json:"p99Ms"`
	Max float64 `json:"maxMs"`
}

// recorder keeps the last len(samples) latencies. It is safe for concurrent use.
type recorder struct {
	mu      sync.Mutex
	samples []time.Duration
	next    int
	full    bool
}

func newRecorder(window int) *recorder { return &recorder{samples: make([]time.Duration, window)} }

// Add records one latency, replacing the oldest when the window is full.
func (r *recorder) Add(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples[r.next] = d
	r.next = (r.next + 1) % len(r.samples)
	r.full = r.full || r.next == 0
}

// Stats returns the percentiles of the window (nearest rank); zero Stats for an empty window.
func (r *recorder) Stats() Stats {
	r.mu.Lock()
	n := r.next
	if r.full {
		n = len(r.samples)
	}
	s := slices.Clone(r.samples[:n])
	r.mu.Unlock()
	if len(s) == 0 {
		return Stats{}
	}
	slices.Sort(s)
	rank := func(p float64) float64 {
		i := int(p*float64(len(s))+0.999999) - 1
		return ms(s[max(0, min(i, len(s)-1))])
	}
	return Stats{Count: len(s), P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
