package resctrl

import (
	"strings"
	"testing"
)

func TestCBM(t *testing.T) {
	tests := []struct {
		name       string
		cache      Cache
		start, end int64
		want       uint64
		wantErr    string
	}{
		// 11 ways (7ff): 0-30 % is ways 0 .. ceil(3.3) = 4 ways.
		{name: "BE default on 11 ways", cache: Cache{Mask: 0x7ff, MinBits: 1}, start: 0, end: 30, want: 0xf},
		{name: "everything", cache: Cache{Mask: 0x7ff, MinBits: 1}, start: 0, end: 100, want: 0x7ff},
		// 20 ways: each 5 %: 50-75 % is ways 10..14.
		{name: "upper quarter of 20 ways", cache: Cache{Mask: 0xfffff, MinBits: 1}, start: 50, end: 75, want: 0x7c00},
		// floor(11 x 0.5) = 5, ceil(11 x 0.6) = 7: ways 5 and 6.
		{name: "rounded outward", cache: Cache{Mask: 0x7ff, MinBits: 2}, start: 50, end: 60, want: 0x60},
		{name: "a cbm_mask not starting at bit 0", cache: Cache{Mask: 0xff0, MinBits: 1}, start: 0, end: 50, want: 0xf0},
		{name: "fewer ways than min_cbm_bits", cache: Cache{Mask: 0x7ff, MinBits: 2}, start: 0, end: 5, wantErr: "is 1 of the cache's 11 ways; the hardware needs at least 2 (min_cbm_bits)"},
		{name: "start equals end", cache: Cache{Mask: 0x7ff, MinBits: 1}, start: 30, end: 30, wantErr: "its start must be below its end"},
		{name: "start after end", cache: Cache{Mask: 0x7ff, MinBits: 1}, start: 60, end: 30, wantErr: "its start must be below its end"},
		{name: "end above 100", cache: Cache{Mask: 0x7ff, MinBits: 1}, start: 0, end: 101, wantErr: "outside [0, 100]"},
		{name: "negative start", cache: Cache{Mask: 0x7ff, MinBits: 1}, start: -1, end: 10, wantErr: "outside [0, 100]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cache.CBM(tt.start, tt.end)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("CBM(%d, %d) = %x, %v; want an error containing %q", tt.start, tt.end, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("CBM(%d, %d) = %x, %v; want %x", tt.start, tt.end, got, err, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	contiguousOnly := Cache{Mask: 0xfffff, MinBits: 2}
	sparse := Cache{Mask: 0xfffff, MinBits: 1, Sparse: true}
	tests := []struct {
		name    string
		cache   Cache
		mask    uint64
		wantErr string
	}{
		{name: "contiguous", cache: contiguousOnly, mask: 0x3c0},
		{name: "the kernel doc's f7", cache: contiguousOnly, mask: 0xf7, wantErr: "has gaps; this hardware needs contiguous ways"},
		{name: "gaps where sparse masks are taken", cache: sparse, mask: 0x505},
		{name: "outside cbm_mask", cache: contiguousOnly, mask: 0x300000, wantErr: "outside the cache's fffff"},
		{name: "empty", cache: contiguousOnly, mask: 0, wantErr: "has no ways"},
		{name: "one way where two are needed", cache: contiguousOnly, mask: 0x8, wantErr: "run of 1 ways; the hardware needs at least 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cache.Check(tt.mask)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Check(%x) = %v, want nil", tt.mask, err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Check(%x) = %v, want an error containing %q", tt.mask, err, tt.wantErr)
			}
		})
	}
}

func TestPercent(t *testing.T) {
	tests := []struct {
		name    string
		bw      Bandwidth
		in      int64
		want    int64
		wantErr string
	}{
		{name: "a step", bw: Bandwidth{Min: 10, Gran: 10}, in: 50, want: 50},
		{name: "between steps rounds up, as the kernel does", bw: Bandwidth{Min: 10, Gran: 10}, in: 55, want: 60},
		{name: "steps from an odd minimum", bw: Bandwidth{Min: 15, Gran: 10}, in: 20, want: 25},
		{name: "rounded up past 100 stays 100", bw: Bandwidth{Min: 15, Gran: 10}, in: 99, want: 100},
		{name: "the minimum", bw: Bandwidth{Min: 10, Gran: 10}, in: 10, want: 10},
		{name: "below the minimum", bw: Bandwidth{Min: 10, Gran: 10}, in: 5, wantErr: "below the hardware's minimum of 10% (min_bandwidth)"},
		{name: "zero", bw: Bandwidth{Min: 0, Gran: 1}, in: 0, wantErr: "outside [1, 100]"},
		{name: "above 100", bw: Bandwidth{Min: 10, Gran: 10}, in: 110, wantErr: "outside [1, 100]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.bw.Percent(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Percent(%d) = %d, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Percent(%d) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}
