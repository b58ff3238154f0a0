package colocation

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// ErrNoLatency is wrapped by the errors of quantiles asked of a phase without a latency to rank: no request
// succeeded or timed out.
var ErrNoLatency = errors.New("no latency to rank")

// ranked says whether s's latency counts in quantiles: as in Summarize, a request that succeeded, or that timed out
// (its user waited that long), and not one that failed sooner (refused, reset), whose latency says nothing of the
// service's speed.
func ranked(s Sample) bool { return s.Err == "" || s.Timeout }

// noLatency is the error of samples without a latency to rank.
func noLatency(samples []Sample) error {
	if len(samples) == 0 {
		return fmt.Errorf("no requests: %w", ErrNoLatency)
	}
	return fmt.Errorf("all %d requests failed before a timeout: %w", len(samples), ErrNoLatency)
}

// Round is one round of a setting at one batch size: the service alone and the service beside batch work, measured
// close together so that what drifts between rounds (the host, the caches, the time of day) affects both alike.
type Round struct {
	// Alone and Setting are the requests of the two phases. Their order does not matter: they are ranked, and cut
	// into blocks, by due time.
	Alone   []Sample
	Setting []Sample
	// BatchUnitsPerSecond is the work units the batch burners did per second in the setting phase, summed over
	// the batch pods.
	BatchUnitsPerSecond float64
	// NodeBusy is the node's busy share in the setting phase (1 = every CPU busy throughout).
	NodeBusy float64
}

// Bootstrap says how a paired ratio's confidence interval is estimated. DefaultBootstrap is what the benchmark
// uses; the zero value is not valid.
type Bootstrap struct {
	// Q is the quantile compared, in (0, 1]: 0.99 for p99.
	Q float64 `json:"q"`
	// Level is the interval's confidence, in (0, 1): 0.95 for a 95 % interval.
	Level float64 `json:"level"`
	// Iterations is how many times the rounds are resampled; at least 1.
	Iterations int `json:"iterations"`
	// Block is the length, in due time, of the stretches of consecutive requests a phase is resampled in. Slow
	// requests come in bursts (a batch pod's quota period, a stall of the host), so resampling requests one by one
	// would treat a burst as many independent pieces of evidence and give too narrow an interval; a block long
	// enough to hold a burst keeps it whole. 0 resamples requests one by one; a block as long as the phase leaves
	// each phase's requests as they are, so that only the rounds are resampled.
	Block time.Duration `json:"blockNs"`
	// Seed seeds the PCG generator the resampling draws from: the same inputs and Seed give the same interval.
	Seed uint64 `json:"seed"`
}

// DefaultBootstrap is a 95 % interval of the p99 ratio from 1,000 resamplings in blocks of 1 s.
func DefaultBootstrap() Bootstrap {
	return Bootstrap{Q: 0.99, Level: 0.95, Iterations: 1000, Block: time.Second, Seed: 1}
}

func (b Bootstrap) validate() error {
	switch {
	case !(b.Q > 0 && b.Q <= 1):
		return fmt.Errorf("quantile %v is not in (0, 1]", b.Q)
	case !(b.Level > 0 && b.Level < 1):
		return fmt.Errorf("confidence level %v is not in (0, 1)", b.Level)
	case b.Iterations < 1:
		return fmt.Errorf("%d iterations, need at least 1", b.Iterations)
	case b.Block < 0:
		return fmt.Errorf("block length %v is negative", b.Block)
	}
	return nil
}

// Ratio is a paired ratio of a quantile, setting to alone: Value is the median over the rounds of each round's
// ratio, and [Low, High] its confidence interval.
type Ratio struct {
	Value float64 `json:"value"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	// Rounds are the rounds' own ratios, in the rounds' order.
	Rounds []float64 `json:"rounds"`
}

// PairedRatio is the paired ratio of rounds' b.Q quantiles (by nearest rank, of the requests that succeeded or timed
// out, as in Summarize) with its b.Level confidence interval from a block bootstrap.
//
// Each of b.Iterations iterations draws len(rounds) rounds with replacement, keeping each round's two phases
// together; redraws each drawn phase's requests as blocks of consecutive requests (b.Block long, converted to a
// count by the phase's own request rate, circular so that every request is as likely to be drawn, until the phase
// has its number of requests again); and takes the median of the drawn rounds' ratios. The interval is the
// nearest-rank (1-Level)/2 and (1+Level)/2 quantiles of the iterations' medians.
//
// Resampling the requests as well as the rounds keeps a phase's own sampling noise (a burst more or less) in the
// interval even when six rounds happen to agree, at the price of counting that noise twice (the rounds' spread
// already holds it), so the interval errs wide: in simulation (six rounds of lognormal latencies, requests
// independent) 95 % intervals held the true ratio 99-100 times in 100 and were about a third wider than those of
// resampling the rounds only (a Block as long as the phases), which held it 93-94 times.
//
// It fails with no rounds, with an invalid b, and (wrapping ErrNoLatency) when a phase has no latency to rank.
func PairedRatio(rounds []Round, b Bootstrap) (Ratio, error) {
	if err := b.validate(); err != nil {
		return Ratio{}, fmt.Errorf("pairing ratios: %w", err)
	}
	if len(rounds) == 0 {
		return Ratio{}, errors.New("pairing ratios: no rounds")
	}
	alone, setting := make([]phaseSample, len(rounds)), make([]phaseSample, len(rounds))
	longest := 0
	r := Ratio{Rounds: make([]float64, len(rounds))}
	for i, rd := range rounds {
		var err error
		if alone[i], err = newPhaseSample(rd.Alone, b.Block); err != nil {
			return Ratio{}, fmt.Errorf("pairing ratios: round %d's alone phase: %w", i+1, err)
		}
		if setting[i], err = newPhaseSample(rd.Setting, b.Block); err != nil {
			return Ratio{}, fmt.Errorf("pairing ratios: round %d's setting phase: %w", i+1, err)
		}
		base := alone[i].quantile(b.Q)
		if base <= 0 {
			return Ratio{}, fmt.Errorf("pairing ratios: round %d's alone phase has a quantile %v of 0", i+1, b.Q)
		}
		r.Rounds[i] = float64(setting[i].quantile(b.Q)) / float64(base)
		longest = max(longest, len(alone[i].rank), len(setting[i].rank))
	}
	r.Value = median(r.Rounds)

	rng := rand.New(rand.NewPCG(b.Seed, 0))
	counts := make([]int32, longest)
	drawn := make([]float64, len(rounds))
	medians := make([]float64, b.Iterations)
	for it := range medians {
		for k := range drawn {
			i := rng.IntN(len(rounds))
			base := alone[i].resample(rng, b.Q, counts)
			drawn[k] = float64(setting[i].resample(rng, b.Q, counts)) / float64(base)
		}
		medians[it] = median(drawn)
	}
	slices.Sort(medians)
	r.Low, r.High = rankFloat(medians, (1-b.Level)/2), rankFloat(medians, (1+b.Level)/2)
	return r, nil
}

// rankFloat is the nearest-rank q-quantile of sorted, which is not empty.
func rankFloat(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// phaseSample is a phase's ranked requests made ready for resampling. Resampling draws positions, not
// latencies: a drawn set of requests is counted by rank, and its quantile found by walking the counts down from the
// slowest, which is a linear-time selection without moving any latency.
type phaseSample struct {
	// sorted are the latencies, fastest first.
	sorted []time.Duration
	// rank is, for each request in due order, its latency's index in sorted.
	rank []int32
	// block is the resampling block length in requests, 1 to len(rank).
	block int
}

// newPhaseSample prepares samples' ranked requests, with blocks of about block in due time.
func newPhaseSample(samples []Sample, block time.Duration) (phaseSample, error) {
	ok := make([]Sample, 0, len(samples))
	for _, s := range samples {
		if ranked(s) {
			ok = append(ok, s)
		}
	}
	if len(ok) == 0 {
		return phaseSample{}, noLatency(samples)
	}
	slices.SortStableFunc(ok, func(a, b Sample) int { return a.Due.Compare(b.Due) })
	byLatency := make([]int32, len(ok))
	for i := range byLatency {
		byLatency[i] = int32(i)
	}
	slices.SortStableFunc(byLatency, func(a, b int32) int { return cmp.Compare(ok[a].Latency, ok[b].Latency) })
	p := phaseSample{sorted: make([]time.Duration, len(ok)), rank: make([]int32, len(ok)), block: 1}
	for r, i := range byLatency {
		p.sorted[r] = ok[i].Latency
		p.rank[i] = int32(r)
	}
	// The phase's rate converts the block's length to a count; a phase without a span of due times (one request,
	// or samples made without them) has no rate, and is resampled request by request.
	if span := ok[len(ok)-1].Due.Sub(ok[0].Due); span > 0 && block > 0 {
		rate := float64(len(ok)-1) / span.Seconds()
		p.block = max(1, min(len(ok), int(math.Round(rate*block.Seconds()))))
	}
	return p, nil
}

// quantile is the phase's nearest-rank q-quantile.
func (p phaseSample) quantile(q float64) time.Duration { return rank(p.sorted, q) }

// resample draws len(p.rank) requests in circular blocks of p.block and returns their nearest-rank q-quantile.
// counts is scratch space at least len(p.rank) long.
func (p phaseSample) resample(rng *rand.Rand, q float64, counts []int32) time.Duration {
	n := len(p.rank)
	counts = counts[:n]
	clear(counts)
	for filled := 0; filled < n; {
		start := rng.IntN(n)
		end := start + min(p.block, n-filled)
		filled += end - start
		if end > n {
			for _, r := range p.rank[:end-n] {
				counts[r]++
			}
			end = n
		}
		for _, r := range p.rank[start:end] {
			counts[r]++
		}
	}
	// The nearest-rank quantile is the drawn latency at position i of the drawn set sorted, so n-i drawn latencies
	// are at or above it: the highest rank whose count from the top reaches n-i.
	i := int(math.Ceil(q*float64(n))) - 1
	need := int32(n - max(0, min(i, n-1)))
	var above int32
	for r := n - 1; r > 0; r-- {
		if above += counts[r]; above >= need {
			return p.sorted[r]
		}
	}
	return p.sorted[0]
}

// Quantile is the nearest-rank q-quantile, q in (0, 1], of the latencies of samples' requests that succeeded or
// timed out (as in Summarize). It fails, wrapping ErrNoLatency, when there are none.
func Quantile(samples []Sample, q float64) (time.Duration, error) {
	if !(q > 0 && q <= 1) {
		return 0, fmt.Errorf("quantile %v is not in (0, 1]", q)
	}
	ok := make([]time.Duration, 0, len(samples))
	for _, s := range samples {
		if ranked(s) {
			ok = append(ok, s.Latency)
		}
	}
	if len(ok) == 0 {
		return 0, noLatency(samples)
	}
	slices.Sort(ok)
	return rank(ok, q), nil
}

// PooledRatio is the q-quantile of all of rounds' setting requests pooled over the rounds, divided by that of all
// of their alone requests. It is for quantiles too far out for one round to rank well: a p99.9 of 6,000 requests
// is their 6th slowest, and of six rounds' 36,000 pooled their 36th. It fails with no rounds and (wrapping
// ErrNoLatency) when either side has no latency to rank.
func PooledRatio(rounds []Round, q float64) (float64, error) {
	if len(rounds) == 0 {
		return 0, errors.New("pooling ratios: no rounds")
	}
	var alone, setting []Sample
	for _, rd := range rounds {
		alone = append(alone, rd.Alone...)
		setting = append(setting, rd.Setting...)
	}
	base, err := Quantile(alone, q)
	if err != nil {
		return 0, fmt.Errorf("pooling ratios: the alone phases: %w", err)
	}
	if base <= 0 {
		return 0, fmt.Errorf("pooling ratios: the alone phases have a quantile %v of 0", q)
	}
	v, err := Quantile(setting, q)
	if err != nil {
		return 0, fmt.Errorf("pooling ratios: the setting phases: %w", err)
	}
	return float64(v) / float64(base), nil
}

// WorkScale turns the batch burners' work units into cores of batch work: how many cores, working alone on the
// node, would do those units. CPU time is not work: beside a service, batch work gets the same CPU time done more
// slowly (cold caches, shared memory bandwidth), and the units show it.
type WorkScale struct {
	// UnitsPerCoreSecond is the units one core of batch work does in a second, measured with batch alone.
	UnitsPerCoreSecond float64 `json:"unitsPerCoreSecond"`
}

// CalibrateWork is the WorkScale of a batch-alone measurement: the burners did unitsPerSecond using cores of CPU
// (the batch class's CPU time per second). Both must be positive.
func CalibrateWork(unitsPerSecond, cores float64) (WorkScale, error) {
	if !(unitsPerSecond > 0) || !(cores > 0) {
		return WorkScale{}, fmt.Errorf("calibrating batch work: %v units/s on %v cores, both must be positive", unitsPerSecond, cores)
	}
	return WorkScale{UnitsPerCoreSecond: unitsPerSecond / cores}, nil
}

// Cores is the batch work, in cores, of unitsPerSecond; 0 for the zero (uncalibrated) WorkScale.
func (s WorkScale) Cores(unitsPerSecond float64) float64 {
	if s.UnitsPerCoreSecond <= 0 {
		return 0
	}
	return unitsPerSecond / s.UnitsPerCoreSecond
}

// MedianCores is the median over rounds of the batch work, in cores, of each round's units per second.
func (s WorkScale) MedianCores(unitsPerSecond []float64) float64 {
	cores := make([]float64, len(unitsPerSecond))
	for i, u := range unitsPerSecond {
		cores[i] = s.Cores(u)
	}
	return median(cores)
}
