package colocation

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The service stalls for 200 ms, 300 ms into the run. Open loop, every request due in the stall's first 100 ms
// waits until it ends, so each of them is at least 100 ms late from its due time: 20 requests at 200/s. A
// generator that waited for each answer before sending the next (closed loop) would record one slow request.
func TestGeneratorCountsTheStallForEveryRequestDueInIt(t *testing.T) {
	var stall sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		stall.Lock()
		stall.Unlock() //nolint:staticcheck // an empty critical section: the handler waits while the test holds it
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()

	g := Generator{URL: srv.URL, Rate: 200, Client: &http.Client{Timeout: 5 * time.Second}}
	start := time.Now()
	stalled := make(chan time.Time, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		stall.Lock()
		stalled <- time.Now()
		time.Sleep(200 * time.Millisecond)
		stall.Unlock()
	}()
	samples, err := g.Run(context.Background(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stallStart := <-stalled
	if len(samples) != 200 {
		t.Fatalf("%d samples in 1 s at 200/s, want 200", len(samples))
	}
	slow := 0
	for _, s := range samples {
		if s.Err != "" {
			t.Fatalf("request due at +%s failed: %s", s.Due.Sub(start), s.Err)
		}
		if !s.Due.Before(stallStart) && s.Due.Before(stallStart.Add(100*time.Millisecond)) && s.Latency < 100*time.Millisecond {
			t.Errorf("request due at +%s, in the stall's first 100 ms, took %s from its due time, want at least 100ms",
				s.Due.Sub(start), s.Latency)
		}
		if s.Latency >= 100*time.Millisecond {
			slow++
		}
	}
	if slow < 19 {
		t.Errorf("%d requests at least 100 ms late, want at least the 19-20 due in the stall's first 100 ms", slow)
	}
	for i := 1; i < len(samples); i++ {
		if got := samples[i].Due.Sub(samples[i-1].Due); got != 5*time.Millisecond {
			t.Fatalf("request %d due %s after the one before, want 5ms (the rate's interval)", i, got)
		}
	}
}

// Failed requests are counted as errors, with the reason: an answer that is not 2xx, and a service that is not
// there.
func TestGeneratorRecordsErrors(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1)%4 == 0 {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}))
	g := Generator{URL: srv.URL, Rate: 100, Client: &http.Client{Timeout: 5 * time.Second}}
	samples, err := g.Run(context.Background(), 400*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	l := Summarize(samples)
	if l.Requests != 40 || l.Errors != 10 {
		t.Errorf("requests %d, errors %d; want 40 and every fourth (10)", l.Requests, l.Errors)
	}
	srv.Close()

	samples, err = g.Run(context.Background(), 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if l := Summarize(samples); l.Errors != l.Requests || l.Requests != 10 || l.P99 != 0 {
		t.Errorf("against a closed server: %+v, want 10 requests, all errors, no percentiles", l)
	}
}

// A bad rate is refused; a cancelled run stops with what it sent.
func TestGeneratorRateAndCancel(t *testing.T) {
	if _, err := (Generator{URL: "http://127.0.0.1:1/", Rate: 0}).Run(context.Background(), time.Second); err == nil {
		t.Error("rate 0 accepted")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	samples, err := Generator{URL: srv.URL, Rate: 100, Client: &http.Client{}}.Run(ctx, time.Hour)
	if err == nil || len(samples) == 0 || len(samples) > 50 {
		t.Errorf("cancelled after 100 ms of an hour: %d samples, error %v; want a few and the context's error", len(samples), err)
	}
}
