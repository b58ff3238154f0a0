package histogram

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// trained returns a histogram with n random samples over n minutes.
func trained(t testing.TB, o Options, n int, seed uint64) *Histogram {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	h := mustNew(t, o)
	for i := range n {
		h.Add(o.First*math.Exp(rng.Float64()*6), 0.5+rng.Float64(), t0.Add(time.Duration(i)*time.Minute))
	}
	return h
}

func marshal(t testing.TB, h *Histogram) []byte {
	t.Helper()
	b, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func percentiles(h *Histogram) []float64 {
	var out []float64
	for p := 0.0; p <= 1; p += 0.0005 {
		out = append(out, h.Percentile(p))
	}
	return out
}

// reseal replaces the checksum at the end of b with the right one for the rest, so that a test (or the fuzzer) can
// reach the checks behind it.
func reseal(b []byte) []byte {
	if len(b) < crcSize {
		return b
	}
	body := b[:len(b)-crcSize]
	return binary.LittleEndian.AppendUint32(slices.Clone(body), crc32.Checksum(body, crcTable))
}

func TestMarshalRoundTrip(t *testing.T) {
	empty := mustNew(t, MemoryOptions())
	for name, h := range map[string]*Histogram{
		"empty":     empty,
		"cpu":       trained(t, CPUOptions(), 5000, 1),
		"memory":    trained(t, MemoryOptions(), 5000, 2),
		"one value": trained(t, Options{First: 1, Ratio: 1, MaxValue: 1, HalfLife: time.Hour}, 3, 3),
		"years":     trained(t, CPUOptions(), 2*365*24*60, 4), // shifted many times
	} {
		t.Run(name, func(t *testing.T) {
			b := marshal(t, h)
			got := mustNew(t, CPUOptions())
			if err := got.UnmarshalBinary(b); err != nil {
				t.Fatalf("UnmarshalBinary(MarshalBinary()) = %v", err)
			}
			if got.Options() != h.Options() || got.IsEmpty() != h.IsEmpty() || got.TotalWeight() != h.TotalWeight() ||
				!got.ReferenceTime().Equal(h.ReferenceTime()) {
				t.Fatalf("round trip changed the histogram: %v, was %v", got, h)
			}
			if !slices.Equal(percentiles(got), percentiles(h)) {
				t.Fatal("round trip changed the percentiles")
			}
			if again := marshal(t, got); !bytes.Equal(again, b) {
				t.Fatal("a decoded histogram encodes differently")
			}
			// Both go on alike.
			next := h.ReferenceTime().Add(51 * h.Options().HalfLife)
			h2 := mustNew(t, h.Options())
			_ = h2.UnmarshalBinary(b)
			h2.Add(h.Options().First*3, 2, next)
			got.Add(h.Options().First*3, 2, next)
			if !slices.Equal(percentiles(got), percentiles(h2)) || got.TotalWeight() != h2.TotalWeight() {
				t.Fatal("a decoded histogram trains differently")
			}
		})
	}
	if n := len(marshal(t, empty)); n != 54 {
		t.Errorf("an empty histogram encodes in %d bytes, the package doc says 54", n)
	}
	full := mustNew(t, CPUOptions())
	for i := range full.numBuckets {
		full.Add(full.opts.bucketStart(i), 1, t0)
	}
	if n := len(marshal(t, full)); n > headerSize+2+219*9+crcSize {
		t.Errorf("a CPU histogram with every bucket encodes in %d bytes, more than 9 a bucket", n)
	}
	t.Logf("encoding sizes: empty %d B, every CPU bucket %d B, 5000 samples %d B", 54, len(marshal(t, full)),
		len(marshal(t, trained(t, CPUOptions(), 5000, 1))))
}

func TestUnmarshalRefuses(t *testing.T) {
	good := marshal(t, trained(t, CPUOptions(), 1000, 5))
	// patch returns good with n bytes at off replaced, resealed.
	patch := func(off int, p ...byte) []byte {
		b := slices.Clone(good)
		copy(b[off:], p)
		return reseal(b)
	}
	f64 := func(v float64) []byte { return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)) }
	bucketsOff := headerSize + 1 // the count of a 1000-sample histogram (123 buckets) takes 1 byte
	tests := []struct {
		name    string
		b       []byte
		wantIs  error
		wantErr string
	}{
		{name: "empty", b: nil, wantIs: ErrCorrupt, wantErr: "truncated at byte 0 reading magic"},
		{name: "garbage", b: []byte("{\"first\": 0.025}"), wantIs: ErrCorrupt, wantErr: "magic"},
		{name: "another version", b: patch(4, 2), wantIs: ErrUnsupportedVersion, wantErr: "version 2, this agent reads version 1"},
		{name: "another version, nothing after", b: []byte("ghst\x07"), wantIs: ErrUnsupportedVersion, wantErr: "version 7"},
		{name: "bad checksum", b: func() []byte { b := slices.Clone(good); b[60] ^= 1; return b }(), wantIs: ErrCorrupt, wantErr: "checksum"},
		{name: "trailing bytes", b: append(slices.Clone(good), 0), wantIs: ErrCorrupt},
		{name: "invalid options", b: patch(5, f64(-1)...), wantIs: ErrCorrupt, wantErr: "first bucket bound -1"},
		{name: "too many buckets", b: patch(13, f64(1e-9)...), wantIs: ErrCorrupt, wantErr: "more than 4096"},
		{name: "negative half-life", b: patch(29, 0, 0, 0, 0, 0, 0, 0, 0x80), wantIs: ErrCorrupt, wantErr: "half-life"},
		{name: "nanoseconds out of range", b: patch(45, 0xff, 0xff, 0xff, 0xff), wantIs: ErrCorrupt, wantErr: "nanoseconds"},
		{name: "count above the buckets", b: patch(headerSize, 0xdc, 0x01), wantIs: ErrCorrupt, wantErr: "non-empty buckets"},
		{name: "non-minimal varint", b: reseal(slices.Concat(good[:bucketsOff], []byte{0x80 | good[bucketsOff], 0}, good[bucketsOff+1:])), wantIs: ErrCorrupt, wantErr: "minimal"},
		{name: "bucket past the last", b: patch(bucketsOff, 0xff, 0x01), wantIs: ErrCorrupt, wantErr: "past the last bucket"},
		{name: "NaN weight", b: patch(bucketsOff+1, f64(math.NaN())...), wantIs: ErrCorrupt, wantErr: "weight NaN"},
		{name: "zero weight", b: patch(bucketsOff+1, f64(0)...), wantIs: ErrCorrupt, wantErr: "weight 0"},
		{name: "negative weight", b: patch(bucketsOff+1, f64(-2)...), wantIs: ErrCorrupt, wantErr: "weight -2"},
		{name: "infinite weight", b: patch(bucketsOff+1, f64(math.Inf(1))...), wantIs: ErrCorrupt, wantErr: "weight +Inf"},
		{name: "one huge weight", b: patch(bucketsOff+1, f64(math.MaxFloat64)...), wantIs: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := trained(t, MemoryOptions(), 100, 9)
			before := marshal(t, h)
			err := h.UnmarshalBinary(tt.b)
			if tt.wantIs == nil { // one huge weight alone is valid
				if err != nil {
					t.Fatalf("UnmarshalBinary = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.wantIs) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("UnmarshalBinary = %v, want %v containing %q", err, tt.wantIs, tt.wantErr)
			}
			if after := marshal(t, h); !bytes.Equal(after, before) {
				t.Fatal("a refused buffer changed the histogram")
			}
		})
	}
	// Every truncation is refused, not read as a smaller histogram.
	for n := range len(good) {
		h := mustNew(t, CPUOptions())
		if err := h.UnmarshalBinary(good[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("UnmarshalBinary of the first %d of %d bytes = %v, want ErrCorrupt", n, len(good), err)
		}
		// Resealing a buffer cut inside the header makes the checksum's first byte the version.
		if err := h.UnmarshalBinary(reseal(good[:n])); !errors.Is(err, ErrCorrupt) && (n >= 9 || !errors.Is(err, ErrUnsupportedVersion)) {
			t.Fatalf("UnmarshalBinary of the first %d of %d bytes resealed = %v, want ErrCorrupt", n, len(good), err)
		}
		if !h.IsEmpty() {
			t.Fatal("a refused buffer changed the histogram")
		}
	}
	// Two huge weights overflow the total.
	h := mustNew(t, CPUOptions())
	h.Add(1, math.MaxFloat64/2, t0)
	h.Add(2, math.MaxFloat64/2, t0)
	b := marshal(t, h)
	off := len(b) - crcSize - 8
	copy(b[off:], f64(math.MaxFloat64))
	copy(b[off-8-1:], f64(math.MaxFloat64))
	if err := h.UnmarshalBinary(reseal(b)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "infinity") {
		t.Fatalf("UnmarshalBinary of weights summing to infinity = %v", err)
	}
}
