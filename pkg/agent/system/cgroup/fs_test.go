package cgroup

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/procfs"
	"k8s.io/utils/cpuset"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// The values the fixture trees hold for the burstable pod, identical on every tree where both versions can say it.
var (
	fixtureMemory = MemoryStat{
		ActiveAnon: 48234496, InactiveAnon: 4194304, ActiveFile: 1048576, InactiveFile: 3145728,
		Unevictable: 8192, Cache: 4194304, Shmem: 65536,
	}
	fixtureCPUStat = CPUStat{Periods: 2410, ThrottledPeriods: 2322, ThrottledTime: 127418437 * time.Microsecond}
)

func TestReaderOnFixtures(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			r := NewFS(filepath.Join("testdata", f.name), f.version)
			l := Layout{Driver: f.driver}
			pod := l.PodDir(burstablePod())
			be := l.QoSDir("BestEffort")

			usage, err := r.CPUUsage(pod)
			check(t, "CPUUsage", err)
			wantUsage := 88394832141 * time.Nanosecond
			if f.version == V2 {
				wantUsage = 88394832 * time.Microsecond
			}
			diff(t, "CPUUsage", wantUsage, usage)

			st, err := r.CPUStat(pod)
			check(t, "CPUStat", err)
			wantStat := fixtureCPUStat
			if f.version == V1 {
				wantStat.ThrottledTime = 127418437823
			}
			diff(t, "CPUStat", wantStat, st)

			q, err := r.CPUQuota(pod)
			check(t, "CPUQuota", err)
			diff(t, "CPUQuota", CPUQuota{Quota: 50 * time.Millisecond, Period: 100 * time.Millisecond}, q)
			diff(t, "CPUQuota.Cores", 0.5, q.Cores())
			q, err = r.CPUQuota(l.Kubepods())
			check(t, "CPUQuota(kubepods)", err)
			diff(t, "CPUQuota(kubepods).Unlimited", true, q.Unlimited())
			q, err = r.CPUQuota(be)
			check(t, "CPUQuota(besteffort)", err)
			diff(t, "CPUQuota(besteffort).Cores", 2.0, q.Cores())

			shares, err := r.CPUShares(pod)
			check(t, "CPUShares", err)
			// v2 weight 20 reads back as the fewest shares of that weight, 2 + ceil(19*262142/9999) = 501 (the kubelet wrote
			// 512 -> 20).
			diff(t, "CPUShares", map[Version]uint64{V1: 512, V2: 501}[f.version], shares)

			burst, err := r.CPUBurst(pod)
			check(t, "CPUBurst", err)
			diff(t, "CPUBurst", time.Duration(0), burst)

			cpus, err := r.CPUSet(be)
			check(t, "CPUSet", err)
			diff(t, "CPUSet", "2-3", cpus.String())

			mem, err := r.MemoryStat(pod)
			check(t, "MemoryStat", err)
			diff(t, "MemoryStat", fixtureMemory, mem)
			diff(t, "MemoryStat.Usage", uint64(48234496+4194304+8192), mem.Usage())

			limit, err := r.MemoryLimit(pod)
			check(t, "MemoryLimit", err)
			diff(t, "MemoryLimit", int64(256<<20), limit)
			limit, err = r.MemoryLimit(l.Kubepods())
			check(t, "MemoryLimit(kubepods)", err)
			diff(t, "MemoryLimit(kubepods)", int64(-1), limit)

			psi, err := r.Pressure(pod, system.PSICPU)
			if f.version == V1 {
				if !errors.Is(err, system.ErrUnsupported) {
					t.Errorf("Pressure on v1: want ErrUnsupported, got %v", err)
				}
			} else {
				check(t, "Pressure", err)
				diff(t, "Pressure", procfs.PSIStats{
					Some: &procfs.PSILine{Avg10: 1.5, Avg60: 0.8, Avg300: 0.2, Total: 1503741},
					Full: &procfs.PSILine{Avg10: 0.5, Avg60: 0.3, Avg300: 0.1, Total: 803741},
				}, psi)
			}

			// A pod that has gone: every read says so with fs.ErrNotExist.
			gone := l.PodDirOf("Burstable", "00000000-0000-0000-0000-000000000000")
			if _, err := r.CPUUsage(gone); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, system.ErrUnsupported) {
				t.Errorf("CPUUsage of a missing cgroup: want fs.ErrNotExist, got %v", err)
			}
			if _, err := r.MemoryStat(gone); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("MemoryStat of a missing cgroup: want fs.ErrNotExist, got %v", err)
			}
		})
	}
}

// TestReaderOldKernel reads a v1 tree from a kernel without cpu.cfs_burst_us and with corrupt files in one pod.
func TestReaderOldKernel(t *testing.T) {
	r := NewFS("testdata/v1-oldkernel", V1)
	pod := Layout{Driver: Cgroupfs}.PodDir(burstablePod())
	if _, err := r.CPUBurst(pod); !errors.Is(err, system.ErrUnsupported) || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CPUBurst without the file: want ErrUnsupported only, got %v", err)
	}
	if err := r.SetCPUBurst(pod, time.Millisecond); !errors.Is(err, system.ErrUnsupported) {
		t.Errorf("SetCPUBurst without the file: want ErrUnsupported, got %v", err)
	}
	if _, err := os.Stat(filepath.Join("testdata/v1-oldkernel/cpu", pod, "cpu.cfs_burst_us")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SetCPUBurst created the missing file: %v", err)
	}
	for name, read := range map[string]func() error{
		"cpuacct.usage": func() error { _, err := r.CPUUsage(pod); return err },
		"memory.stat":   func() error { _, err := r.MemoryStat(pod); return err },
		"cpu.stat":      func() error { _, err := r.CPUStat(pod); return err },
	} {
		err := read()
		if err == nil || !strings.Contains(err.Error(), "parsing") || !strings.Contains(err.Error(), name) {
			t.Errorf("corrupt %s: want a parse error naming the file, got %v", name, err)
		}
	}
	// The guaranteed pod next to it reads fine: one bad cgroup does not spoil the others.
	if _, err := r.CPUUsage(Layout{Driver: Cgroupfs}.PodDir(guaranteedPod())); err != nil {
		t.Errorf("CPUUsage of a healthy pod: %v", err)
	}
}

func TestWriter(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", f.name))); err != nil {
				t.Fatal(err)
			}
			rw := NewFS(root, f.version)
			l := Layout{Driver: f.driver}
			pod := l.PodDir(burstablePod())

			steps := []struct {
				name  string
				write func() error
				files map[string]string // file (v1: subsystem/file) -> content after the write
			}{
				{
					name: "quota",
					write: func() error {
						return rw.SetCPUQuota(pod, CPUQuota{Quota: 150 * time.Millisecond, Period: 50 * time.Millisecond})
					},
					files: map[Version]map[string]string{
						V1: {"cpu/cpu.cfs_quota_us": "150000", "cpu/cpu.cfs_period_us": "50000"},
						V2: {"cpu.max": "150000 50000"},
					}[f.version],
				},
				{
					name:  "no quota",
					write: func() error { return rw.SetCPUQuota(pod, CPUQuota{Quota: -1, Period: 100 * time.Millisecond}) },
					files: map[Version]map[string]string{
						V1: {"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"},
						V2: {"cpu.max": "max 100000"},
					}[f.version],
				},
				{
					name:  "shares",
					write: func() error { return rw.SetCPUShares(pod, 1024) },
					files: map[Version]map[string]string{V1: {"cpu/cpu.shares": "1024"}, V2: {"cpu.weight": "39"}}[f.version],
				},
				{
					name:  "burst",
					write: func() error { return rw.SetCPUBurst(pod, 20*time.Millisecond) },
					files: map[Version]map[string]string{V1: {"cpu/cpu.cfs_burst_us": "20000"}, V2: {"cpu.max.burst": "20000"}}[f.version],
				},
				{
					name:  "cpuset",
					write: func() error { return rw.SetCPUSet(pod, cpuset.New(0, 1, 2, 5)) },
					files: map[Version]map[string]string{V1: {"cpuset/cpuset.cpus": "0-2,5"}, V2: {"cpuset.cpus": "0-2,5"}}[f.version],
				},
				{
					name:  "memory limit",
					write: func() error { return rw.SetMemoryLimit(pod, 512<<20) },
					files: map[Version]map[string]string{V1: {"memory/memory.limit_in_bytes": "536870912"}, V2: {"memory.max": "536870912"}}[f.version],
				},
				{
					name:  "no memory limit",
					write: func() error { return rw.SetMemoryLimit(pod, -1) },
					files: map[Version]map[string]string{V1: {"memory/memory.limit_in_bytes": "-1"}, V2: {"memory.max": "max"}}[f.version],
				},
			}
			for _, s := range steps {
				if err := s.write(); err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				for file, want := range s.files {
					sub, name := "", file
					if f.version == V1 {
						sub, name, _ = strings.Cut(file, "/")
					}
					b, err := os.ReadFile(filepath.Join(rw.Dir(sub, pod), name))
					if err != nil {
						t.Fatal(err)
					}
					if got := string(b); got != want {
						t.Errorf("%s: %s = %q, want %q", s.name, file, got, want)
					}
				}
			}
			// Read back through the Reader: the round trip holds.
			if err := rw.SetCPUQuota(pod, CPUQuota{Quota: 30 * time.Millisecond, Period: 100 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
			q, err := rw.CPUQuota(pod)
			check(t, "CPUQuota", err)
			diff(t, "CPUQuota round trip", CPUQuota{Quota: 30 * time.Millisecond, Period: 100 * time.Millisecond}, q)

			gone := l.PodDirOf("Burstable", "00000000-0000-0000-0000-000000000000")
			if err := rw.SetCPUShares(gone, 2); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("write to a missing cgroup: want fs.ErrNotExist, got %v", err)
			}
			if _, err := os.Stat(rw.Dir("cpu", gone)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a write created the missing cgroup %s", gone)
			}
		})
	}
}

func TestSharesWeight(t *testing.T) {
	tests := []struct{ shares, weight, back uint64 }{
		{shares: 2, weight: 1, back: 2},
		{shares: 1024, weight: 39, back: 999},
		{shares: 999, weight: 39, back: 999}, // the fewest shares of weight 39
		{shares: 998, weight: 38, back: 973},
		{shares: 262144, weight: 10000, back: 262144},
		{shares: 0, weight: 1, back: 2},                // below the range: clamped
		{shares: 1 << 30, weight: 10000, back: 262144}, // above the range: clamped
	}
	for _, tt := range tests {
		if w := SharesToWeight(tt.shares); w != tt.weight {
			t.Errorf("SharesToWeight(%d) = %d, want %d", tt.shares, w, tt.weight)
		}
		if s := WeightToShares(tt.weight); s != tt.back {
			t.Errorf("WeightToShares(%d) = %d, want %d", tt.weight, s, tt.back)
		}
	}
	for w := uint64(1); w <= 10000; w++ { // a weight read back and written again is the same weight
		if s := WeightToShares(w); SharesToWeight(s) != w || SharesToWeight(s-1) == w && s > MinShares {
			t.Fatalf("WeightToShares(%d) = %d: not the fewest shares of that weight", w, s)
		}
	}
}

func TestThrottledRatio(t *testing.T) {
	tests := []struct {
		name      string
		prev, cur CPUStat
		want      float64
	}{
		{name: "half", prev: CPUStat{Periods: 100, ThrottledPeriods: 10}, cur: CPUStat{Periods: 200, ThrottledPeriods: 60}, want: 0.5},
		{name: "no period passed", prev: CPUStat{Periods: 100}, cur: CPUStat{Periods: 100}, want: 0},
		{name: "counters reset", prev: CPUStat{Periods: 100, ThrottledPeriods: 50}, cur: CPUStat{Periods: 10, ThrottledPeriods: 5}, want: 0},
	}
	for _, tt := range tests {
		if got := tt.cur.ThrottledRatio(tt.prev); got != tt.want {
			t.Errorf("%s: ThrottledRatio = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func check(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func diff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

// Children lists the cgroups below a directory, files left out, in the cpu hierarchy on v1 and the unified one on
// v2; a missing cgroup is fs.ErrNotExist.
func TestChildren(t *testing.T) {
	for _, v := range []Version{V1, V2} {
		t.Run(v.String(), func(t *testing.T) {
			root := t.TempDir()
			f := NewFS(root, v)
			for _, d := range []string{"kubepods/besteffort/podb/c2", "kubepods/besteffort/podb/c1", "kubepods/besteffort/poda"} {
				if err := os.MkdirAll(f.Dir("cpu", d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(f.Dir("cpu", "kubepods/besteffort/podb"), "cpu.shares"), []byte("2"), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := f.Children("kubepods/besteffort/podb")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"c1", "c2"}, got); diff != "" {
				t.Errorf("children (-want +got):\n%s", diff)
			}
			if _, err := f.Children("kubepods/besteffort/gone"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("children of a missing cgroup: %v, want fs.ErrNotExist", err)
			}
		})
	}
}
