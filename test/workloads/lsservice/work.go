package main

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"
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

// calibrate sets ops to what takes target on this CPU now: the median of 9 timed runs of a trial count, scaled. The
// service calibrates once at start, before any load, and logs the count, so that a benchmark can pass it back with
// --ops and keep the work fixed across runs.
func (w *fixedWork) calibrate(target time.Duration) int {
	const trialOps = 20000
	trial := &fixedWork{set: w.set, ops: trialOps}
	runs := make([]time.Duration, 9)
	for i := range runs {
		start := time.Now()
		sink.Add(trial.do(uint64(i)))
		runs[i] = time.Since(start)
	}
	slices.Sort(runs)
	per := float64(runs[len(runs)/2]) / trialOps
	w.ops = max(1, int(float64(target)/per))
	return w.ops
}

// sink keeps the checksums of the work alive.
var sink atomic.Uint64
