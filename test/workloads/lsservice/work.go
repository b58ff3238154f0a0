package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// fixedWork is the service's work when it is counted rather than timed (--kind=fixed): each request does ops
// operations, each a chain of dependent multiply-adds and one read of a cache line at a pseudo-random place in a
// buffer of its own (the working set). Unlike a spin for a wall-clock time, this work takes longer when a neighbour
// thrashes the caches, takes memory bandwidth or shares the core, as a real service's does.
type fixedWork struct {
	set []byte
	ops int
}

// cacheLine is the unit a fixedWork operation reads; aluSteps the multiply-adds beside each read.
const (
	cacheLine = 64
	aluSteps  = 16
)

// newFixedWork allocates and fills a working set of setBytes (at least a cache line), so that its pages are real
// memory and not the shared zero page.
func newFixedWork(setBytes int64, ops int) *fixedWork {
	set := make([]byte, max(cacheLine, setBytes/cacheLine*cacheLine))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range set {
		set[i] = byte(r.Uint32())
	}
	return &fixedWork{set: set, ops: ops}
}

// do runs the request's operations from seed and returns a checksum of what it read, which keeps the compiler from
// dropping the work.
func (w *fixedWork) do(seed uint64) uint64 {
	lines := uint64(len(w.set) / cacheLine)
	x, sum := seed*2+1, uint64(0)
	for range w.ops {
		x = x*6364136223846793005 + 1442695040888963407
		sum += uint64(w.set[(x>>17)%lines*cacheLine])
		for j := range uint64(aluSteps) {
			sum = sum*31 + (x >> j)
		}
	}
	return sum
}

// calibrate sets ops to what takes target of this thread's CPU time: a short trial estimates the count, then the
// median of 9 runs of about target each sets it. Timed in the thread's own CPU time, not the clock's: a process
// competing for the CPU at the service's start halved a count timed by the clock in a benchmark run (25,479
// operations for 2 ms on the idle node, 12,452 beside it), and the time the thread waited is no part of the work.
// The runs are as long as a request. The service calibrates once at start and logs the count, so that a benchmark
// can pass it back with --ops and keep the work fixed across runs.
func (w *fixedWork) calibrate(target time.Duration) int {
	runtime.LockOSThread() // the thread's CPU time is this goroutine's only while it keeps the thread
	defer runtime.UnlockOSThread()
	perOp := func(ops int, seed uint64) float64 {
		run := &fixedWork{set: w.set, ops: ops}
		start := threadCPUTime()
		sink.Add(run.do(seed))
		return float64(threadCPUTime()-start) / float64(ops)
	}
	const trialOps = 2000
	n := max(1, int(float64(target)/max(perOp(trialOps, 0), 1e-3)))
	runs := make([]float64, 9)
	for i := range runs {
		runs[i] = perOp(n, uint64(i+1))
	}
	slices.Sort(runs)
	w.ops = max(1, int(float64(target)/max(runs[len(runs)/2], 1e-3)))
	return w.ops
}

// threadCPUTime is the CPU time the calling thread has run.
func threadCPUTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(fmt.Sprintf("CLOCK_THREAD_CPUTIME_ID: %v", err)) // Linux has had it since 2.6.12
	}
	return time.Duration(ts.Nano())
}

// sink keeps the checksums of the work alive.
var sink atomic.Uint64
