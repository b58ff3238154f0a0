package colocation

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// constantSamples is n requests due every 10 ms (100 req/s) from start, each taking d.
func constantSamples(start time.Time, n int, d time.Duration) []Sample {
	out := make([]Sample, n)
	for i := range out {
		out[i] = Sample{Due: start.Add(time.Duration(i) * 10 * time.Millisecond), Latency: d}
	}
	return out
}

// drawnSamples is n requests due every 10 ms from start whose latencies latency draws.
func drawnSamples(start time.Time, n int, latency func(i int) time.Duration) []Sample {
	out := make([]Sample, n)
	for i := range out {
		out[i] = Sample{Due: start.Add(time.Duration(i) * 10 * time.Millisecond), Latency: latency(i)}
	}
	return out
}

// lognormal draws a latency of median m and log-spread sigma.
func lognormal(rng *rand.Rand, m time.Duration, sigma float64) time.Duration {
	return time.Duration(float64(m) * math.Exp(sigma*rng.NormFloat64()))
}

// approxRatio compares ratios computed through float division.
var approxRatio = cmpopts.EquateApprox(0, 1e-12)

// Phases of one latency each: whatever is drawn, each phase's p99 is that latency, so the interval is the point.
// The alone phases differ from round to round (3 ms to 34 ms) and each round's setting is exactly 2x its own alone
// one: only rounds kept paired give 2, every time.
func TestPairedRatioDegenerate(t *testing.T) {
	t0 := time.Unix(0, 0)
	tests := []struct {
		name    string
		alone   []time.Duration
		setting func(alone time.Duration) time.Duration
		want    Ratio
	}{{
		name:    "the same constant latency in every phase",
		alone:   []time.Duration{5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond},
		setting: func(time.Duration) time.Duration { return 5 * time.Millisecond },
		want:    Ratio{Value: 1, Low: 1, High: 1, Rounds: []float64{1, 1, 1}},
	}, {
		name:    "setting 1.3x a constant alone",
		alone:   []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond},
		setting: func(time.Duration) time.Duration { return 13 * time.Millisecond },
		want:    Ratio{Value: 1.3, Low: 1.3, High: 1.3, Rounds: []float64{1.3, 1.3, 1.3, 1.3}},
	}, {
		name:    "setting 2x its own round's alone",
		alone:   []time.Duration{3 * time.Millisecond, 5 * time.Millisecond, 8 * time.Millisecond, 13 * time.Millisecond, 21 * time.Millisecond, 34 * time.Millisecond},
		setting: func(alone time.Duration) time.Duration { return 2 * alone },
		want:    Ratio{Value: 2, Low: 2, High: 2, Rounds: []float64{2, 2, 2, 2, 2, 2}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rounds []Round
			for _, a := range tt.alone {
				rounds = append(rounds, Round{Alone: constantSamples(t0, 500, a), Setting: constantSamples(t0.Add(10*time.Second), 500, tt.setting(a))})
			}
			b := DefaultBootstrap()
			b.Iterations = 300
			got, err := PairedRatio(rounds, b)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, approxRatio); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Rounds whose ratios are 1.0, 1.2, ..., 2.0 (each phase constant): the value is their median, and the interval is
// that of the median of six rounds drawn with replacement, whose exact distribution the test counts out over all
// 6^6 draws.
func TestPairedRatioKnownRoundRatios(t *testing.T) {
	t0 := time.Unix(0, 0)
	ratios := []float64{1.0, 1.2, 1.4, 1.6, 1.8, 2.0}
	var rounds []Round
	for _, r := range ratios {
		rounds = append(rounds, Round{Alone: constantSamples(t0, 200, 10*time.Millisecond),
			Setting: constantSamples(t0, 200, time.Duration(r*float64(10*time.Millisecond)))})
	}
	for _, n := range []int{5, 6} {
		got, err := PairedRatio(rounds[:n], Bootstrap{Q: 0.99, Level: 0.95, Iterations: 100, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		if want := []float64{1.4, 1.5}[n-5]; math.Abs(got.Value-want) > 1e-9 {
			t.Errorf("%d rounds: value %v, want the median %v", n, got.Value, want)
		}
		if diff := cmp.Diff(ratios[:n], got.Rounds, approxRatio); diff != "" {
			t.Errorf("%d rounds: the rounds' ratios (-want +got):\n%s", n, diff)
		}
	}

	// The exact distribution of the median of six draws.
	var medians []float64
	pick := make([]float64, 6)
	for code := 0; code < 46656; code++ {
		for k, c := 0, code; k < 6; k, c = k+1, c/6 {
			pick[k] = ratios[c%6]
		}
		medians = append(medians, median(pick))
	}
	slices.Sort(medians)
	wantLow, wantHigh := rankFloat(medians, 0.025), rankFloat(medians, 0.975)

	got, err := PairedRatio(rounds, Bootstrap{Q: 0.99, Level: 0.95, Iterations: 4000, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	// The bootstrap's medians lie on a grid of 0.1; 4,000 of them put its 2.5 % and 97.5 % points within a step of
	// the exact ones.
	if math.Abs(got.Low-wantLow) > 0.1+1e-9 || math.Abs(got.High-wantHigh) > 0.1+1e-9 {
		t.Errorf("interval [%v, %v], want about the exact [%v, %v]", got.Low, got.High, wantLow, wantHigh)
	}
	if !(got.Low < got.Value && got.Value < got.High) {
		t.Errorf("interval [%v, %v] does not hold the value %v strictly inside", got.Low, got.High, got.Value)
	}
}

// roundsOf is rounds of n requests whose alone latencies are lognormal (median 2 ms, spread sigma) times a round
// effect the round shares with its setting phase (1x to 4x: the host's mood), and whose setting latencies are ratio
// times a fresh draw of the same.
func roundsOf(rng *rand.Rand, rounds, n int, sigma, ratio float64) []Round {
	t0 := time.Unix(0, 0)
	out := make([]Round, rounds)
	for r := range out {
		effect := 1 + 3*rng.Float64()
		m := time.Duration(effect * float64(2*time.Millisecond))
		out[r].Alone = drawnSamples(t0, n, func(int) time.Duration { return lognormal(rng, m, sigma) })
		out[r].Setting = drawnSamples(t0.Add(time.Minute), n, func(int) time.Duration {
			return time.Duration(ratio * float64(lognormal(rng, m, sigma)))
		})
	}
	return out
}

// Six rounds of 6,000 requests, the setting's latencies drawn 1.3x alone's: the interval holds 1.3 and tells it from
// 1.1 (the SLO) and from 1.5.
func TestPairedRatioSimulated(t *testing.T) {
	rounds := roundsOf(rand.New(rand.NewPCG(1, 2)), 6, 6000, 0.5, 1.3)
	got, err := PairedRatio(rounds, DefaultBootstrap())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("p99 ratio %.3f [%.3f, %.3f], rounds %.3f", got.Value, got.Low, got.High, got.Rounds)
	if !(got.Low <= 1.3 && 1.3 <= got.High) {
		t.Errorf("interval [%.3f, %.3f] misses the true ratio 1.3", got.Low, got.High)
	}
	if !(got.Low > 1.1 && got.High < 1.5) {
		t.Errorf("interval [%.3f, %.3f] cannot tell 1.3 from 1.1 or 1.5", got.Low, got.High)
	}
	if !(got.Low <= got.Value && got.Value <= got.High) {
		t.Errorf("interval [%.3f, %.3f] does not hold the value %.3f", got.Low, got.High, got.Value)
	}
}

// Over 40 simulated runs (six rounds of 1,000 requests, true ratio 1.2), a 95 % interval holds the true ratio in
// at least 36 of them; an interval that ignored a source of noise would hold it far less often.
func TestPairedRatioCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	b := Bootstrap{Q: 0.99, Level: 0.95, Iterations: 200, Block: time.Second}
	covered := 0
	for run := range 40 {
		b.Seed = uint64(run)
		got, err := PairedRatio(roundsOf(rng, 6, 1000, 0.5, 1.2), b)
		if err != nil {
			t.Fatal(err)
		}
		if got.Low <= 1.2 && 1.2 <= got.High {
			covered++
		}
	}
	t.Logf("the interval held the true ratio in %d of 40 runs", covered)
	if covered < 36 {
		t.Errorf("the interval held the true ratio in %d of 40 runs, want at least 36", covered)
	}
}

// One round whose setting phase has bursts: each stretch of 40 requests (0.4 s at 100 req/s) is slow (4x) with
// probability 0.1. How much the p99 ratio varies from one run of the phase to another is counted out over 200
// independent runs. Drawn request by request, a burst's slow requests look like independent evidence and the
// interval comes out well narrower than that; drawn in blocks of 1 s, a resampled phase holds more or fewer
// bursts, as another run would, and the interval is about as wide as the runs' spread.
func TestPairedRatioBlocksKeepBurstsWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	t0 := time.Unix(0, 0)
	alone := drawnSamples(t0, 6000, func(int) time.Duration { return lognormal(rng, 2*time.Millisecond, 0.3) })
	bursty := func() []Sample {
		slow := make([]bool, 6000/40)
		for i := range slow {
			slow[i] = rng.Float64() < 0.1
		}
		return drawnSamples(t0, 6000, func(i int) time.Duration {
			if slow[i/40] {
				return lognormal(rng, 8*time.Millisecond, 0.3)
			}
			return lognormal(rng, 2*time.Millisecond, 0.3)
		})
	}
	base, err := Quantile(alone, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	var runs []float64
	for range 200 {
		v, err := Quantile(bursty(), 0.99)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, float64(v)/float64(base))
	}
	slices.Sort(runs)
	spread := rankFloat(runs, 0.975) - rankFloat(runs, 0.025)

	rounds := []Round{{Alone: alone, Setting: bursty()}}
	width := func(block time.Duration) float64 {
		got, err := PairedRatio(rounds, Bootstrap{Q: 0.99, Level: 0.95, Iterations: 500, Block: block, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		return got.High - got.Low
	}
	byRequest, byBlock := width(0), width(time.Second)
	t.Logf("95 %% of runs' p99 ratios in a range %.3f wide; intervals %.3f wide request by request, %.3f in blocks of 1 s", spread, byRequest, byBlock)
	if byRequest > 0.75*spread {
		t.Errorf("request by request the interval is %.3f wide, want it narrower than 3/4 of the runs' spread %.3f", byRequest, spread)
	}
	if byBlock < 0.8*spread {
		t.Errorf("in blocks of 1 s the interval is %.3f wide, want at least 0.8 of the runs' spread %.3f", byBlock, spread)
	}
}

// The same inputs and seed give the same ratio and interval; another seed another interval.
func TestPairedRatioDeterministic(t *testing.T) {
	rounds := roundsOf(rand.New(rand.NewPCG(7, 8)), 6, 1000, 0.5, 1.2)
	b := Bootstrap{Q: 0.99, Level: 0.95, Iterations: 200, Block: time.Second, Seed: 42}
	first, err := PairedRatio(rounds, b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := PairedRatio(rounds, b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("the same seed gave another result (-first +again):\n%s", diff)
	}
	b.Seed = 43
	other, err := PairedRatio(rounds, b)
	if err != nil {
		t.Fatal(err)
	}
	if other.Value != first.Value {
		t.Errorf("the value %v depends on the seed (%v with seed 42)", other.Value, first.Value)
	}
	if other.Low == first.Low && other.High == first.High {
		t.Errorf("seeds 42 and 43 gave the same interval [%v, %v]: is the seed used?", first.Low, first.High)
	}
}

// A request refused after an hour is left out: its latency says nothing of the service. A timeout counts at its
// latency, as in Summarize: with every tenth request of 300 timing out at 2 s (and blocks of 1 s, 100 requests, each
// holding ten of them), the setting's p99 is 2 s in every resample.
func TestPairedRatioRanksTimeoutsOnly(t *testing.T) {
	t0 := time.Unix(0, 0)
	alone := constantSamples(t0, 300, 2*time.Millisecond)
	tests := []struct {
		name string
		fail Sample
		want float64
	}{
		{name: "refused", fail: Sample{Latency: time.Hour, Err: "connection refused"}, want: 2},
		{name: "timed out", fail: Sample{Latency: 2 * time.Second, Err: "context deadline exceeded", Timeout: true}, want: 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setting := constantSamples(t0, 300, 4*time.Millisecond)
			for i := 0; i < len(setting); i += 10 {
				due := setting[i].Due
				setting[i] = tt.fail
				setting[i].Due = due
			}
			got, err := PairedRatio([]Round{{Alone: alone, Setting: setting}}, DefaultBootstrap())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(Ratio{Value: tt.want, Low: tt.want, High: tt.want, Rounds: []float64{tt.want}}, got, approxRatio); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPairedRatioErrors(t *testing.T) {
	t0 := time.Unix(0, 0)
	good := Round{Alone: constantSamples(t0, 100, time.Millisecond), Setting: constantSamples(t0, 100, 2*time.Millisecond)}
	failed := constantSamples(t0, 100, time.Second)
	for i := range failed {
		failed[i].Err = "connection refused"
	}
	tests := []struct {
		name      string
		rounds    []Round
		b         func(*Bootstrap)
		wantIn    string
		noLatency bool
	}{
		{name: "no rounds", wantIn: "no rounds"},
		{name: "a setting phase all failed", rounds: []Round{good, {Alone: good.Alone, Setting: failed}},
			wantIn: "round 2's setting phase: all 100 requests failed before a timeout: no latency to rank", noLatency: true},
		{name: "an alone phase all failed", rounds: []Round{{Alone: failed, Setting: good.Setting}},
			wantIn: "round 1's alone phase", noLatency: true},
		{name: "an empty phase", rounds: []Round{{Alone: good.Alone}}, wantIn: "round 1's setting phase: no requests", noLatency: true},
		{name: "an alone p99 of 0", rounds: []Round{{Alone: constantSamples(t0, 100, 0), Setting: good.Setting}}, wantIn: "quantile 0.99 of 0"},
		{name: "quantile 0", rounds: []Round{good}, b: func(b *Bootstrap) { b.Q = 0 }, wantIn: "quantile 0 is not in (0, 1]"},
		{name: "quantile above 1", rounds: []Round{good}, b: func(b *Bootstrap) { b.Q = 99 }, wantIn: "quantile 99 is not"},
		{name: "level 1", rounds: []Round{good}, b: func(b *Bootstrap) { b.Level = 1 }, wantIn: "confidence level 1 is not"},
		{name: "no iterations", rounds: []Round{good}, b: func(b *Bootstrap) { b.Iterations = 0 }, wantIn: "0 iterations"},
		{name: "a negative block", rounds: []Round{good}, b: func(b *Bootstrap) { b.Block = -time.Second }, wantIn: "block length -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := DefaultBootstrap()
			if tt.b != nil {
				tt.b(&b)
			}
			_, err := PairedRatio(tt.rounds, b)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("error %q, want it to say %q", err, tt.wantIn)
			}
			if errors.Is(err, ErrNoLatency) != tt.noLatency {
				t.Errorf("errors.Is(%q, ErrNoLatency) = %v, want %v", err, !tt.noLatency, tt.noLatency)
			}
		})
	}
}

// The block length in requests is the block's due time at the phase's own rate.
func TestNewPhaseSampleBlock(t *testing.T) {
	t0 := time.Unix(0, 0)
	tests := []struct {
		name    string
		samples []Sample
		block   time.Duration
		want    int
	}{
		{name: "1 s at 100 req/s", samples: constantSamples(t0, 6000, time.Millisecond), block: time.Second, want: 100},
		{name: "250 ms at 100 req/s", samples: constantSamples(t0, 6000, time.Millisecond), block: 250 * time.Millisecond, want: 25},
		{name: "request by request", samples: constantSamples(t0, 6000, time.Millisecond), block: 0, want: 1},
		{name: "shorter than a request", samples: constantSamples(t0, 6000, time.Millisecond), block: time.Millisecond, want: 1},
		{name: "longer than the phase", samples: constantSamples(t0, 50, time.Millisecond), block: time.Minute, want: 50},
		{name: "no due times", samples: samplesOf(t0, 0, time.Millisecond, time.Millisecond, time.Millisecond), block: time.Second, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := newPhaseSample(tt.samples, tt.block)
			if err != nil {
				t.Fatal(err)
			}
			if p.block != tt.want {
				t.Errorf("block of %d requests, want %d", p.block, tt.want)
			}
		})
	}
}

// The phase is ranked in due order whatever order its samples come in, and failures other than timeouts are
// dropped from it.
func TestNewPhaseSampleOrder(t *testing.T) {
	t0 := time.Unix(0, 0)
	ms := time.Millisecond
	s := []Sample{
		{Due: t0.Add(30 * ms), Latency: 1 * ms},
		{Due: t0.Add(10 * ms), Latency: 9 * ms},
		{Due: t0.Add(15 * ms), Latency: time.Hour, Err: "connection reset"},
		{Due: t0.Add(20 * ms), Latency: 5 * ms},
	}
	p, err := newPhaseSample(s, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Duration{1 * ms, 5 * ms, 9 * ms}, p.sorted); diff != "" {
		t.Errorf("sorted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int32{2, 1, 0}, p.rank); diff != "" {
		t.Errorf("ranks in due order (-want +got):\n%s", diff)
	}
}

// resample's selection by counted ranks finds what sorting the same draws finds, for every quantile and block
// length; the reference draws the same blocks from a generator seeded alike.
func TestResampleMatchesSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	samples := drawnSamples(time.Unix(0, 0), 997, func(int) time.Duration { return time.Duration(rng.IntN(400)) * time.Microsecond })
	reference := func(p phaseSample, r *rand.Rand, q float64) time.Duration {
		n := len(p.rank)
		var got []time.Duration
		for len(got) < n {
			start, l := r.IntN(n), min(p.block, n-len(got))
			for k := range l {
				got = append(got, p.sorted[p.rank[(start+k)%n]])
			}
		}
		slices.Sort(got)
		return rank(got, q)
	}
	counts := make([]int32, len(samples))
	for _, block := range []time.Duration{0, 70 * time.Millisecond, time.Second, time.Hour} {
		p, err := newPhaseSample(samples, block)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []float64{0.001, 0.5, 0.9, 0.99, 0.999, 1} {
			for seed := range uint64(20) {
				got := p.resample(rand.New(rand.NewPCG(seed, 0)), q, counts)
				want := reference(p, rand.New(rand.NewPCG(seed, 0)), q)
				if got != want {
					t.Fatalf("block %d, q %v, seed %d: %v, want %v", p.block, q, seed, got, want)
				}
			}
		}
	}
}

func TestQuantile(t *testing.T) {
	t0 := time.Unix(0, 0)
	var ls []time.Duration
	for i := 1000; i >= 1; i-- {
		ls = append(ls, time.Duration(i)*time.Millisecond)
	}
	s := append(samplesOf(t0, time.Millisecond, ls...), Sample{Latency: 5 * time.Hour, Err: "refused"})
	for q, want := range map[float64]time.Duration{0.5: 500 * time.Millisecond, 0.99: 990 * time.Millisecond, 0.999: 999 * time.Millisecond, 1: time.Second} {
		got, err := Quantile(s, q)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("q %v: %v, want %v", q, got, want)
		}
	}
	// Two timeouts at 3 s: the 1,002 ranked requests' p99.9 is the second slowest.
	timeout := Sample{Latency: 3 * time.Second, Err: "context deadline exceeded", Timeout: true}
	if got, err := Quantile(append(s, timeout, timeout), 0.999); err != nil || got != 3*time.Second {
		t.Errorf("with two timeouts the p99.9 is %v (error %v), want the timeouts' 3s", got, err)
	}
	if _, err := Quantile([]Sample{{Err: "refused"}}, 0.99); !errors.Is(err, ErrNoLatency) {
		t.Errorf("all failed: error %v, want ErrNoLatency", err)
	}
	if _, err := Quantile(s, 0); err == nil {
		t.Error("quantile 0: no error")
	}
}

// Two rounds of 1..1,000 ms alone; the setting's second round has its 10 slowest at 5 s. Pooled, the 2,000
// setting requests' p99.9 is the third slowest (5 s) and alone's 999 ms, a ratio no single round shows.
func TestPooledRatio(t *testing.T) {
	t0 := time.Unix(0, 0)
	series := func(top time.Duration) []Sample {
		var ls []time.Duration
		for i := 1; i <= 1000; i++ {
			l := time.Duration(i) * time.Millisecond
			if i > 990 && top > 0 {
				l = top
			}
			ls = append(ls, l)
		}
		return samplesOf(t0, 10*time.Millisecond, ls...)
	}
	rounds := []Round{{Alone: series(0), Setting: series(0)}, {Alone: series(0), Setting: series(5 * time.Second)}}
	got, err := PooledRatio(rounds, 0.999)
	if err != nil {
		t.Fatal(err)
	}
	if want := 5000.0 / 999; math.Abs(got-want) > 1e-12 {
		t.Errorf("pooled p99.9 ratio %v, want %v", got, want)
	}
	if _, err := PooledRatio(nil, 0.999); err == nil {
		t.Error("no rounds: no error")
	}
	if _, err := PooledRatio([]Round{{Alone: series(0)}}, 0.999); !errors.Is(err, ErrNoLatency) || !strings.Contains(err.Error(), "setting phases") {
		t.Errorf("no setting requests: error %v, want ErrNoLatency about the setting phases", err)
	}
}

func TestWorkScale(t *testing.T) {
	s, err := CalibrateWork(1000, 0.5) // 1,000 units/s alone on half a core: 2,000 per core-second
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(WorkScale{UnitsPerCoreSecond: 2000}, s); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := s.Cores(3000); got != 1.5 {
		t.Errorf("3,000 units/s is %v cores, want 1.5", got)
	}
	// Rounds of 1, 1.5, 2 and 0.05 cores: the median is 1.25.
	if got := s.MedianCores([]float64{2000, 3000, 4000, 100}); math.Abs(got-1.25) > 1e-12 {
		t.Errorf("median %v cores, want 1.25", got)
	}
	if got := (WorkScale{}).Cores(3000); got != 0 {
		t.Errorf("an uncalibrated scale gives %v cores, want 0", got)
	}
	for _, in := range [][2]float64{{0, 1}, {1000, 0}, {-5, 1}, {math.NaN(), 1}, {1000, math.NaN()}} {
		if _, err := CalibrateWork(in[0], in[1]); err == nil {
			t.Errorf("CalibrateWork(%v, %v): no error", in[0], in[1])
		}
	}
}

// The benchmark's size: six rounds of two phases of 6,000 requests (60 s at 100 req/s), 1,000 iterations.
func BenchmarkPairedRatio(b *testing.B) {
	rounds := roundsOf(rand.New(rand.NewPCG(11, 12)), 6, 6000, 0.5, 1.2)
	opt := DefaultBootstrap()
	for b.Loop() {
		if _, err := PairedRatio(rounds, opt); err != nil {
			b.Fatal(err)
		}
	}
}
