// Command burner keeps a target CPU load, e.g. `burner --load 500m` uses half a core and `--load 1.5` one and a
// half, by busy-looping for a share of every period on as many goroutines as the load needs. With --thrash SIZE each
// worker spends its busy time walking a buffer of SIZE bytes instead, a cache line at a time in an order the
// prefetcher cannot follow: with a buffer larger than the CPU's caches it thrashes them and uses memory bandwidth,
// the interference batch work causes beside a service that CPU time alone does not show. Every report interval it
// logs the CPU it really got (from getrusage), which falls below the target when the cgroup throttles it.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

func main() {
	fs := flag.NewFlagSet("burner", flag.ExitOnError)
	load := fs.String("load", "500m", "CPU load to keep, in cores as Kubernetes writes CPU: 250m, 1, 1.5")
	period := fs.Duration("period", 100*time.Millisecond, "duty-cycle period: each worker spins for its share of it")
	report := fs.Duration("report", 10*time.Second, "how often to log the CPU really used; 0 turns it off")
	thrash := fs.String("thrash", "0", "bytes of buffer each worker walks while busy (64Mi: larger than the caches); 0 spins only")
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
	for range workers {
		step := func() {}
		if size.Value() > 0 {
			step = newThrasher(size.Value()).step
		}
		go burn(ctx, duty, *period, step)
	}
	if *report > 0 {
		go reportUsage(ctx, *report)
	}
	<-ctx.Done()
}

// parseLoad reads a CPU quantity ("500m", "1.5") as cores; it must be positive and at most the machine's CPUs.
func parseLoad(s string) (float64, error) {
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

// burn calls step for duty*period and sleeps for the rest of every period until ctx ends.
func burn(ctx context.Context, duty float64, period time.Duration, step func()) {
	busy := time.Duration(float64(period) * duty)
	for ctx.Err() == nil {
		start := time.Now()
		for time.Since(start) < busy {
			step()
		}
		if rest := period - time.Since(start); rest > 0 {
			time.Sleep(rest)
		}
	}
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
