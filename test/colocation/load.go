package colocation

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Generator sends GET requests to URL at a constant Rate, open loop: request i is due at start + i/Rate whatever
// happened to the requests before it, and its latency counts from that due time. A service that stalls for 100 ms
// therefore shows as the latency of every request due in those 100 ms, as its users would see it, and not as one
// slow request followed by a pause in the load (coordinated omission).
type Generator struct {
	// URL is what each request gets.
	URL string
	// Rate is requests per second; it must be positive.
	Rate float64
	// Client sends the requests; its Timeout bounds a request (one that times out counts as an error).
	Client *http.Client
}

// Sample is one request's outcome.
type Sample struct {
	// Due is when the request was due to be sent.
	Due time.Time
	// Latency is from Due to the end of the response body (or to the error).
	Latency time.Duration
	// Err is why the request failed ("" when it got a 2xx answer and all of its body).
	Err string
}

// Run sends requests for d and returns one sample per request due in that time, in due order, once every request
// has ended. A cancelled ctx stops it early, with the samples of the requests sent so far and ctx's error.
func (g Generator) Run(ctx context.Context, d time.Duration) ([]Sample, error) {
	if g.Rate <= 0 {
		return nil, fmt.Errorf("load generator: rate %v is not positive", g.Rate)
	}
	interval := time.Duration(float64(time.Second) / g.Rate)
	n := int(d / interval)
	samples := make([]Sample, n)
	var wg sync.WaitGroup
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	var err error
	sent := 0
	for ; sent < n; sent++ {
		due := start.Add(time.Duration(sent) * interval)
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-timer.C:
			}
			if err != nil {
				break
			}
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			samples[i] = g.send(ctx, due)
		}(sent)
	}
	wg.Wait()
	return samples[:sent], err
}

// send makes one request due at due.
func (g Generator) send(ctx context.Context, due time.Time) Sample {
	s := Sample{Due: due}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.URL, nil)
	if err == nil {
		var resp *http.Response
		if resp, err = g.Client.Do(req); err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if err == nil && (resp.StatusCode < 200 || resp.StatusCode > 299) {
				err = fmt.Errorf("status %s", resp.Status)
			}
		}
	}
	s.Latency = time.Since(due)
	if err != nil {
		s.Err = err.Error()
	}
	return s
}
