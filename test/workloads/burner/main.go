// Command burner keeps a target CPU load, e.g. `burner --load 500m` uses half a core and `--load 1.5` one and a
// half, by busy-looping for a share of every period on as many goroutines as the load needs. With --thrash SIZE each
// worker spends its busy time walking a buffer of SIZE bytes instead, a cache line at a time in an order the
// prefetcher cannot follow: with a buffer larger than the CPU's caches it thrashes them and uses memory bandwidth,
// the interference batch work causes beside a service that CPU time alone does not show. Every report interval it
// logs the CPU it really got (from getrusage), which falls below the target when the cgroup throttles it.
//
// It counts its work in units (a fixed chain of multiply-adds, or with --thrash 256 cache-line touches), so that a
// benchmark can tell work done from CPU time got: beside a noisy neighbour a unit takes more CPU time. With --listen,
// GET /work answers the units done and the CPU time used so far as JSON (Work).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

func main() {
	fs := flag.NewFlagSet("burner", flag.ExitOnError)
	load := fs.String("load", "500m", "CPU load to keep, in cores as Kubernetes writes CPU: 250m, 1, 1.5; all: every CPU the burner may run on")
	period := fs.Duration("period", 100*time.Millisecond, "duty-cycle period: each worker spins for its share of it")
	report := fs.Duration("report", 10*time.Second, "how often to log the CPU really used; 0 turns it off")
	thrash := fs.String("thrash", "0", "bytes of buffer each worker walks while busy (64Mi: larger than the caches); 0 spins only")
	listen := fs.String("listen", "", "address to serve GET /work on (the units done and CPU time used); empty: none")
	_ = fs.Parse(os.Args[1:]) // ExitOnError
	cores, err := parseLoad(*load)
	if err != nil {
		fmt.Fprintf(os.Stderr, "burner: %v\n", err)
		os.Exit(2)
	}
	size, err := resource.ParseQuantity(*thrash)
	if err != nil || size.Value() < 0 {
		fmt.Fprintf(os.Stderr, "burner: --thrash %q: want a size such as 64Mi, or 0\n", *thrash)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	workers, duty := plan(cores)
	fmt.Printf("burner: target %.3f cores: %d workers at %.0f%% of %s\n", cores, workers, duty*100, *period)
	var units atomic.Uint64
	for range workers {
		step := spinStep
		if size.Value() > 0 {
			step = newThrasher(size.Value()).step
		}
		go burn(ctx, duty, *period, step, &units)
	}
	if *listen != "" {
		if err := serveWork(ctx, *listen, &units); err != nil {
			fmt.Fprintf(os.Stderr, "burner: %v\n", err)
			os.Exit(1)
		}
	}
	if *report > 0 {
		go reportUsage(ctx, *report)
	}
	<-ctx.Done()
}

// parseLoad reads a CPU quantity ("500m", "1.5") as cores; it must be positive and at most the machine's CPUs.
// "all" is every CPU the burner may run on (its affinity at start: a pod's cpuset, not the node's CPUs).
func parseLoad(s string) (float64, error) {
	if s == "all" {
		return float64(runtime.NumCPU()), nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("--load %q: %w", s, err)
	}
	cores := float64(q.MilliValue()) / 1000
	if cores <= 0 {
		return 0, fmt.Errorf("--load %q: must be more than 0", s)
	}
	if n := runtime.NumCPU(); cores > float64(n) {
		return 0, fmt.Errorf("--load %q: more than the %d CPUs of this machine", s, n)
	}
	return cores, nil
}

// plan splits a load into workers that each spin for the same share (duty) of a period: 0.5 is one worker at 50%,
// 1.5 two workers at 75%, 2 two workers at 100%.
func plan(cores float64) (workers int, duty float64) {
	workers = int(math.Ceil(cores))
	return workers, cores / float64(workers)
}

// burn calls step for duty*period and sleeps for the rest of every period until ctx ends, adding the steps it made
// to units.
func burn(ctx context.Context, duty float64, period time.Duration, step func(), units *atomic.Uint64) {
	busy := time.Duration(float64(period) * duty)
	for ctx.Err() == nil {
		start := time.Now()
		var n uint64
		for time.Since(start) < busy {
			step()
			n++
		}
		units.Add(n)
		if rest := period - time.Since(start); rest > 0 {
			time.Sleep(rest)
		}
	}
}

// spinStep is a spinning worker's unit of work: a chain of dependent multiply-adds, a few microseconds of CPU.
func spinStep() {
	x := spinState.Load()
	for range 2048 {
		x = x*6364136223846793005 + 1442695040888963407
	}
	spinState.Store(x)
}

// spinState carries spinStep's chain from one step to the next, which keeps the compiler from dropping it.
var spinState atomic.Uint64

// Work is what GET /work answers: the units of work done and the CPU time used since the burner started.
type Work struct {
	Units      uint64  `json:"units"`
	CPUSeconds float64 `json:"cpuSeconds"`
}

// serveWork serves GET /work on addr until ctx ends.
func serveWork(ctx context.Context, addr string, units *atomic.Uint64) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: workHandler(units), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Printf("burner: serving GET /work on %s\n", ln.Addr())
	go func() { _ = srv.Serve(ln) }()
	return nil
}

func workHandler(units *atomic.Uint64) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /work", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(Work{Units: units.Load(), CPUSeconds: cpuTime().Seconds()})
	})
	return mux
}

// cacheLine is the unit the thrasher touches; stride is how many lines apart two touches are: a prime, so that the
// walk visits every line of any buffer whose line count it does not divide, and 4099 lines (about 256 KiB) apart,
// beyond what a hardware prefetcher follows.
const (
	cacheLine = 64
	stride    = 4099
)

// thrasher walks a buffer one cache line at a time, stride lines apart.
type thrasher struct {
	buf  []byte
	line int
}

// newThrasher allocates a buffer of size bytes (at least one line; a line count that stride divides gets a line
// more, so that the walk covers every line).
func newThrasher(size int64) *thrasher {
	lines := max(1, size/cacheLine)
	if lines%stride == 0 {
		lines++
	}
	return &thrasher{buf: make([]byte, lines*cacheLine)}
}

// step touches 256 lines (a read and a write each).
func (t *thrasher) step() {
	lines := len(t.buf) / cacheLine
	for range 256 {
		t.line = (t.line + stride) % lines
		t.buf[t.line*cacheLine]++
	}
}

// reportUsage logs the CPU the process used over each interval.
func reportUsage(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	last, lastAt := cpuTime(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			used := cpuTime()
			fmt.Printf("burner: used %.3f cores over the last %s\n", (used-last).Seconds()/now.Sub(lastAt).Seconds(), every)
			last, lastAt = used, now
		}
	}
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
