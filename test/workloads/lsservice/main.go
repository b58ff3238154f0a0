// Command lsservice is a latency-sensitive service for the local cluster's demo and tests. It serves GET / with a
// little CPU work per request (--work), drives itself with a steady request rate (--qps) and measures the latency
// of those requests end to end, which is what batch work next to it would hurt. GET /stats returns the latency
// percentiles of the last --window requests as JSON; every --report it logs them. With the defaults it uses about
// a tenth of a core. The work is a spin for --work of wall-clock time (--kind=spin), or, with --kind=fixed, a fixed
// count of operations (--ops; by default calibrated at start to take --work of its thread's CPU time), each multiply-adds and a
// read from an in-memory working set of --set bytes: work that a neighbour's cache thrashing or a shared core slows
// down, as it slows a real service. Each answer to GET / carries the handler's start and end (Handler-Start and
// Handler-End, Unix nanoseconds), so that a client on the same node can tell the handler's time from the time
// before and after it, and the CPU time its thread ran in between (Handler-Cpu-Ns), which tells work that ran
// slower from work that waited for a CPU. With --data-mib it also has a working set in the page cache, as a database has: it writes a file
// of that size into --data-dir at start, and each request reads --read-kib of it at a random place, so a neighbour
// that leaves its cache too little room shows in its latency.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// options are the command's flags.
type options struct {
	listen  string
	kind    string
	work    time.Duration
	ops     int
	set     string
	qps     float64
	window  int
	report  time.Duration
	dataMiB int
	dataDir string
	readKiB int
}

func main() {
	var o options
	fs := flag.NewFlagSet("lsservice", flag.ExitOnError)
	fs.StringVar(&o.listen, "listen", ":8080", "address to serve on")
	fs.StringVar(&o.kind, "kind", "spin", "the work per request: spin (busy for --work of wall-clock time) or fixed (--ops operations over --set)")
	fs.DurationVar(&o.work, "work", 2*time.Millisecond, "time spent on each request (--kind=fixed: what --ops is calibrated to when 0)")
	fs.IntVar(&o.ops, "ops", 0, "--kind=fixed: operations per request; 0 calibrates them to --work at start")
	fs.StringVar(&o.set, "set", "8Mi", "--kind=fixed: the in-memory working set each operation reads a cache line of")
	fs.Float64Var(&o.qps, "qps", 50, "requests per second the service sends itself; 0 turns the load off")
	fs.IntVar(&o.window, "window", 1000, "how many of the latest requests /stats summarises")
	fs.DurationVar(&o.report, "report", 10*time.Second, "how often to log the latency; 0 turns it off")
	fs.IntVar(&o.dataMiB, "data-mib", 0, "size of the working set file each request reads from; 0: none")
	fs.StringVar(&o.dataDir, "data-dir", "/data", "directory of the working set file")
	fs.IntVar(&o.readKiB, "read-kib", 256, "how much of the working set each request reads")
	_ = fs.Parse(os.Args[1:]) // ExitOnError
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "lsservice: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.window <= 0 || o.qps < 0 || o.work < 0 || o.dataMiB < 0 || o.readKiB <= 0 || o.readKiB > o.dataMiB<<10 && o.dataMiB > 0 {
		return fmt.Errorf("--window and --read-kib must be positive, --qps, --work and --data-mib not negative, and --read-kib within --data-mib")
	}
	work, describe, err := newWork(o)
	if err != nil {
		return err
	}
	var data *workingSet
	if o.dataMiB > 0 {
		start := time.Now()
		var err error
		if data, err = newWorkingSet(filepath.Join(o.dataDir, "working-set"), o.dataMiB, o.readKiB); err != nil {
			return err
		}
		defer data.Close()
		fmt.Printf("lsservice: working set of %d MiB written in %s\n", o.dataMiB, time.Since(start).Round(time.Millisecond))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.listen, err)
	}
	rec := newRecorder(o.window)
	srv := &http.Server{Handler: newHandler(work, data, rec), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	target := "http://" + ln.Addr().String() + "/"
	if o.qps > 0 {
		go drive(ctx, target, o.qps, rec)
	}
	if o.report > 0 {
		go report(ctx, o.report, rec)
	}
	fmt.Printf("lsservice: serving on %s, %s per request, %.0f requests/s to itself\n", ln.Addr(), describe, o.qps)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}

// newWork is the work per request that o asks for (its argument is the request's number) and its description.
func newWork(o options) (func(uint64), string, error) {
	switch o.kind {
	case "spin":
		return func(uint64) { spin(o.work) }, fmt.Sprintf("a spin of %s", o.work), nil
	case "fixed":
		set, err := resource.ParseQuantity(o.set)
		if err != nil || set.Value() < cacheLine {
			return nil, "", fmt.Errorf("--set %q: want a size of at least %d bytes, such as 8Mi", o.set, cacheLine)
		}
		if o.ops < 0 {
			return nil, "", fmt.Errorf("--ops %d: want 0 (calibrate to --work) or more", o.ops)
		}
		w := newFixedWork(set.Value(), o.ops)
		how := "given"
		if o.ops == 0 {
			w.calibrate(o.work)
			how = fmt.Sprintf("calibrated to %s", o.work)
		}
		return func(n uint64) { sink.Add(w.do(n)) }, fmt.Sprintf("fixed work of %d ops over %s (%s)", w.ops, o.set, how), nil
	default:
		return nil, "", fmt.Errorf("--kind %q: want spin or fixed", o.kind)
	}
}

// The headers of an answer to GET / that say when its handler started and ended, in Unix nanoseconds, and how much
// CPU time its thread ran meanwhile, in nanoseconds.
const (
	HeaderHandlerStart = "Handler-Start"
	HeaderHandlerEnd   = "Handler-End"
	HeaderHandlerCPU   = "Handler-Cpu-Ns"
)

// newHandler serves / (do the work, read from the working set if there is one, answer "ok" with the handler's start,
// end and CPU time), /stats (the recorder's Stats as JSON) and /healthz. The work keeps its thread, so that the
// thread's CPU time is the work's.
func newHandler(work func(uint64), data *workingSet, rec *recorder) http.Handler {
	mux := http.NewServeMux()
	var requests atomic.Uint64
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		runtime.LockOSThread()
		start, cpuStart := time.Now(), threadCPUTime()
		work(requests.Add(1))
		var err error
		if data != nil {
			err = data.read()
		}
		cpu, end := threadCPUTime()-cpuStart, time.Now()
		runtime.UnlockOSThread()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set(HeaderHandlerStart, strconv.FormatInt(start.UnixNano(), 10))
		w.Header().Set(HeaderHandlerEnd, strconv.FormatInt(end.UnixNano(), 10))
		w.Header().Set(HeaderHandlerCPU, strconv.FormatInt(int64(cpu), 10))
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rec.Stats())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	return mux
}

// spin uses the CPU for d.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// drive sends GET target at qps and records each request's latency; failed requests are not recorded.
func drive(ctx context.Context, target string, qps float64, rec *recorder) {
	client := &http.Client{Timeout: 5 * time.Second}
	t := time.NewTicker(time.Duration(float64(time.Second) / qps))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			continue
		}
		resp, err := client.Do(req)
		if err != nil {
			continue
		}
		_ = resp.Body.Close()
		rec.Add(time.Since(start))
	}
}

func report(ctx context.Context, every time.Duration, rec *recorder) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s := rec.Stats()
			fmt.Printf("lsservice: latency over the last %d requests: p50 %.2fms p90 %.2fms p99 %.2fms max %.2fms\n",
				s.Count, s.P50, s.P90, s.P99, s.Max)
		}
	}
}
