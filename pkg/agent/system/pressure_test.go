package system

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/procfs"
)

func TestParsePressure(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    procfs.PSIStats
		wantErr string
	}{
		{
			name: "some and full",
			in:   "some avg10=0.00 avg60=0.12 avg300=0.05 total=1503741\nfull avg10=0.00 avg60=0.10 avg300=0.04 total=1280331\n",
			want: procfs.PSIStats{Some: &procfs.PSILine{Avg60: 0.12, Avg300: 0.05, Total: 1503741}, Full: &procfs.PSILine{Avg60: 0.10, Avg300: 0.04, Total: 1280331}},
		},
		{name: "some only", in: "some avg10=1.00 avg60=2.00 avg300=3.00 total=4\n", want: procfs.PSIStats{Some: &procfs.PSILine{Avg10: 1, Avg60: 2, Avg300: 3, Total: 4}}},
		{name: "the largest total", in: "some avg10=100.00 avg60=0 avg300=0 total=9223372036854775\n", want: procfs.PSIStats{Some: &procfs.PSILine{Avg10: 100, Total: MaxStallTotal}}},
		{name: "no some", in: "full avg10=1.00 avg60=2.00 avg300=3.00 total=4\n", wantErr: "no \"some\" line"},
		{name: "truncated", in: "some avg10=1.00\n", wantErr: "malformed line"},
		{name: "unknown kind", in: "most avg10=1.00 avg60=2.00 avg300=3.00 total=4\n", wantErr: "malformed line"},
		// Values no kernel writes: refused rather than passed on as shares above 100 % or negative durations.
		{name: "total of 2^64", in: "some avg10=0 avg60=0 avg300=0 total=18446744073709551616\n", wantErr: "value out of range"},
		{name: "total of 2^64-1", in: "some avg10=0 avg60=0 avg300=0 total=18446744073709551615\n", wantErr: "above 9223372036854775 microseconds"},
		{name: "total past a Duration", in: "some avg10=0 avg60=0 avg300=0 total=9223372036854776\n", wantErr: "above 9223372036854775 microseconds"},
		{name: "average above 100", in: "some avg10=100.01 avg60=0 avg300=0 total=1\n", wantErr: "within [0, 100]"},
		{name: "negative average", in: "some avg10=-1 avg60=0 avg300=0 total=1\n", wantErr: "within [0, 100]"},
		{name: "NaN", in: "some avg10=NaN avg60=0 avg300=0 total=1\n", wantErr: "within [0, 100]"},
		{name: "infinite", in: "some avg10=0 avg60=1e400 avg300=0 total=1\n", wantErr: "avg60"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePressure([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("want an error containing %q, got %v", tt.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// FuzzParsePressure: never panics, and what it accepts is within the bounds it promises, so that the collector's
// conversion of the total to a Duration cannot overflow.
func FuzzParsePressure(f *testing.F) {
	for _, s := range []string{
		"some avg10=0.00 avg60=0.12 avg300=0.05 total=1503741\nfull avg10=0.00 avg60=0.10 avg300=0.04 total=1280331\n",
		"some avg10=x\n", "some avg10=0 avg60=0 avg300=0 total=18446744073709551615\n", "full avg10=NaN avg60=0 avg300=0 total=0",
		"", "\n\n", "some  avg10=1\tavg60=2 avg300=3 total=4 extra",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParsePressure(b)
		if err != nil {
			return
		}
		if s.Some == nil {
			t.Fatalf("accepted %q without a some line", b)
		}
		for _, l := range []*procfs.PSILine{s.Some, s.Full} {
			if l == nil {
				continue
			}
			for _, avg := range []float64{l.Avg10, l.Avg60, l.Avg300} {
				if math.IsNaN(avg) || avg < 0 || avg > 100 {
					t.Fatalf("accepted %q with an average of %v", b, avg)
				}
			}
			if l.Total > MaxStallTotal {
				t.Fatalf("accepted %q with a total of %d", b, l.Total)
			}
		}
	})
}
