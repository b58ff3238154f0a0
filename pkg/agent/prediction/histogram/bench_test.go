package histogram

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkAdd: one sample a minute, as the trainer adds them.
func BenchmarkAdd(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	values := make([]float64, 1024)
	for i := range values {
		values[i] = 4 * rng.Float64()
	}
	h := mustNew(b, CPUOptions())
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.Add(values[i%len(values)], 1, t0.Add(time.Duration(i)*time.Minute))
	}
}

// BenchmarkPercentile on a CPU histogram trained with a week of one-minute samples up to 8 cores.
func BenchmarkPercentile(b *testing.B) {
	h := trained(b, Options{First: 0.025, Ratio: 0.05, MaxValue: 1024, HalfLife: 12 * time.Hour}, 7*24*60, 1)
	b.ReportAllocs()
	for b.Loop() {
		h.Percentile(0.95)
	}
}

// BenchmarkMarshalBinary of the same histogram, as a checkpoint writes it.
func BenchmarkMarshalBinary(b *testing.B) {
	h := trained(b, CPUOptions(), 7*24*60, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.MarshalBinary(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnmarshalBinary of the same histogram, as the agent's start reads it.
func BenchmarkUnmarshalBinary(b *testing.B) {
	data := marshal(b, trained(b, CPUOptions(), 7*24*60, 1))
	h := mustNew(b, CPUOptions())
	b.ReportAllocs()
	for b.Loop() {
		if err := h.UnmarshalBinary(data); err != nil {
			b.Fatal(err)
		}
	}
}
