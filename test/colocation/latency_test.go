package colocation

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func samplesOf(start time.Time, every time.Duration, latencies ...time.Duration) []Sample {
	out := make([]Sample, len(latencies))
	for i, l := range latencies {
		out[i] = Sample{Due: start.Add(time.Duration(i) * every), Latency: l}
	}
	return out
}

// 1..1000 ms: nearest rank gives p50 500, p99 990, p99.9 999; the failed requests are counted, not ranked.
func TestSummarize(t *testing.T) {
	var ls []time.Duration
	for i := 1000; i >= 1; i-- { // out of order: Summarize sorts
		ls = append(ls, time.Duration(i)*time.Millisecond)
	}
	s := samplesOf(time.Unix(0, 0), time.Millisecond, ls...)
	s = append(s, Sample{Latency: time.Hour, Err: "timeout"}, Sample{Latency: time.Hour, Err: "refused"})
	want := Latency{Requests: 1002, Errors: 2, P50: 500, P99: 990, P999: 999, Max: 1000}
	if diff := cmp.Diff(want, Summarize(s)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Latency{Requests: 1, P50: 7, P99: 7, P999: 7, Max: 7}, Summarize(samplesOf(time.Unix(0, 0), 0, 7*time.Millisecond))); diff != "" {
		t.Errorf("one request (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Latency{}, Summarize(nil)); diff != "" {
		t.Errorf("no requests (-want +got):\n%s", diff)
	}
}

// Windows of 1 s over requests every 400 ms: [0, 0.4, 0.8], [1.2, 1.6], [2.0, 2.4, 2.8] by due time.
func TestWindows(t *testing.T) {
	start := time.Unix(100, 0)
	ms := time.Millisecond
	s := samplesOf(start, 400*ms, 1*ms, 2*ms, 3*ms, 4*ms, 5*ms, 6*ms, 7*ms, 8*ms)
	got := Windows(s, time.Second)
	want := []Window{
		{Start: start, Latency: Latency{Requests: 3, P50: 2, P99: 3, P999: 3, Max: 3}},
		{Start: start.Add(time.Second), Latency: Latency{Requests: 2, P50: 4, P99: 5, P999: 5, Max: 5}},
		{Start: start.Add(2 * time.Second), Latency: Latency{Requests: 3, P50: 7, P99: 8, P999: 8, Max: 8}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := Windows(nil, time.Second); len(got) != 0 {
		t.Errorf("no samples: %v", got)
	}
}
