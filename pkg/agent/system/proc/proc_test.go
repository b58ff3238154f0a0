package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
		{dir: "malformed", wantErr: `first line "cpu  1 2 3" is not "cpu" and at least 7 counters`},
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
		{dir: "malformed", wantErr: `malformed line "MemFree": want "key: value"`},
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

// statCPUs is the CPU lines of a /proc/stat with n CPUs, each CPU's counters 1 to 10.
func statCPUs(total string, n int) string {
	var b strings.Builder
	b.WriteString(total + "\n")
	for i := range n {
		fmt.Fprintf(&b, "cpu%d 1 2 3 4 5 6 7 8 9 10\n", i)
	}
	return b.String()
}

func TestParseStat(t *testing.T) {
	tick := 10 * time.Millisecond
	const max64 = "18446744073709551615"
	tests := []struct {
		name    string
		in      string
		want    CPUTime
		wantErr string
	}{
		{
			name: "kernel text", in: statCPUs("cpu  4705 356 584 3699 23 23 12 7 100 0", 2) + "intr 1143 40 0 0\nctxt 18466\n",
			want: CPUTime{Busy: 5680 * tick, Total: 9409 * tick, CPUs: 2},
		},
		{name: "no steal column", in: statCPUs("cpu 1 1 1 1 1 1 1", 1), want: CPUTime{Busy: 5 * tick, Total: 7 * tick, CPUs: 1}},
		{name: "8,192 CPUs", in: statCPUs("cpu 1 0 0 0 0 0 0 0 0 0", 8192), want: CPUTime{Busy: tick, Total: tick, CPUs: 8192}},
		// The conversion to nanoseconds wraps like the kernel's counters (292 CPU-years); 2^64 itself is refused.
		{
			name: "counters near 2^64 wrap", in: statCPUs("cpu "+max64+" 2 0 0 0 0 0 0 0 0", 1),
			want: CPUTime{Busy: time.Duration(uint64(1) * uint64(tick)), Total: time.Duration(uint64(1) * uint64(tick)), CPUs: 1},
		},
		{name: "a counter of 2^64", in: statCPUs("cpu 18446744073709551616 0 0 0 0 0 0 0 0 0", 1), wantErr: "counter 1 of"},
		{name: "a negative counter", in: statCPUs("cpu -1 0 0 0 0 0 0 0 0 0", 1), wantErr: "invalid syntax"},
		{name: "no total", in: "cpu0 1 2 3 4 5 6 7 8 9 10\n", wantErr: `is not "cpu" and at least 7 counters`},
		{name: "no CPUs", in: "cpu 1 2 3 4 5 6 7 8 9 10\nintr 1\n", wantErr: "no per-CPU lines"},
		{name: "empty", in: "", wantErr: "no per-CPU lines"},
		{name: "a line too long", in: statCPUs("cpu 1 2 3 4 5 6 7 8 9 10", 1) + "cpu1" + strings.Repeat(" 1", 300) + "\n", wantErr: "longer than 512 bytes"},
		{name: "an odd CPU line", in: statCPUs("cpu 1 2 3 4 5 6 7 8 9 10", 1) + "cpux 1\n", wantErr: "neither the total nor a CPU's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat(strings.NewReader(tt.in))
			checkErr(t, err, tt.wantErr)
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseStat (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatTotal: StatTotal reads the first line only, into the caller's buffer, with parseStat's rules for it.
func TestStatTotal(t *testing.T) {
	tick := 10 * time.Millisecond
	tests := []struct {
		name    string
		in      string
		want    CPUTime
		wantErr string
	}{
		// user 4705 + nice 356 + system 584 + irq 23 + softirq 12 = 5680 ticks.
		{name: "kernel text", in: statCPUs("cpu  4705 356 584 3699 23 23 12 7 100 0", 2), want: CPUTime{Busy: 5680 * tick, Total: 9409 * tick}},
		{name: "old kernel, 7 counters", in: "cpu 1 2 3 400 500 6 7\n", want: CPUTime{Busy: 19 * tick, Total: 919 * tick}},
		{name: "the rest of the file is never read", in: "cpu 1 0 0 0 0 0 0\n" + strings.Repeat("x", 3*StatTotalBufSize), want: CPUTime{Busy: tick, Total: tick}},
		{name: "no newline", in: "cpu  4705 356 584", wantErr: "no complete first line"},
		{name: "a first line longer than the buffer", in: "cpu" + strings.Repeat(" 1", StatTotalBufSize) + "\n", wantErr: "no complete first line"},
		{name: "not the total", in: "cpu0 1 2 3 4 5 6 7\n", wantErr: `is not "cpu" and at least 7 counters`},
		{name: "too few counters", in: "cpu  1 2 3\n", wantErr: `is not "cpu" and at least 7 counters`},
		{name: "not a number", in: "cpu  1 2 x 4 5 6 7\n", wantErr: "counter 3"},
		{name: "a counter of 2^64", in: "cpu  18446744073709551616 0 0 0 0 0 0\n", wantErr: "value out of range"},
		// Sums wrap modulo 2^64 like the kernel's counters: 2^64-1 + 2 ticks is 1 tick.
		{name: "counters near 2^64", in: "cpu  18446744073709551615 2 0 0 0 0 0\n", want: CPUTime{Busy: tick, Total: tick}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "stat"), []byte(tt.in), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := New(root)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.StatTotal(make([]byte, StatTotalBufSize))
			checkErr(t, err, tt.wantErr)
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("StatTotal (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatTotalOfThisMachine reads the real /proc/stat's first line and compares it with the whole read.
func TestStatTotalOfThisMachine(t *testing.T) {
	f, err := New("/proc")
	if err != nil {
		t.Fatalf("reading /proc: %v", err)
	}
	first, err := f.StatTotal(make([]byte, StatTotalBufSize))
	if err != nil {
		t.Fatal(err)
	}
	whole, err := f.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	if first.Busy > whole.Busy || first.Total > whole.Total || first.Total == 0 {
		t.Errorf("first line %+v, whole file read just after %+v: the counters only grow", first, whole)
	}
}

// FuzzParseStatTotal: never panics on whatever the first line of /proc/stat holds.
func FuzzParseStatTotal(f *testing.F) {
	for _, s := range []string{"cpu  4705 356 584 3699 23 23 7 0 0 0", "cpu 1 2 3", "cpu  18446744073709551615 2 0 0 0 0 0", "", "cpu "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseStatTotal(b)
	})
}

// BenchmarkStatTotal is the first-line read of this machine's /proc/stat (CPU suppression's, five times a
// second); BenchmarkCPUTime the collectors' read of all the CPU lines, for comparison.
func BenchmarkStatTotal(b *testing.B) {
	f, err := New("/proc")
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, StatTotalBufSize)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.StatTotal(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCPUTime(b *testing.B) {
	f, err := New("/proc")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.CPUTime(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHugeProcFilesAreNotReadWhole: a 30 MB /proc/stat whose CPU lines never end, a 30 MB /proc/meminfo and a
// 30 MB pressure file are refused with an error naming the file, after reading at most their bound; a /proc/stat
// with a 30 MB line after its CPU lines (an intr line on a machine with very many interrupts) is read up to it.
func TestHugeProcFilesAreNotReadWhole(t *testing.T) {
	const huge = 30 << 20
	root := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}

	write("stat", statCPUs("cpu 1 2 3 4 5 6 7 8 9 10", huge/len("cpu0 1 2 3 4 5 6 7 8 9 10\n")))
	if _, err := f.CPUTime(); !errors.Is(err, system.ErrTooLarge) || !strings.Contains(err.Error(), filepath.Join(root, "stat")) {
		t.Errorf("CPUTime with 30 MB of CPU lines: %v, want ErrTooLarge naming the file", err)
	}
	write("stat", statCPUs("cpu 1 2 3 4 5 6 7 8 9 10", 4)+"intr "+strings.Repeat("0 ", huge/2)+"\nctxt 1\n")
	if got, err := f.CPUTime(); err != nil || got.CPUs != 4 {
		t.Errorf("CPUTime with a 30 MB intr line = %+v, %v; want 4 CPUs", got, err)
	}
	src := &countingReader{r: strings.NewReader(statCPUs("cpu 1 2 3 4 5 6 7 8 9 10", huge/len("cpu0 1 2 3 4 5 6 7 8 9 10\n")))}
	if _, err := parseStat(src); !errors.Is(err, system.ErrTooLarge) || src.n > maxStatCPUBytes+4096 {
		t.Errorf("parseStat of 30 MB of CPU lines read %d bytes and returned %v; want ErrTooLarge after at most %d", src.n, err, maxStatCPUBytes+4096)
	}

	write("meminfo", "MemTotal: 1 kB\nMemAvailable: 1 kB\n"+strings.Repeat("Foo: 1 kB\n", huge/10))
	if _, err := f.MemInfo(); !errors.Is(err, system.ErrTooLarge) || !strings.Contains(err.Error(), filepath.Join(root, "meminfo")) {
		t.Errorf("MemInfo of 30 MB: %v, want ErrTooLarge naming the file", err)
	}
	write("pressure/cpu", strings.Repeat("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", huge/48))
	if _, err := f.Pressure(system.PSICPU); !errors.Is(err, system.ErrTooLarge) || !strings.Contains(err.Error(), filepath.Join(root, "pressure", "cpu")) {
		t.Errorf("Pressure of 30 MB: %v, want ErrTooLarge naming the file", err)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestParseMeminfo(t *testing.T) {
	const fields = "MemFree: 3 kB\nCached: 4 kB\nBuffers: 5 kB\n"
	tests := []struct {
		name    string
		in      string
		want    MemInfo
		wantErr string
	}{
		{
			name: "kernel text",
			in:   "MemTotal:       24684160 kB\nMemFree:        23992272 kB\nMemAvailable:   24238820 kB\nBuffers:           21424 kB\nCached:           509732 kB\nHugePages_Total:       0\n",
			want: MemInfo{Total: 24684160 << 10, Free: 23992272 << 10, Available: 24238820 << 10, Buffers: 21424 << 10, Cached: 509732 << 10},
		},
		{name: "4 PiB", in: "MemTotal: 4398046511104 kB\nMemAvailable: 0 kB\n", want: MemInfo{Total: 1 << 52}},
		// Values of 2^64 and above are refused, and so is anything above 4 PiB, which as bytes would wrap past 2^64.
		{name: "above 4 PiB", in: "MemTotal: 4398046511105 kB\nMemAvailable: 0 kB\n" + fields, wantErr: `MemTotal: "4398046511105 kB" is more than 4 PiB`},
		{name: "2^64-1 kB", in: "MemTotal: 1 kB\nMemAvailable: 18446744073709551615 kB\n", wantErr: "MemAvailable: \"18446744073709551615 kB\" is more than 4 PiB"},
		{name: "2^64 kB", in: "MemTotal: 18446744073709551616 kB\nMemAvailable: 0 kB\n", wantErr: "value out of range"},
		{name: "a negative value", in: "MemTotal: -1 kB\nMemAvailable: 0 kB\n", wantErr: "is not a number"},
		{name: "another unit", in: "MemTotal: 1 MB\nMemAvailable: 0 kB\n", wantErr: `is not "<number> kB"`},
		{name: "no MemAvailable", in: "MemTotal: 1 kB\n", wantErr: "MemTotal or MemAvailable missing"},
		{name: "no value", in: "MemTotal:\nMemAvailable: 0 kB\n", wantErr: "malformed line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMeminfo([]byte(tt.in))
			checkErr(t, err, tt.wantErr)
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseMeminfo (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParseStat: never panics, reads no more than its bound, and accepts only a total line with CPU lines.
func FuzzParseStat(f *testing.F) {
	for _, s := range []string{
		statCPUs("cpu  4705 356 584 3699 23 23 12 7 100 0", 2) + "intr 1 2\n",
		statCPUs("cpu 18446744073709551615 1 0 0 0 0 0", 1), "cpu 1 2 3\n", "cpu0 1\n", "", "\n", "cpu", "cpux\ncpu1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		src := &countingReader{r: bytes.NewReader(b)}
		got, err := parseStat(src)
		if src.n > maxStatCPUBytes+4096 {
			t.Fatalf("read %d bytes", src.n)
		}
		first, _, _ := bytes.Cut(b, []byte{'\n'})
		if f := bytes.Fields(first); err == nil && (got.CPUs < 1 || len(f) < 8 || string(f[0]) != "cpu") {
			t.Fatalf("parseStat(%q) = %+v", b, got)
		}
	})
}

// FuzzParseMeminfo: never panics, and every figure it accepts is within maxMemBytes.
func FuzzParseMeminfo(f *testing.F) {
	for _, s := range []string{
		"MemTotal:       24684160 kB\nMemFree:        23992272 kB\nMemAvailable:   24238820 kB\n",
		"MemTotal: 18446744073709551615 kB\nMemAvailable: 1\n", "MemTotal:\n", ":", "", "MemTotal: 1 kB kB\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMeminfo(b)
		if err != nil {
			return
		}
		for _, v := range []uint64{m.Total, m.Available, m.Free, m.Cached, m.Buffers} {
			if v > maxMemBytes {
				t.Fatalf("parseMeminfo(%q) accepted %d bytes", b, v)
			}
		}
	})
}
