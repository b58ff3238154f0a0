// Package histogram is the decaying histogram that the agent's peak prediction trains: one per resource of each
// model (a prod pod, a priority band, the system part). It counts weighted samples of usage in exponential buckets,
// lets old samples fade with a half-life, and answers percentiles.
//
// # Model
//
// Bucket 0 covers [0, First); bucket i ≥ 1 covers [First·(1+Ratio)^(i-1), First·(1+Ratio)^i); the bucket that
// holds MaxValue is the last and takes every larger value too. A percentile is the upper bound of the bucket where
// the cumulative weight reaches it, so it over-estimates by at most one bucket (Ratio, 5 % by default) and never
// under-estimates: the safe side for a peak. A sample's weight halves every HalfLife (CPU 12 h, memory 24 h by
// default): weights are stored relative to a reference time, and that reference moves forward by whole half-lives
// (an exact division by a power of two) before the scale leaves float64's comfortable range, so a histogram can be
// trained for years without changing its answers.
//
// The behaviour follows the Vertical Pod Autoscaler recommender's decaying histogram (exponential buckets,
// half-life decay against a reference time that is renormalised, percentile as a bucket's upper bound). It is
// written here rather than imported because depending on k8s.io/autoscaler's vertical-pod-autoscaler module would
// pull the autoscaler's dependency tree into the agent for about 300 lines; the encoding is also our own, versioned
// and checksummed for the agent's checkpoints.
//
// # Memory
//
// A Histogram is 88 bytes plus 8 bytes per bucket up to the highest bucket a sample has reached: at most 219 buckets
// (1,752 bytes) with CPUOptions and 314 (2,512 bytes) with MemoryOptions; a pod peaking at 2 cores uses 91 buckets
// (728 bytes). MaxBuckets (4,096) bounds any options, including those read from a checkpoint.
//
// # Encoding
//
// MarshalBinary writes a versioned, checksummed, sparse encoding: 49 bytes of header (options, reference time), the
// bucket count (1 or 2 bytes), 9 bytes per non-empty bucket (10 after a gap of 128 or more), 4 bytes of CRC-32C:
// 54 bytes for an empty histogram, at most about 2 KiB for a CPU one. UnmarshalBinary refuses another version
// (ErrUnsupportedVersion) and anything truncated, damaged or holding invalid options (ErrCorrupt), leaving the
// histogram unchanged.
package histogram
