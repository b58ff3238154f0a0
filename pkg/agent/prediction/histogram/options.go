package histogram

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// MaxBuckets bounds the number of buckets that Options may describe, and so the memory of one histogram
// (8 bytes a bucket) and the size of its encoding. Options read from a checkpoint cannot ask for more.
const MaxBuckets = 4096

// Options describe a histogram's buckets and decay.
//
// Buckets are exponential: bucket 0 covers [0, First), bucket i ≥ 1 covers [First·(1+Ratio)^(i-1),
// First·(1+Ratio)^i). The last bucket is the one that holds MaxValue, and it also takes every value above MaxValue.
// A sample's weight halves every HalfLife of age.
type Options struct {
	// First is the upper bound of bucket 0 and the lower bound of bucket 1, in the unit of the values.
	First float64
	// Ratio is how much wider each bucket is than the one before it: 0.05 makes buckets 5 % apart, which is the
	// precision of a percentile.
	Ratio float64
	// MaxValue is the largest value the buckets resolve; larger values count in the last bucket.
	MaxValue float64
	// HalfLife is the age at which a sample's weight has halved.
	HalfLife time.Duration
}

// CPUOptions are the defaults for CPU usage in cores: from 0.025 core to 1024 cores, 5 % apart (219 buckets), with
// a half-life of 12 hours.
func CPUOptions() Options {
	return Options{First: 0.025, Ratio: 0.05, MaxValue: 1024, HalfLife: 12 * time.Hour}
}

// MemoryOptions are the defaults for memory usage in bytes: from 4 MiB to 16 TiB, 5 % apart (314 buckets), with a
// half-life of 24 hours. 16 TiB leaves room for a node-wide model on the largest hosts.
func MemoryOptions() Options {
	return Options{First: 4 << 20, Ratio: 0.05, MaxValue: 16 << 40, HalfLife: 24 * time.Hour}
}

// Validate says what is wrong with the options, or returns nil: First, Ratio and MaxValue must be finite, First and
// Ratio positive, MaxValue at least First, HalfLife positive, and the buckets at most MaxBuckets.
func (o Options) Validate() error {
	var errs []error
	if !(o.First > 0) || math.IsInf(o.First, 0) {
		errs = append(errs, fmt.Errorf("first bucket bound %v must be a positive finite number", o.First))
	}
	if !(o.Ratio > 0) || math.IsInf(o.Ratio, 0) {
		errs = append(errs, fmt.Errorf("bucket ratio %v must be a positive finite number", o.Ratio))
	}
	if !(o.MaxValue >= o.First) || math.IsInf(o.MaxValue, 0) {
		errs = append(errs, fmt.Errorf("max value %v must be finite and at least the first bucket bound %v", o.MaxValue, o.First))
	}
	if o.HalfLife <= 0 {
		errs = append(errs, fmt.Errorf("half-life %v must be positive", o.HalfLife))
	}
	if len(errs) == 0 {
		if n := o.bucketsFloat(); !(n <= MaxBuckets) {
			errs = append(errs, fmt.Errorf("%v buckets from %v to %v at ratio %v are more than %d", n, o.First, o.MaxValue, o.Ratio, MaxBuckets))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid histogram options: %w", errors.Join(errs...))
	}
	return nil
}

// NumBuckets is the number of buckets the options describe; the options must be valid.
func (o Options) NumBuckets() int {
	return int(o.bucketsFloat())
}

// bucketsFloat is NumBuckets before the conversion to int, so that Validate can refuse a count that would overflow
// it. Bucket 0, then buckets 1... up to the one that holds MaxValue.
func (o Options) bucketsFloat() float64 {
	n := 2 + math.Floor(math.Log(o.MaxValue/o.First)/math.Log1p(o.Ratio))
	if !(n <= MaxBuckets+1) {
		return n // too many, or NaN: Validate refuses it
	}
	// The logarithms may land a hair off an exact boundary; the bucket that holds MaxValue is the last.
	for n > 2 && o.bucketStart(int(n-1)) > o.MaxValue {
		n--
	}
	for n <= MaxBuckets && o.bucketStart(int(n)) <= o.MaxValue {
		n++
	}
	return n
}

// bucketStart is the lower bound of bucket i; bucket i's upper bound is bucketStart(i+1).
func (o Options) bucketStart(i int) float64 {
	if i <= 0 {
		return 0
	}
	return o.First * math.Pow(1+o.Ratio, float64(i-1))
}
