package collector

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// kidledStats is a memory.idle_page_stats with the default buckets (1,2,5,15,30,60,120,240 scan periods) holding
// anon in the clean, swap-backed, evictable, inactive row and file in the clean file row.
func kidledStats(anon, file [8]uint64) string {
	var b strings.Builder
	b.WriteString("# version: 1.0\n# page_scans: 24\n# slab_scans: 0\n# scan_period_in_seconds: 120\n# use_hierarchy: 1\n")
	b.WriteString("# buckets: 1,2,5,15,30,60,120,240\n#\n# |||||  [1,2) [2,5) [5,15) [15,30) [30,60) [60,120) [120,240) [240,+inf)\n")
	row := func(name string, v [8]uint64) {
		fmt.Fprintf(&b, "  %s", name)
		for _, x := range v {
			fmt.Fprintf(&b, " %d", x)
		}
		b.WriteString("\n")
	}
	for _, t := range []string{"csei", "dsei", "cfei", "dfei", "csui", "dsui", "cfui", "dfui", "csea", "dsea", "cfea", "dfea", "csua", "dsua", "cfua", "dfua"} {
		switch t {
		case "csei":
			row(t, anon)
		case "cfei":
			row(t, file)
		default:
			row(t, [8]uint64{})
		}
	}
	row("slab", [8]uint64{1, 2, 3, 4, 5, 6, 7, 8})
	return b.String()
}

// memoryFile is the path of a memory cgroup file of dir under the simulated host's root.
func memoryFile(v cgroup.Version, dir, file string) string {
	if v == cgroup.V1 {
		return filepath.Join("cgroup", "memory", dir, file)
	}
	return filepath.Join("cgroup", dir, file)
}

// On a kidled kernel the cold memory of the node and of each pod is the memory idle for at least the cold age
// (5 minutes: from the 5-scan-period bucket on at 120 s per scan), and the system's hot usage is its usage less
// the node's cold anonymous memory not held by pods.
func TestColdMemory(t *testing.T) {
	for _, cfg := range []hostsim.Config{{Version: cgroup.V1, Driver: cgroup.Cgroupfs}, {Version: cgroup.V2, Driver: cgroup.Systemd}} {
		t.Run(cfg.Version.String(), func(t *testing.T) {
			opts := DefaultDeviceOptions() // ColdAge 5m
			r := newDeviceRig(t, cfg, opts, NodeResourceName, PodResourceName, HostApplicationName, SystemResourceName, ColdMemoryName)
			a := tu.Pod("a").UID("uid-a").Container("c").Requests("cpu", "100m").Obj()
			b := tu.Pod("b").UID("uid-b").Container("c").Requests("cpu", "100m").Obj()
			r.addPod(t, a, hostsim.Usage{Memory: 64 << 20})
			r.addPod(t, b, hostsim.Usage{Memory: 32 << 20})
			r.host.SetSystemUsage(hostsim.Usage{Memory: 200 << 20})
			const mi = 1 << 20
			files := map[string]string{
				"sys/kernel/mm/kidled/scan_period_in_seconds": "120\n",
				// Node: 10 MiB anon idle 15..30 periods (cold), 3 MiB idle 2..5 (not cold); 50 MiB of file cold.
				memoryFile(cfg.Version, "", "memory.idle_page_stats"): kidledStats([8]uint64{0, 3 * mi, 0, 10 * mi}, [8]uint64{0, 0, 0, 0, 0, 0, 0, 50 * mi}),
				// Pod a: 1 MiB anon cold (5..15), 2 MiB not (2..5); 4 MiB file cold.
				memoryFile(cfg.Version, r.host.Layout().PodDir(a), "memory.idle_page_stats"): kidledStats([8]uint64{0, 2 * mi, 1 * mi}, [8]uint64{0, 0, 0, 0, 0, 0, 0, 4 * mi}),
				memoryFile(cfg.Version, r.host.Layout().PodDir(b), "memory.idle_page_stats"): kidledStats([8]uint64{}, [8]uint64{}),
			}
			for f, content := range files {
				if err := r.host.WriteFile(f, content); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.cycles(t, 2); err != nil {
				t.Fatal(err)
			}
			near(t, "node cold anon", r.last(metriccache.NamedKey(metriccache.NodeColdMemory, "anon")), 10*mi, 0)
			near(t, "node cold file", r.last(metriccache.NamedKey(metriccache.NodeColdMemory, "file")), 50*mi, 0)
			near(t, "pod a cold anon", r.last(metriccache.PodNamedKey(metriccache.PodColdMemory, "uid-a", "anon")), 1*mi, 0)
			near(t, "pod a cold file", r.last(metriccache.PodNamedKey(metriccache.PodColdMemory, "uid-a", "file")), 4*mi, 0)
			near(t, "pod b cold anon", r.last(metriccache.PodNamedKey(metriccache.PodColdMemory, "uid-b", "anon")), 0, 0)
			system := r.last(metriccache.NodeKey(metriccache.SystemMemoryUsage))
			near(t, "system usage", system, 200*mi, mi)
			near(t, "system hot usage", r.last(metriccache.NodeKey(metriccache.SystemHotMemoryUsage)), system-9*mi, 0)
			d := r.metrics.Devices
			if got := testutil.ToFloat64(d.PodColdMemory.WithLabelValues("default", "a", "file")); got != 4*mi {
				t.Errorf("pod a's cold file gauge = %v", got)
			}
			if got := testutil.ToFloat64(d.SystemHotMemory); got != system-9*mi {
				t.Errorf("system hot gauge = %v, want %v", got, system-9*mi)
			}
		})
	}
}

func TestColdMemoryAge(t *testing.T) {
	tests := []struct {
		age    time.Duration
		period time.Duration
		want   int
	}{
		{age: 5 * time.Minute, period: 2 * time.Minute, want: 3},
		{age: 4 * time.Minute, period: 2 * time.Minute, want: 2},
		{age: time.Second, period: 2 * time.Minute, want: 1},
	}
	for _, tt := range tests {
		c := &coldMemory{d: Deps{Devices: DeviceOptions{ColdAge: tt.age}}}
		if got := c.minAge(tt.period); got != tt.want {
			t.Errorf("minAge(%v at %v per scan) = %d, want %d", tt.age, tt.period, got, tt.want)
		}
	}
}

// Where the kernel lacks kidled, or kidled does not scan, the collector says why once and steps aside; the later
// rounds run clean.
func TestColdMemoryUnsupported(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{name: "upstream kernel without page_idle", want: "neither it nor page_idle"},
		{name: "upstream kernel with page_idle", files: map[string]string{"sys/kernel/mm/page_idle/bitmap": ""}, want: "has only"},
		{name: "kidled not scanning", files: map[string]string{"sys/kernel/mm/kidled/scan_period_in_seconds": "0\n"}, want: "kidled does not scan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newDeviceRig(t, hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs}, DefaultDeviceOptions(), ColdMemoryName)
			for f, c := range tt.files {
				if err := r.host.WriteFile(f, c); err != nil {
					t.Fatal(err)
				}
			}
			err := r.cycles(t, 1)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one saying %q", err, tt.want)
			}
			if err := r.cycles(t, 1); err != nil {
				t.Errorf("a later round = %v, want nil (said once)", err)
			}
			if got := testutil.ToFloat64(r.metrics.CollectorRuns.WithLabelValues(ColdMemoryName, metrics.ResultUnsupported)); got != 1 {
				t.Errorf("unsupported runs = %v, want 1", got)
			}
		})
	}
	// A malformed scan period is an error, not unsupported.
	r := newDeviceRig(t, hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs}, DefaultDeviceOptions(), ColdMemoryName)
	if err := os.MkdirAll(filepath.Join(r.host.SysRoot(), "kernel/mm/kidled"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.host.WriteFile("sys/kernel/mm/kidled/scan_period_in_seconds", "soon\n"); err != nil {
		t.Fatal(err)
	}
	if err := r.cycles(t, 1); err == nil || !strings.Contains(err.Error(), "parsing") {
		t.Errorf("error = %v, want a parse error", err)
	}
	if got := testutil.ToFloat64(r.metrics.CollectorRuns.WithLabelValues(ColdMemoryName, metrics.ResultError)); got != 1 {
		t.Errorf("error runs = %v, want 1", got)
	}
}
