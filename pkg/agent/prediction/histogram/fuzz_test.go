package histogram

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"
)

// FuzzUnmarshalBinary: any input is either refused with ErrCorrupt or ErrUnsupportedVersion, leaving the histogram
// as it was, or accepted as a histogram that encodes back to exactly the same bytes. Each input is tried as given
// and with its checksum made right, so that the fuzzer reaches the checks behind the checksum.
func FuzzUnmarshalBinary(f *testing.F) {
	for _, h := range []*Histogram{mustNew(f, CPUOptions()), trained(f, CPUOptions(), 300, 1), trained(f, MemoryOptions(), 50, 2)} {
		b := marshal(f, h)
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte("ghst\x02"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, in := range [][]byte{b, reseal(b)} {
			h := trained(t, Options{First: 1, Ratio: 0.5, MaxValue: 100, HalfLife: time.Hour}, 20, 3)
			before := marshal(t, h)
			err := h.UnmarshalBinary(slices.Clone(in))
			if err != nil {
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedVersion) {
					t.Fatalf("UnmarshalBinary error %v wraps neither ErrCorrupt nor ErrUnsupportedVersion", err)
				}
				if !bytes.Equal(marshal(t, h), before) {
					t.Fatal("a refused buffer changed the histogram")
				}
				continue
			}
			if out := marshal(t, h); !bytes.Equal(out, in) {
				t.Fatalf("accepted %x, which encodes back as %x", in, out)
			}
			if err := h.Options().Validate(); err != nil {
				t.Fatalf("accepted invalid options: %v", err)
			}
			if p := h.Percentile(0.95); h.IsEmpty() != (p == 0) || p < 0 {
				t.Fatalf("accepted a histogram whose p95 is %v (empty %v)", p, h.IsEmpty())
			}
		}
	})
}
