package histogram

import (
	"fmt"
	"math"
	"time"
)

// maxExponent is how many half-lives a sample may be newer than the reference time before the reference moves:
// a sample's weight is scaled by up to 2^maxExponent, far from float64's limit (2^1023) even summed over years.
const maxExponent = 50

// forgetExponent is how many half-lives a sample may be newer than the reference time before everything counted so
// far is forgotten: moving the reference that far would divide every weight by more than 2^1100, to below the
// smallest float64.
const forgetExponent = 1100

// Histogram is a decaying histogram of samples with exponential buckets. The zero value is not usable; build one
// with New. A Histogram is not safe for concurrent use.
//
// Weights are kept relative to a reference time: a sample at time t with weight w counts w·2^((t-ref)/HalfLife),
// so older samples count less than newer ones without touching every bucket on each Add. When a sample would be
// scaled beyond 2^50, the reference moves forward by a whole number of half-lives and every bucket is divided by
// that power of two, which is exact in floating point: percentiles do not change.
type Histogram struct {
	opts Options
	// numBuckets is opts.NumBuckets(), computed once.
	numBuckets int
	// weights holds buckets 0..highest touched; it grows on demand and never past numBuckets. It is empty (nil) if
	// and only if the histogram is. Sums over it are always taken in bucket order, so that they are a function of
	// the buckets alone and a histogram decoded from MarshalBinary answers to the last bit what the original did.
	weights []float64
	// ref is the reference time, without a monotonic clock reading so that it means the same after a round trip
	// through MarshalBinary; zero while the histogram is empty.
	ref time.Time
}

// New returns an empty histogram, or an error if the options are invalid.
func New(o Options) (*Histogram, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Histogram{opts: o, numBuckets: o.NumBuckets()}, nil
}

// Options returns the options the histogram was built with.
func (h *Histogram) Options() Options {
	return h.opts
}

// Add counts a sample of value with weight at time at. A value below zero counts in bucket 0, one above MaxValue in
// the last bucket. A NaN value, or a weight that is not positive and finite, is ignored, as is a sample so much older
// than the histogram's reference time that its weight underflows to zero.
func (h *Histogram) Add(value, weight float64, at time.Time) {
	if math.IsNaN(value) || !(weight > 0) || math.IsInf(weight, 0) {
		return
	}
	at = at.Round(0)
	if len(h.weights) == 0 {
		h.ref = at
	}
	exp := h.exponent(at)
	switch {
	case exp > forgetExponent:
		h.reset(at)
		exp = 0
	case exp > maxExponent:
		h.shift(math.Floor(exp))
		exp = h.exponent(at)
	}
	w := weight * math.Exp2(exp)
	if !(w > 0) || math.IsInf(w, 0) {
		return
	}
	i := h.bucket(value)
	if i >= len(h.weights) {
		// Grow to exactly what is used: most workloads never touch the upper buckets.
		grown := make([]float64, i+1)
		copy(grown, h.weights)
		h.weights = grown
	}
	h.weights[i] += w
}

// Percentile returns an upper estimate of the p-th percentile of the weighted samples, p in [0, 1] (clamped; NaN
// counts as 0): the upper bound of the first bucket at which the cumulative weight reaches p of the total. It is at
// most one bucket (Ratio) above the true percentile; for bucket 0 it is First, for the last bucket the bound after
// MaxValue. An empty histogram returns 0.
func (h *Histogram) Percentile(p float64) float64 {
	if len(h.weights) == 0 {
		return 0
	}
	if !(p > 0) {
		p = 0
	}
	if p > 1 {
		p = 1
	}
	// The running sum adds the buckets in the same order as the total, so p = 1 reaches the last non-empty bucket.
	threshold := p * h.TotalWeight()
	var cum float64
	last := 0
	for i, w := range h.weights {
		if w == 0 {
			continue
		}
		cum += w
		last = i
		if cum >= threshold {
			return h.opts.bucketStart(i + 1)
		}
	}
	return h.opts.bucketStart(last + 1)
}

// TotalWeight returns the sum of the weights in the current reference frame: each sample's weight scaled by
// 2^((t-ReferenceTime)/HalfLife). It is comparable between two calls only while ReferenceTime has not moved; for an
// absolute measure use TotalWeightAt.
func (h *Histogram) TotalWeight() float64 {
	var sum float64
	for _, w := range h.weights {
		sum += w
	}
	return sum
}

// TotalWeightAt returns the sum of the weights decayed to time t: a sample of weight w taken at t counts w, one a
// half-life older counts w/2. With weight 1 per sample per minute it is the number of minutes of "recent" data.
func (h *Histogram) TotalWeightAt(t time.Time) float64 {
	if len(h.weights) == 0 {
		return 0
	}
	return h.TotalWeight() * math.Exp2(-h.exponent(t.Round(0)))
}

// ReferenceTime returns the time at which the weights in TotalWeight's frame are taken at face value; zero while the
// histogram is empty.
func (h *Histogram) ReferenceTime() time.Time {
	return h.ref
}

// IsEmpty says whether no sample has been counted.
func (h *Histogram) IsEmpty() bool {
	return len(h.weights) == 0
}

// String shows the options, the reference time and the total weight, for logs.
func (h *Histogram) String() string {
	return fmt.Sprintf("histogram{first=%v ratio=%v max=%v half-life=%v ref=%v total=%v buckets=%d/%d}",
		h.opts.First, h.opts.Ratio, h.opts.MaxValue, h.opts.HalfLife, h.ref, h.TotalWeight(), len(h.weights), h.numBuckets)
}

// exponent is how many half-lives t is after the reference time (negative before it). time.Time.Sub saturates,
// so times centuries apart give a huge exponent rather than a wrong one.
func (h *Histogram) exponent(t time.Time) float64 {
	return float64(t.Sub(h.ref)) / float64(h.opts.HalfLife)
}

// shift moves the reference time forward by n whole half-lives and divides every weight by 2^n. Dividing by a power
// of two is exact (until a weight falls below float64's normal range, where it no longer matters), so percentiles
// and ratios of weights are unchanged.
func (h *Histogram) shift(n float64) {
	if n <= 0 {
		return
	}
	h.ref = h.ref.Add(time.Duration(n) * h.opts.HalfLife)
	nonZero := false
	for i, w := range h.weights {
		w = math.Ldexp(w, -int(n))
		h.weights[i] = w
		nonZero = nonZero || w != 0
	}
	if !nonZero {
		h.weights = nil
	}
}

// reset forgets every sample and makes t the reference time.
func (h *Histogram) reset(t time.Time) {
	h.weights = nil
	h.ref = t
}

// bucket returns the index of the bucket that holds v.
func (h *Histogram) bucket(v float64) int {
	if !(v >= h.opts.First) {
		return 0
	}
	last := h.numBuckets - 1
	if v >= h.opts.bucketStart(last) {
		return last
	}
	i := 1 + int(math.Log(v/h.opts.First)/math.Log1p(h.opts.Ratio))
	// The logarithm can land one bucket off near a boundary; the boundaries are what bucketStart says.
	for i > 1 && v < h.opts.bucketStart(i) {
		i--
	}
	for i < last && v >= h.opts.bucketStart(i+1) {
		i++
	}
	return i
}
