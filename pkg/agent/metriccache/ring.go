package metriccache

import (
	"math"
	"time"
)

// ring holds one value per time bucket of a fixed step, for the last len(vals) buckets. Bucket b covers
// [b*step, (b+1)*step); slot b mod len(vals) holds it. An empty bucket holds NaN.
type ring struct {
	vals []float32
	// head is the newest bucket written; valid only when written is true.
	head    int64
	written bool
	// averaging rings keep the running sum and count of the head bucket, so the slot holds the mean of its samples;
	// other rings keep the last sample of each bucket.
	averaging bool
	sum       float64
	n         int32
}

func newRing(slots int, averaging bool) ring {
	r := ring{vals: make([]float32, slots), averaging: averaging}
	for i := range r.vals {
		r.vals[i] = float32(math.NaN())
	}
	return r
}

// put stores v in bucket b. A bucket older than the ring's span is dropped; on an averaging ring only the head
// bucket can still change.
func (r *ring) put(b int64, v float64) {
	n := int64(len(r.vals))
	switch {
	case !r.written:
		r.head, r.written, r.sum, r.n = b, true, 0, 0
	case b > r.head:
		// Clear the buckets skipped since the head; at most one lap.
		for i, gap := r.head+1, min(b-r.head, n); gap > 0; i, gap = i+1, gap-1 {
			r.vals[mod(i, n)] = float32(math.NaN())
		}
		r.head, r.sum, r.n = b, 0, 0
	case b <= r.head-n:
		return
	case r.averaging && b != r.head:
		return
	}
	if r.averaging {
		r.sum += v
		r.n++
		v = r.sum / float64(r.n)
	}
	r.vals[mod(b, n)] = float32(v)
}

// span is the time the ring covers.
func (r *ring) span(step time.Duration) time.Duration { return time.Duration(len(r.vals)) * step }

// collect appends the samples of buckets first..last (inclusive) to dst, oldest first, and returns it with the
// first and last bucket that held a sample.
func (r *ring) collect(dst []float64, first, last int64) (out []float64, firstB, lastB int64) {
	firstB, lastB = -1, -1
	if !r.written {
		return dst, firstB, lastB
	}
	n := int64(len(r.vals))
	first = max(first, r.head-n+1)
	last = min(last, r.head)
	for b := first; b <= last; b++ {
		v := r.vals[mod(b, n)]
		if v != v { // NaN: empty bucket
			continue
		}
		if firstB < 0 {
			firstB = b
		}
		lastB = b
		dst = append(dst, float64(v))
	}
	return dst, firstB, lastB
}

func mod(b, n int64) int64 {
	m := b % n
	if m < 0 {
		m += n
	}
	return m
}

// bucket is the bucket of t for a step.
func bucket(t time.Time, step time.Duration) int64 {
	ns := t.UnixNano()
	s := int64(step)
	if ns < 0 {
		return (ns - s + 1) / s
	}
	return ns / s
}
