package main

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRecorderStats(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name    string
		window  int
		samples []time.Duration
		want    Stats
	}{
		{name: "empty", window: 4, want: Stats{}},
		{name: "one", window: 4, samples: []time.Duration{ms(3)}, want: Stats{Count: 1, P50: 3, P90: 3, P99: 3, Max: 3}},
		{
			name: "hundred", window: 100,
			samples: func() []time.Duration {
				var s []time.Duration
				for i := 100; i >= 1; i-- { // added in reverse: order must not matter
					s = append(s, ms(i))
				}
				return s
			}(),
			want: Stats{Count: 100, P50: 50, P90: 90, P99: 99, Max: 100},
		},
		{
			name: "window keeps the newest", window: 2,
			samples: []time.Duration{ms(100), ms(1), ms(2)},
			want:    Stats{Count: 2, P50: 1, P90: 2, P99: 2, Max: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecorder(tt.window)
			for _, s := range tt.samples {
				r.Add(s)
			}
			if diff := cmp.Diff(tt.want, r.Stats()); diff != "" {
				t.Errorf("Stats() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecorderConcurrent(t *testing.T) {
	r := newRecorder(64)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				r.Add(time.Millisecond)
				_ = r.Stats()
			}
		})
	}
	wg.Wait()
	if got := r.Stats().Count; got != 64 {
		t.Errorf("Count = %d after 800 adds into a window of 64, want 64", got)
	}
}
