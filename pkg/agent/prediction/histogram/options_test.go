package histogram

import (
	"math"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func TestValidate(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	tests := []struct {
		name    string
		o       Options
		wantErr string // "" for valid
	}{
		{name: "cpu defaults", o: CPUOptions()},
		{name: "memory defaults", o: MemoryOptions()},
		{name: "max equal to first", o: Options{First: 1, Ratio: 0.1, MaxValue: 1, HalfLife: time.Second}},
		{name: "zero first", o: Options{First: 0, Ratio: 0.05, MaxValue: 10, HalfLife: time.Hour}, wantErr: "first bucket bound 0"},
		{name: "negative first", o: Options{First: -1, Ratio: 0.05, MaxValue: 10, HalfLife: time.Hour}, wantErr: "first bucket bound -1"},
		{name: "NaN first", o: Options{First: nan, Ratio: 0.05, MaxValue: 10, HalfLife: time.Hour}, wantErr: "first bucket bound NaN"},
		{name: "infinite first", o: Options{First: inf, Ratio: 0.05, MaxValue: inf, HalfLife: time.Hour}, wantErr: "first bucket bound +Inf"},
		{name: "zero ratio", o: Options{First: 1, Ratio: 0, MaxValue: 10, HalfLife: time.Hour}, wantErr: "bucket ratio 0"},
		{name: "NaN ratio", o: Options{First: 1, Ratio: nan, MaxValue: 10, HalfLife: time.Hour}, wantErr: "bucket ratio NaN"},
		{name: "max below first", o: Options{First: 1, Ratio: 0.05, MaxValue: 0.5, HalfLife: time.Hour}, wantErr: "max value 0.5"},
		{name: "infinite max", o: Options{First: 1, Ratio: 0.05, MaxValue: inf, HalfLife: time.Hour}, wantErr: "max value +Inf"},
		{name: "zero half-life", o: Options{First: 1, Ratio: 0.05, MaxValue: 10}, wantErr: "half-life 0s"},
		{name: "negative half-life", o: Options{First: 1, Ratio: 0.05, MaxValue: 10, HalfLife: -time.Hour}, wantErr: "half-life -1h0m0s"},
		{name: "too many buckets", o: Options{First: 1e-300, Ratio: 0.01, MaxValue: 1e300, HalfLife: time.Hour}, wantErr: "more than 4096"},
		{name: "tiny ratio", o: Options{First: 1, Ratio: 1e-300, MaxValue: 2, HalfLife: time.Hour}, wantErr: "more than 4096"},
		{name: "several at once", o: Options{Ratio: -1}, wantErr: "half-life"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				if _, err := New(tt.o); err != nil {
					t.Fatalf("New() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
			if h, err := New(tt.o); err == nil || h != nil {
				t.Fatalf("New() = %v, %v; want nil and an error", h, err)
			}
		})
	}
}

// TestNumBuckets checks the counts (and so the memory) the package doc states, and that the last bucket is the one
// holding MaxValue.
func TestNumBuckets(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want int
	}{
		{name: "cpu", o: CPUOptions(), want: 219},       // 2 + floor(ln(1024/0.025)/ln 1.05)
		{name: "memory", o: MemoryOptions(), want: 314}, // 2 + floor(ln(2^22)/ln 1.05)
		{name: "max is first", o: Options{First: 1, Ratio: 1, MaxValue: 1, HalfLife: 1}, want: 2},
		{name: "max on a boundary", o: Options{First: 1, Ratio: 1, MaxValue: 8, HalfLife: 1}, want: 5}, // [0,1) [1,2) [2,4) [4,8) [8,∞)
		{name: "max below a boundary", o: Options{First: 1, Ratio: 1, MaxValue: 7.9, HalfLife: 1}, want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.o.NumBuckets()
			if n != tt.want {
				t.Fatalf("NumBuckets() = %d, want %d", n, tt.want)
			}
			if lo, hi := tt.o.bucketStart(n-1), tt.o.bucketStart(n); !(lo <= tt.o.MaxValue && tt.o.MaxValue < hi) {
				t.Fatalf("last bucket [%v, %v) does not hold MaxValue %v", lo, hi, tt.o.MaxValue)
			}
		})
	}
	if got := unsafe.Sizeof(Histogram{}); got != 88 {
		t.Errorf("a Histogram is %d bytes, the package doc says 88", got)
	}
}
