package colocation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// procStat is a /proc/stat with the given cpu line times (user nice system idle iowait irq softirq steal guest
// guest_nice), in ticks.
func procStat(times string) string {
	return "cpu  " + times + "\ncpu0 1 1 1 1 1 1 1 1 0 0\nintr 12345\nctxt 99\n"
}

// Two snapshots of a 2-CPU node 10 s apart (2,000 ticks of all CPUs): 1,200 busy ticks (idle and iowait are not,
// guest is already in user) and the classes' own counters: a v1 cpuacct.usage in ns and a v2 cpu.stat in µs.
func TestBetween(t *testing.T) {
	dir := t.TempDir()
	stat, svcUsage, svcStat, batch := filepath.Join(dir, "stat"), filepath.Join(dir, "svc/cpuacct.usage"),
		filepath.Join(dir, "svc/cpu.stat"), filepath.Join(dir, "batch/cpu.stat")
	r := Reader{ProcStat: stat, Classes: []Class{
		{Name: "service", Usage: svcUsage, Stat: svcStat},
		{Name: "batch", Usage: batch, Stat: batch},
	}}
	write(t, stat, procStat("1000 0 500 8000 100 10 10 0 50 0"))
	write(t, svcUsage, "5000000000\n")
	write(t, svcStat, "nr_periods 10\nnr_throttled 2\nthrottled_time 5\n")
	write(t, batch, "usage_usec 1000000\nuser_usec 1\nsystem_usec 1\nnr_periods 0\nnr_throttled 7\n")
	a, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	//            user  nice sys  idle iowait irq softirq steal: +700 +0 +200 +700 +100 +100 +100 +100 = 2000
	write(t, stat, procStat("1700 0 700 8700 200 110 110 100 70 0"))
	write(t, svcUsage, "6000000000\n")                                     // +1 s of 20 s: 5 %
	write(t, svcStat, "nr_periods 20\nnr_throttled 5\nthrottled_time 9\n") // +3
	write(t, batch, "usage_usec 9000000\nnr_throttled 7\n")                // +8 s: 40 %, +0
	b, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b.Total-a.Total, 20*time.Second; got != want {
		t.Errorf("total CPU time %s, want %s (2,000 ticks)", got, want)
	}
	want := Use{Node: 0.6, Steal: 0.05, Classes: map[string]float64{"service": 0.05, "batch": 0.4}, Other: 0.15,
		Throttled: map[string]uint64{"service": 3, "batch": 0}}
	if diff := cmp.Diff(want, Between(a, b), cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// A class counter that went backwards (its cgroup made again) counts as nothing, not as negative use.
	write(t, svcUsage, "10\n")
	c, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	if got := Between(b, c).Classes["service"]; got != 0 {
		t.Errorf("service share after its counter went back: %v, want 0", got)
	}
}

// What cannot be read is an error saying which class or file.
func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	stat := filepath.Join(dir, "stat")
	write(t, stat, procStat("1 2 3 4 5 6 7 8 0 0"))
	for _, tt := range []struct {
		name  string
		r     Reader
		files map[string]string
		want  string
	}{
		{name: "no /proc/stat", r: Reader{ProcStat: filepath.Join(dir, "nope")}, want: "reading the node's CPU times"},
		{name: "no cpu line", r: Reader{ProcStat: filepath.Join(dir, "bad")}, files: map[string]string{"bad": "intr 1\n"}, want: "no cpu line"},
		{name: "short cpu line", r: Reader{ProcStat: filepath.Join(dir, "short")}, files: map[string]string{"short": "cpu 1 2 3\n"}, want: "3 fields"},
		{name: "not a number", r: Reader{ProcStat: filepath.Join(dir, "nan")}, files: map[string]string{"nan": "cpu 1 x 3 4\n"}, want: "field 2"},
		{name: "class usage missing", r: Reader{ProcStat: stat, Classes: []Class{{Name: "batch", Usage: filepath.Join(dir, "gone/cpuacct.usage")}}},
			want: "CPU time of class batch"},
		{name: "v2 usage without usage_usec", r: Reader{ProcStat: stat, Classes: []Class{{Name: "svc", Usage: filepath.Join(dir, "v2/cpu.stat")}}},
			files: map[string]string{"v2/cpu.stat": "nr_periods 1\n"}, want: "has no usage_usec"},
		{name: "throttling unreadable", r: Reader{ProcStat: stat, Classes: []Class{{Name: "svc", Usage: filepath.Join(dir, "u"), Stat: filepath.Join(dir, "s")}}},
			files: map[string]string{"u": "12\n", "s": "nr_throttled x\n"}, want: "throttling of class svc"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for f, c := range tt.files {
				write(t, filepath.Join(dir, f), c)
			}
			_, err := tt.r.Read()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// This machine's own /proc/stat reads, and time moves on between two reads.
func TestReadThisMachine(t *testing.T) {
	r := Reader{ProcStat: "/proc/stat"}
	a, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	b, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	if b.Total <= a.Total || b.Busy < a.Busy {
		t.Errorf("from %+v to %+v: the CPU counters did not move on", a, b)
	}
}
