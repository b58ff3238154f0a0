package colocation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Generator sends GET requests to URL at Rate, open loop: each request has a due time fixed before the run (evenly
// spaced, or Poisson arrivals) whatever happened to the requests before it, and its latency counts from that due
// time. A service that stalls for 100 ms therefore shows as the latency of every request due in those 100 ms, as its
// users would see it, and not as one slow request followed by a pause in the load (coordinated omission).
type Generator struct {
	// URL is what each request gets.
	URL string
	// Rate is requests per second; it must be positive.
	Rate float64
	// Poisson spaces the due times by exponentially distributed gaps of mean 1/Rate, as independent users'
	// requests arrive, drawn from Seed; false spaces them evenly.
	Poisson bool
	Seed    uint64
	// Client sends the requests (NewPool makes one that never dials during a run); its Timeout bounds a request.
	// A request that runs past it counts as a timeout: an error, and a latency from its due time to the timeout.
	Client *http.Client
}

// Sample is one request's outcome.
type Sample struct {
	// Due is when the request was due to be sent.
	Due time.Time
	// Latency is from Due to the end of the response body (or to the error).
	Latency time.Duration
	// Err is why the request failed ("" when it got a 2xx answer and all of its body); Timeout says the reason was
	// the client's timeout.
	Err     string
	Timeout bool
	// Sent is when the request was written to the connection; HandlerStart and HandlerEnd are when the service's
	// handler started and ended, and HandlerCPU the CPU time its thread ran in between, from its answer's headers
	// (zero where unknown).
	Sent         time.Time
	HandlerStart time.Time
	HandlerEnd   time.Time
	HandlerCPU   time.Duration
}

// The headers in which the service (test/workloads/lsservice) answers when its handler started and ended, in Unix
// nanoseconds, and the CPU time its thread ran meanwhile, in nanoseconds.
const (
	HeaderHandlerStart = "Handler-Start"
	HeaderHandlerEnd   = "Handler-End"
	HeaderHandlerCPU   = "Handler-Cpu-Ns"
)

// Run sends requests for d and returns one sample per request due in that time, in due order, once every request
// has ended. A cancelled ctx stops it early, with the samples of the requests sent so far and ctx's error.
func (g Generator) Run(ctx context.Context, d time.Duration) ([]Sample, error) {
	if g.Rate <= 0 {
		return nil, fmt.Errorf("load generator: rate %v is not positive", g.Rate)
	}
	offsets := g.dueOffsets(d)
	samples := make([]Sample, len(offsets))
	var wg sync.WaitGroup
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	var err error
	sent := 0
	for ; sent < len(offsets); sent++ {
		due := start.Add(offsets[sent])
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

// dueOffsets are the due times of a run of d, from its start.
func (g Generator) dueOffsets(d time.Duration) []time.Duration {
	interval := float64(time.Second) / g.Rate
	var out []time.Duration
	if !g.Poisson {
		for i := range int(d / time.Duration(interval)) {
			out = append(out, time.Duration(i)*time.Duration(interval))
		}
		return out
	}
	r := rand.New(rand.NewPCG(g.Seed, 0x9e3779b97f4a7c15))
	for at := 0.0; at < float64(d); at += r.ExpFloat64() * interval {
		out = append(out, time.Duration(at))
	}
	return out
}

// send makes one request due at due.
func (g Generator) send(ctx context.Context, due time.Time) Sample {
	s := Sample{Due: due}
	var sent atomic.Int64 // the transport's writer goroutine calls WroteRequest
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { sent.Store(time.Now().UnixNano()) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, g.URL, nil)
	if err == nil {
		var resp *http.Response
		if resp, err = g.Client.Do(req); err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if err == nil && (resp.StatusCode < 200 || resp.StatusCode > 299) {
				err = fmt.Errorf("status %s", resp.Status)
			}
			s.HandlerStart, s.HandlerEnd = unixNanoHeader(resp.Header, HeaderHandlerStart), unixNanoHeader(resp.Header, HeaderHandlerEnd)
			s.HandlerCPU = time.Duration(nanosHeader(resp.Header, HeaderHandlerCPU))
		}
	}
	s.Latency = time.Since(due)
	if n := sent.Load(); n > 0 {
		s.Sent = time.Unix(0, n)
	}
	if err != nil {
		s.Err = err.Error()
		var ne net.Error
		s.Timeout = errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
	}
	return s
}

// unixNanoHeader is the time in h's key, zero when it is absent or not a number.
func unixNanoHeader(h http.Header, key string) time.Time {
	n := nanosHeader(h, key)
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// nanosHeader is the count of nanoseconds in h's key, 0 when it is absent or not a positive number.
func nanosHeader(h http.Header, key string) int64 {
	n, err := strconv.ParseInt(h.Get(key), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// Pool is an HTTP client that keeps a fixed number of connections to one service and counts its dials. NewPool's
// client never opens more than Conns connections: a request that finds them all busy waits for one, and the wait
// counts in its latency as a queue in front of a busy service does. Warm opens them all before a run, so that a run
// dials only when the service closed a connection, which Dials shows.
type Pool struct {
	Client *http.Client
	Conns  int
	dials  atomic.Int64
}

// NewPool makes a Pool of conns connections whose requests time out after timeout.
func NewPool(conns int, timeout time.Duration) *Pool {
	p := &Pool{Conns: conns}
	dialer := &net.Dialer{Timeout: timeout}
	p.Client = &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			p.dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		},
		MaxConnsPerHost:     conns,
		MaxIdleConnsPerHost: conns,
		MaxIdleConns:        conns,
		DisableCompression:  true,
	}}
	return p
}

// Dials counts the connections the pool has opened.
func (p *Pool) Dials() int64 { return p.dials.Load() }

// warmRounds bounds Warm's rounds.
const warmRounds = 50

// Warm opens the pool's connections to url: rounds of Conns concurrent requests until every connection is open (a
// round's requests overlap only as long as the service takes, so one round may open fewer). It fails when a request
// fails, ctx ends, or warmRounds rounds leave connections unopened (a service too quick to keep Conns requests open
// at once).
func (p *Pool) Warm(ctx context.Context, url string) error {
	for round := 0; p.Dials() < int64(p.Conns); round++ {
		if round == warmRounds {
			return fmt.Errorf("warming the connection pool to %s: %d rounds of %d concurrent requests opened only %d connections", url, warmRounds, p.Conns, p.Dials())
		}
		start := make(chan struct{})
		errs := make(chan error, p.Conns)
		var wg sync.WaitGroup
		for range p.Conns {
			wg.Go(func() {
				<-start
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				if err == nil {
					var resp *http.Response
					if resp, err = p.Client.Do(req); err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
					}
				}
				errs <- err
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return fmt.Errorf("warming the connection pool to %s: %w", url, err)
			}
		}
	}
	return nil
}
