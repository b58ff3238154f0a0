package system

import (
	"strings"
	"testing"

	"k8s.io/utils/cpuset"
)

// TestParseCPUList: kernel CPU lists parse as cpuset.Parse does; CPU numbers past MaxCPUID are refused before a set
// is built (the "0-99999999999" that hung the agent is a regression case), and garbage is an error.
func TestParseCPUList(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    cpuset.CPUSet
		wantErr string
	}{
		{in: "0-3,8,10-11\n", want: cpuset.New(0, 1, 2, 3, 8, 10, 11)},
		{in: "", want: cpuset.New()},
		{in: "65535", want: cpuset.New(MaxCPUID)},
		{in: "0-99999999999", wantErr: "above 65535"},
		{in: "0-65536", wantErr: "above 65535"},
		{in: "18446744073709551616", wantErr: "is not a CPU number"},
		{in: "a-b", wantErr: "is not a CPU number"},
		{in: "3-1", wantErr: "CPU list \"3-1\""},
		{in: "1--2", wantErr: "is not a CPU number"},
	} {
		got, err := ParseCPUList(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseCPUList(%q) = %v, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !got.Equals(tt.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// FuzzParseCPUList: never panics, never takes long (every accepted set is within MaxCPUID), and agrees with
// cpuset.Parse on what it accepts.
func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-3,8", "", "0-99999999999", "1,2,,3", "-1", "0-65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseCPUList(s)
		if err != nil {
			return
		}
		if l := got.List(); len(l) > 0 && l[len(l)-1] > MaxCPUID {
			t.Fatalf("ParseCPUList(%q) accepted CPU %d", s, l[len(l)-1])
		}
		want, err := cpuset.Parse(strings.TrimSpace(s))
		if err != nil || !want.Equals(got) {
			t.Fatalf("ParseCPUList(%q) = %v, cpuset.Parse = %v, %v", s, got, want, err)
		}
	})
}
