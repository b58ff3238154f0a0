package proc

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/procfs"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

func open(t *testing.T, dir string) *FS {
	t.Helper()
	f, err := New("testdata/" + dir)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestNewMissingRoot(t *testing.T) {
	if _, err := New("testdata/nosuchdir"); err == nil || !strings.Contains(err.Error(), "testdata/nosuchdir") {
		t.Fatalf("want an error naming the missing root, got %v", err)
	}
}

func TestCPUTime(t *testing.T) {
	tick := 10 * time.Millisecond
	tests := []struct {
		dir     string
		want    CPUTime
		wantErr string
	}{
		{
			dir: "psi",
			// busy = user 4705 + nice 356 + system 584 + irq 23 + softirq 12; total adds idle 3699, iowait 23, steal 7.
			want: CPUTime{Busy: 5680 * tick, Total: (5680 + 3699 + 23 + 7) * tick, CPUs: 2},
		},
		{dir: "malformed", wantErr: "no per-CPU lines"},
		{dir: "empty", wantErr: "opening the proc filesystem"},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			f, err := New("testdata/" + tt.dir)
			if err == nil {
				var got CPUTime
				got, err = f.CPUTime()
				if err == nil {
					if diff := cmp.Diff(tt.want, got); diff != "" {
						t.Errorf("CPUTime (-want +got):\n%s", diff)
					}
				}
			}
			checkErr(t, err, tt.wantErr)
		})
	}
}

func TestMemInfo(t *testing.T) {
	tests := []struct {
		dir      string
		want     MemInfo
		wantUsed uint64
		wantErr  string
	}{
		{
			dir:      "psi",
			want:     MemInfo{Total: 24684160 << 10, Available: 24238820 << 10, Free: 23992272 << 10, Cached: 509732 << 10, Buffers: 21424 << 10},
			wantUsed: (24684160 - 24238820) << 10,
		},
		{dir: "oldkernel", wantErr: "MemAvailable missing"},
		{dir: "malformed", wantErr: "malformed file"},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			got, err := open(t, tt.dir).MemInfo()
			checkErr(t, err, tt.wantErr)
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("MemInfo (-want +got):\n%s", diff)
			}
			if got.Used() != tt.wantUsed {
				t.Errorf("Used() = %d, want %d", got.Used(), tt.wantUsed)
			}
		})
	}
	if u := (MemInfo{Total: 1, Available: 2}).Used(); u != 0 {
		t.Errorf("Used() with Available > Total = %d, want 0", u)
	}
}

func TestPressure(t *testing.T) {
	tests := []struct {
		dir         string
		resource    system.PSIResource
		want        procfs.PSIStats
		unsupported bool
	}{
		{
			dir: "psi", resource: system.PSICPU,
			want: procfs.PSIStats{
				Some: &procfs.PSILine{Avg10: 0.88, Avg60: 1.70, Avg300: 10.31, Total: 294982350},
				Full: &procfs.PSILine{},
			},
		},
		{
			dir: "psi", resource: system.PSIMemory,
			want: procfs.PSIStats{
				Some: &procfs.PSILine{Avg10: 0.10, Avg60: 0.05, Avg300: 0.01, Total: 1500},
				Full: &procfs.PSILine{Avg10: 0.05, Avg60: 0.02, Total: 700},
			},
		},
		{dir: "psi", resource: system.PSIIO, want: procfs.PSIStats{Some: &procfs.PSILine{Avg10: 0.06, Avg60: 0.21, Avg300: 0.99, Total: 8537362}}},
		{dir: "nopsi", resource: system.PSICPU, unsupported: true},
	}
	for _, tt := range tests {
		t.Run(tt.dir+"/"+string(tt.resource), func(t *testing.T) {
			got, err := open(t, tt.dir).Pressure(tt.resource)
			if tt.unsupported {
				if !errors.Is(err, system.ErrUnsupported) {
					t.Fatalf("want ErrUnsupported, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Pressure (-want +got):\n%s", diff)
			}
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("want an error containing %q, got %v", want, err)
	}
}
