package cpulist

import (
	"strings"
	"testing"
	"time"

	"k8s.io/utils/cpuset"
)

// TestParse: kernel CPU lists parse as cpuset.Parse does; CPU numbers past MaxID are refused before a set
// is built (the "0-99999999999" that hung the agent is a regression case), and garbage is an error.
func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    cpuset.CPUSet
		wantErr string
	}{
		{in: "0-3,8,10-11\n", want: cpuset.New(0, 1, 2, 3, 8, 10, 11)},
		{in: "", want: cpuset.New()},
		{in: "65535", want: cpuset.New(MaxID)},
		{in: "0-99999999999", wantErr: "above 65535"},
		{in: "0-65536", wantErr: "above 65535"},
		{in: "18446744073709551616", wantErr: "is not a CPU number"},
		{in: "a-b", wantErr: "is not a CPU number"},
		{in: "3-1", wantErr: "CPU list \"3-1\""},
		{in: "1--2", wantErr: "is not a CPU number"},
		{in: "0-65535", want: cpuset.New(fullRange()...)},
		{in: "0-65535,0", wantErr: "name more than 65536 CPUs"},
		// 8 KB that took cpuset.Parse 1.5 s; a 256 KiB annotation of it took minutes.
		{in: strings.Repeat("0-65535,", 1000) + "0", wantErr: "name more than 65536 CPUs"},
		{in: strings.Repeat("1,", 70000) + "1", wantErr: "name more than 65536 CPUs"},
	} {
		start := time.Now()
		got, err := Parse(tt.in)
		if d := time.Since(start); d > time.Second {
			t.Errorf("Parse(%.40q...) took %s", tt.in, d)
		}
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Parse(%.80q) = %v, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !got.Equals(tt.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func fullRange() []int {
	ids := make([]int, MaxID+1)
	for i := range ids {
		ids[i] = i
	}
	return ids
}

// FuzzParse: never panics, never takes long (every accepted set is within MaxID), and agrees with
// cpuset.Parse on what it accepts.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0-3,8", "", "0-99999999999", "1,2,,3", "-1", "0-65535", "0-65535,0-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Parse(s)
		if err != nil {
			return
		}
		if l := got.List(); len(l) > 0 && l[len(l)-1] > MaxID {
			t.Fatalf("Parse(%q) accepted CPU %d", s, l[len(l)-1])
		}
		want, err := cpuset.Parse(strings.TrimSpace(s))
		if err != nil || !want.Equals(got) {
			t.Fatalf("Parse(%q) = %v, cpuset.Parse = %v, %v", s, got, want, err)
		}
	})
}
