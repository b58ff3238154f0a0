package histogram

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mustNew(t testing.TB, o Options) *Histogram {
	t.Helper()
	h, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestBucketBoundaries(t *testing.T) {
	h := mustNew(t, CPUOptions())
	first, ratio := 0.025, 1.05 // variables: a constant product would be rounded differently
	tests := []struct {
		v    float64
		want int
	}{
		{v: -1, want: 0},
		{v: 0, want: 0},
		{v: 0.0249, want: 0},
		{v: 0.025, want: 1},
		{v: first * ratio * 0.9999, want: 1},
		{v: first * ratio, want: 2},
		{v: 1, want: 1 + 75}, // ln(40)/ln(1.05) = 75.6
		{v: 2, want: 1 + 89}, // ln(80)/ln(1.05) = 89.8
		{v: 1024, want: 218}, // MaxValue: the last bucket
		{v: 1e12, want: 218}, // above MaxValue: the last bucket
		{v: math.Inf(1), want: 218},
	}
	for _, tt := range tests {
		if got := h.bucket(tt.v); got != tt.want {
			t.Errorf("bucket(%v) = %d, want %d", tt.v, got, tt.want)
		}
	}
	// Every boundary, exactly and a hair below, for both default options and one with wide buckets.
	for _, o := range []Options{CPUOptions(), MemoryOptions(), {First: 3, Ratio: 1.5, MaxValue: 1e6, HalfLife: time.Hour}} {
		h := mustNew(t, o)
		n := o.NumBuckets()
		for i := 1; i < n; i++ {
			start := o.bucketStart(i)
			if got := h.bucket(start); got != i {
				t.Errorf("%+v: bucket(start %d = %v) = %d", o, i, start, got)
			}
			if got := h.bucket(math.Nextafter(start, 0)); got != i-1 {
				t.Errorf("%+v: bucket(just below start %d = %v) = %d", o, i, start, got)
			}
			if want := o.First * math.Pow(1+o.Ratio, float64(i-1)); math.Abs(start-want) > 1e-12*want {
				t.Errorf("%+v: start of bucket %d = %v, want %v", o, i, start, want)
			}
		}
	}
}

// sample is one weighted observation for the brute-force percentile.
type sample struct {
	v, w float64
	at   time.Time
}

// brutePercentile is the smallest sample value at which the cumulative decayed weight of the sorted samples reaches
// p of the total: the definition, computed without buckets. Weights decay to the time end.
func brutePercentile(samples []sample, p float64, halfLife time.Duration, end time.Time) float64 {
	s := slices.Clone(samples)
	sort.Slice(s, func(i, j int) bool { return s[i].v < s[j].v })
	ws := make([]float64, len(s))
	var total float64
	for i, x := range s {
		ws[i] = x.w * math.Exp2(float64(x.at.Sub(end))/float64(halfLife))
		total += ws[i]
	}
	var cum float64
	for i, x := range s {
		cum += ws[i]
		if cum >= p*total {
			return x.v
		}
	}
	return s[len(s)-1].v
}

// TestPercentileAgainstBruteForce: for random weighted, decaying samples from several distributions, each percentile
// is the upper bound of the bucket that holds the brute-force percentile, so at most Ratio above it.
func TestPercentileAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 1))
	dists := map[string]func() float64{
		"uniform 0-8 cores": func() float64 { return 8 * rng.Float64() },
		"lognormal":         func() float64 { return math.Exp(rng.NormFloat64()) },
		"exponential":       func() float64 { return rng.ExpFloat64() * 0.5 },
		"bimodal":           func() float64 { return []float64{0.1, 6}[rng.IntN(2)] * (1 + 0.2*rng.Float64()) },
		"mostly tiny":       func() float64 { return 0.03 * rng.Float64() },
		"wide range":        func() float64 { return math.Exp(rng.Float64()*14 - 5) }, // 0.007 to 1100: both ends
	}
	o := CPUOptions()
	ps := []float64{0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.999, 1}
	for name, draw := range dists {
		for _, weighted := range []bool{false, true} {
			h := mustNew(t, o)
			var samples []sample
			at := t0
			for range 5000 {
				at = at.Add(time.Duration(rng.IntN(int(10 * time.Minute))))
				w := 1.0
				if weighted {
					w = 0.1 + 10*rng.Float64()
				}
				v := draw()
				h.Add(v, w, at)
				samples = append(samples, sample{v, w, at})
			}
			for _, p := range ps {
				want := brutePercentile(samples, p, o.HalfLife, at)
				got := h.Percentile(p)
				if upper := o.bucketStart(h.bucket(want) + 1); got != upper {
					t.Errorf("%s (weighted %v): p%v = %v, want %v, the upper bound of the bucket holding the brute-force %v",
						name, weighted, p*100, got, upper, want)
				}
				if want >= o.First && want <= o.MaxValue && !(got > want && got <= want*(1+o.Ratio)*(1+1e-12)) {
					t.Errorf("%s (weighted %v): p%v = %v is not within one bucket above the brute-force %v", name, weighted, p*100, got, want)
				}
			}
		}
	}
}

func TestPercentileEdges(t *testing.T) {
	h := mustNew(t, CPUOptions())
	if !h.IsEmpty() || h.Percentile(0.5) != 0 || h.TotalWeight() != 0 || h.TotalWeightAt(t0) != 0 || !h.ReferenceTime().IsZero() {
		t.Fatalf("a new histogram is not empty: %v", h)
	}
	h.Add(1, 1, t0)
	h.Add(3, 1, t0)
	lo, hi := h.opts.bucketStart(h.bucket(1)+1), h.opts.bucketStart(h.bucket(3)+1)
	for p, want := range map[float64]float64{-1: lo, 0: lo, 0.5: lo, 0.5000001: hi, 1: hi, 7: hi, math.NaN(): lo} {
		if got := h.Percentile(p); got != want {
			t.Errorf("Percentile(%v) = %v, want %v", p, got, want)
		}
	}
	// Values beyond MaxValue saturate at the last bucket's upper bound.
	h.Add(5000, 100, t0)
	if got, want := h.Percentile(1), h.opts.bucketStart(h.numBuckets); got != want || got < h.opts.MaxValue {
		t.Errorf("Percentile(1) with a value above MaxValue = %v, want %v (≥ MaxValue)", got, want)
	}
}

func TestAddIgnoresInvalidSamples(t *testing.T) {
	h := mustNew(t, CPUOptions())
	h.Add(1, 1, t0)
	before := h.TotalWeight()
	for _, s := range []struct{ v, w float64 }{
		{math.NaN(), 1}, {1, 0}, {1, -1}, {1, math.NaN()}, {1, math.Inf(1)},
	} {
		h.Add(s.v, s.w, t0)
	}
	h.Add(1, 1, t0.Add(-2000*12*time.Hour)) // underflows to zero weight
	if h.TotalWeight() != before {
		t.Fatalf("invalid samples changed the total weight from %v to %v", before, h.TotalWeight())
	}
}

// TestDecay: two equal samples one half-life apart weigh 1:2, and a sample many half-lives old barely counts.
func TestDecay(t *testing.T) {
	o := CPUOptions()
	h := mustNew(t, o)
	h.Add(0.5, 1, t0)
	h.Add(4, 1, t0.Add(o.HalfLife))
	older, newer := h.weights[h.bucket(0.5)], h.weights[h.bucket(4)]
	if newer/older != 2 {
		t.Fatalf("weights one half-life apart: %v and %v, want a ratio of 2", older, newer)
	}
	if got := h.TotalWeightAt(t0.Add(o.HalfLife)); got != 1.5 {
		t.Errorf("TotalWeightAt(second sample) = %v, want 1.5", got)
	}
	if got := h.TotalWeightAt(t0.Add(3 * o.HalfLife)); got != 0.375 {
		t.Errorf("TotalWeightAt(two half-lives later) = %v, want 0.375", got)
	}
	// The older sample is a third of the weight: p33 is its bucket, p34 the newer one's.
	if got, want := h.Percentile(0.33), o.bucketStart(h.bucket(0.5)+1); got != want {
		t.Errorf("p33 = %v, want %v", got, want)
	}
	if got, want := h.Percentile(0.34), o.bucketStart(h.bucket(4)+1); got != want {
		t.Errorf("p34 = %v, want %v", got, want)
	}

	// 10,000 samples of 0.1 core 30 half-lives (15 days) before one sample of 3 cores: the old ones weigh
	// 10,000·2^-30 ≈ 1e-5 of the new one, so even p1 is the new sample.
	h = mustNew(t, o)
	for i := range 10000 {
		h.Add(0.1, 1, t0.Add(time.Duration(i)*time.Second))
	}
	h.Add(3, 1, t0.Add(10000*time.Second+30*o.HalfLife))
	if got, want := h.Percentile(0.01), o.bucketStart(h.bucket(3)+1); got != want {
		t.Errorf("p1 after 30 half-lives = %v, want %v: old samples still count", got, want)
	}
	if got := h.Percentile(0.000005); got != o.bucketStart(h.bucket(0.1)+1) {
		t.Errorf("p0.0005 = %v, want the old samples' bucket: they should still count a little", got)
	}
}

// TestShiftKeepsPercentiles: moving the reference time changes no percentile and no decayed total.
func TestShiftKeepsPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	o := MemoryOptions()
	h := mustNew(t, o)
	at := t0
	for range 3000 {
		at = at.Add(time.Minute)
		h.Add(float64(rng.IntN(64<<30)), 1, at)
	}
	pcts := func() []float64 {
		var out []float64
		for p := 0.0; p <= 1; p += 0.001 {
			out = append(out, h.Percentile(p))
		}
		return out
	}
	before, totalAt, ref := pcts(), h.TotalWeightAt(at), h.ReferenceTime()
	h.shift(37)
	if got := h.ReferenceTime(); !got.Equal(ref.Add(37 * o.HalfLife)) {
		t.Fatalf("reference time after a 37 half-life shift = %v, want %v", got, ref.Add(37*o.HalfLife))
	}
	if after := pcts(); !slices.Equal(before, after) {
		t.Fatalf("percentiles changed across a shift:\nbefore %v\nafter  %v", before, after)
	}
	if got := h.TotalWeightAt(at); math.Abs(got-totalAt) > 1e-12*totalAt {
		t.Fatalf("TotalWeightAt changed across a shift: %v, was %v", got, totalAt)
	}
}

// TestYearsOfSamples trains a histogram for three simulated years, a sample every 10 minutes of a diurnal pattern
// that changes each month, and checks along the way that it renormalised, stayed finite, and still answers what
// the brute-force computation over every sample answers.
func TestYearsOfSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	o := CPUOptions()
	h := mustNew(t, o)
	var samples []sample
	shifts := 0
	ref := time.Time{}
	at := t0
	const step = 10 * time.Minute
	for month := range 36 {
		base := 0.5 + 3*rng.Float64()
		for range 30 * 24 * time.Hour / step {
			at = at.Add(step)
			hour := float64(at.Hour()) + float64(at.Minute())/60
			v := base * (1 + 0.6*math.Sin(2*math.Pi*hour/24)) * (1 + 0.1*rng.NormFloat64())
			h.Add(v, 1, at)
			samples = append(samples, sample{v, 1, at})
			if !h.ReferenceTime().Equal(ref) {
				shifts++
				ref = h.ReferenceTime()
			}
			if math.IsInf(h.TotalWeight(), 0) || math.IsNaN(h.TotalWeight()) || h.TotalWeight() > math.Exp2(maxExponent+20) {
				t.Fatalf("month %d: total weight %v left the renormalised range", month, h.TotalWeight())
			}
		}
		if month%6 != 5 {
			continue
		}
		// The brute force weighs only the last 200 half-lives; older samples weigh under 2^-200 of a new one.
		recent := samples[max(0, len(samples)-int(200*o.HalfLife/step)):]
		for _, p := range []float64{0.5, 0.9, 0.95, 0.98, 0.99} {
			want := brutePercentile(recent, p, o.HalfLife, at)
			if got, upper := h.Percentile(p), o.bucketStart(h.bucket(want)+1); got != upper {
				t.Errorf("month %d: p%v = %v, want %v (brute force %v)", month, p*100, got, upper, want)
			}
		}
		if got := h.TotalWeightAt(at); math.Abs(got-brutalTotal(recent, o.HalfLife, at)) > 1e-9*got {
			t.Errorf("month %d: TotalWeightAt = %v, brute force %v", month, got, brutalTotal(recent, o.HalfLife, at))
		}
	}
	// 3 years of 12 h half-lives is 2,190; the reference moves every 50.
	if shifts < 40 {
		t.Fatalf("the reference time moved %d times in three years, want at least 40", shifts)
	}
	if len(h.weights) > o.NumBuckets() {
		t.Fatalf("%d buckets stored, more than the %d the options have", len(h.weights), o.NumBuckets())
	}
}

func brutalTotal(samples []sample, halfLife time.Duration, end time.Time) float64 {
	var total float64
	for _, s := range samples {
		total += s.w * math.Exp2(float64(s.at.Sub(end))/float64(halfLife))
	}
	return total
}

// TestForgetsAfterAges: a sample more than 1,100 half-lives after the reference starts the histogram afresh.
func TestForgetsAfterAges(t *testing.T) {
	o := CPUOptions()
	h := mustNew(t, o)
	h.Add(0.1, 1, t0)
	later := t0.Add(200 * 365 * 24 * time.Hour)
	h.Add(5, 1, later)
	if got, want := h.Percentile(0), o.bucketStart(h.bucket(5)+1); got != want || h.TotalWeight() != 1 || !h.ReferenceTime().Equal(later) {
		t.Fatalf("after 200 years: p0 = %v (want %v), total %v (want 1), reference %v (want %v)",
			got, want, h.TotalWeight(), h.ReferenceTime(), later)
	}
}

// TestMemoryGrowsOnlyAsNeeded: buckets are stored up to the highest one reached, never past the options' count.
func TestMemoryGrowsOnlyAsNeeded(t *testing.T) {
	o := CPUOptions()
	h := mustNew(t, o)
	h.Add(2, 1, t0)
	if got := len(h.weights); got != 91 {
		t.Errorf("after a 2-core sample %d buckets stored, want 91 (the package doc's 728 bytes)", got)
	}
	h.Add(1e9, 1, t0)
	if got := len(h.weights); got != o.NumBuckets() {
		t.Errorf("after a sample above MaxValue %d buckets stored, want %d", got, o.NumBuckets())
	}
}
