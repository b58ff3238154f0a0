package collector

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/proc"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// newDeviceRig is newRig with the device collectors' options.
func newDeviceRig(t *testing.T, cfg hostsim.Config, opts DeviceOptions, selection ...string) *rig {
	t.Helper()
	r := newRig(t, cfg, selection...)
	p, err := proc.New(r.host.ProcRoot())
	if err != nil {
		t.Fatal(err)
	}
	r.runner, err = NewRunner(Deps{
		Proc: p, SysRoot: r.host.SysRoot(), Cgroups: cgroup.NewFS(r.host.CgroupRoot(), cfg.Version).KeepOpen(4096), CgroupVersion: cfg.Version,
		Layout: r.host.Layout(), States: r.store, Cache: r.cache, Metrics: r.metrics, Devices: opts,
	}, r.clock, Registry(), selection, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The storage collector lists the simulated disk and the file systems of the kubelet's and the runtime's roots;
// the pod I/O collector exports each pod's cumulative blkio / io.stat counters and turns them into rates, named
// after that disk.
func TestStorageAndPodIO(t *testing.T) {
	for _, cfg := range []hostsim.Config{
		{Version: cgroup.V1, Driver: cgroup.Cgroupfs},
		{Version: cgroup.V2, Driver: cgroup.Systemd},
	} {
		t.Run(cfg.Version.String(), func(t *testing.T) {
			opts := DefaultDeviceOptions()
			r := newDeviceRig(t, cfg, opts, StorageName, PodIOName)
			writer := tu.Pod("writer").UID("uid-writer").Container("c").Requests("cpu", "100m").Obj()
			quiet := tu.Pod("quiet").UID("uid-quiet").Container("c").Requests("cpu", "100m").Obj()
			idle := tu.Pod("idle").UID("uid-idle").Container("c").Requests("cpu", "100m").Obj()
			r.addPod(t, writer, hostsim.Usage{DiskRead: 1 << 20, DiskWrite: 4 << 20})
			r.addPod(t, quiet, hostsim.Usage{DiskRead: 4096})
			r.addPod(t, idle, hostsim.Usage{})
			if err := r.cycles(t, 3); err != nil {
				t.Fatal(err)
			}
			near(t, "writer read B/s", r.last(metriccache.PodKey(metriccache.PodDiskReadBytes, "uid-writer")), 1<<20, 1)
			near(t, "writer write B/s", r.last(metriccache.PodKey(metriccache.PodDiskWriteBytes, "uid-writer")), 4<<20, 1)
			near(t, "quiet read B/s", r.last(metriccache.PodKey(metriccache.PodDiskReadBytes, "uid-quiet")), 4096, 0)
			near(t, "quiet write B/s", r.last(metriccache.PodKey(metriccache.PodDiskWriteBytes, "uid-quiet")), 0, 0)
			near(t, "idle read B/s", r.last(metriccache.PodKey(metriccache.PodDiskReadBytes, "uid-idle")), 0, 0)
			d := r.metrics.Devices
			writer1 := map[string]string{"namespace": "default", "pod": "writer", "device": "vda"}
			if got := counterValue(t, d.PodDiskBytes, writer1, "direction", "write"); got != 3*4<<20 {
				t.Errorf("bytes written counter = %v, want %v (3 s at 4 MiB/s)", got, 3*4<<20)
			}
			if got := counterValue(t, d.PodDiskOperations, writer1, "direction", "read"); got != 3*256 {
				t.Errorf("read operations counter = %v, want %v (3 s at 1 MiB/s in 4 KiB)", got, 3*256)
			}
			if got := testutil.ToFloat64(d.PodDiskBytesRate.WithLabelValues("default", "writer", "vda", "write")); got != 4<<20 {
				t.Errorf("deprecated write throughput gauge = %v, want %v", got, 4<<20)
			}
			if got := testutil.ToFloat64(d.PodDiskOpsRate.WithLabelValues("default", "writer", "vda", "read")); got != 256 {
				t.Errorf("deprecated read operations gauge = %v, want 256 (1 MiB/s in 4 KiB)", got)
			}
			if got := testutil.ToFloat64(d.BlockDevice.WithLabelValues("vda", "253:0", "", "false")); got != 1 {
				t.Errorf("block device info of vda = %v, want 1", got)
			}
			if got := testutil.ToFloat64(d.BlockDeviceSize.WithLabelValues("vda")); got != 41943040*512 {
				t.Errorf("size of vda = %v", got)
			}
			for _, role := range []string{"kubelet", "runtime"} {
				dir := opts.KubeletRootDir
				if role == "runtime" {
					dir = opts.RuntimeRootDir
				}
				if got := testutil.ToFloat64(d.FileSystem.WithLabelValues(role, dir, "/", "ext4", "/dev/vda", "253:0")); got != 1 {
					t.Errorf("file system of the %s root = %v, want 1 (the root file system on vda)", role, got)
				}
			}

			// A pod that left takes its gauges with it.
			if err := r.host.RemovePod(writer.UID); err != nil {
				t.Fatal(err)
			}
			r.store.DeletePod(writer.UID)
			if err := r.cycles(t, 1); err != nil {
				t.Fatal(err)
			}
			for _, c := range []prometheus.Collector{d.PodDiskBytes, d.PodDiskOperations, d.PodDiskBytesRate, d.PodDiskOpsRate} {
				if n := testutil.CollectAndCount(c); n != 2 {
					t.Errorf("%d series after the writer left, want the quiet pod's read and write on vda", n)
				}
			}
		})
	}
}

// A pod's I/O statistics that cannot be parsed cost that pod's sample only, and the error names the file.
func TestPodIOBadFile(t *testing.T) {
	r := newDeviceRig(t, hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs}, DefaultDeviceOptions(), PodIOName)
	good := tu.Pod("good").UID("uid-good").Container("c").Requests("cpu", "100m").Obj()
	bad := tu.Pod("bad").UID("uid-bad").Container("c").Requests("cpu", "100m").Obj()
	r.addPod(t, good, hostsim.Usage{DiskRead: 4096})
	r.addPod(t, bad, hostsim.Usage{DiskRead: 4096})
	if err := r.cycles(t, 1); err != nil {
		t.Fatal(err)
	}
	file := "cgroup/blkio/" + r.host.Layout().PodDir(bad) + "/blkio.throttle.io_service_bytes_recursive"
	if err := r.host.WriteFile(file, "8:0 Read lots\n"); err != nil {
		t.Fatal(err)
	}
	r.clock.Step(1e9)
	err := r.runner.CollectOnce(t.Context())
	if err == nil || !strings.Contains(err.Error(), "1 of 2 failed") || !strings.Contains(err.Error(), "blkio.throttle.io_service_bytes_recursive") {
		t.Errorf("error = %v, want one naming the bad pod's file", err)
	}
	if got := testutil.ToFloat64(r.metrics.CollectorRuns.WithLabelValues(PodIOName, metrics.ResultError)); got != 1 {
		t.Errorf("error runs = %v, want 1", got)
	}
}

// A host without /sys/block and without the host's /proc/1 (no hostPID) is said once as unsupported, not an error.
func TestStorageUnsupported(t *testing.T) {
	r := newDeviceRig(t, hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs}, DefaultDeviceOptions(), StorageName)
	for _, dir := range []string{filepath.Join(r.host.SysRoot(), "block"), filepath.Join(r.host.ProcRoot(), "1")} {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.cycles(t, 2); err == nil {
		t.Fatal("no error for a host without block devices")
	}
	if got := testutil.ToFloat64(r.metrics.CollectorRuns.WithLabelValues(StorageName, metrics.ResultUnsupported)); got != 2 {
		t.Errorf("unsupported runs = %v, want 2", got)
	}
}

// counterValue is the value of the counter series of c whose labels are labels and name=value; the test fails
// without one.
func counterValue(t *testing.T, c prometheus.Collector, labels map[string]string, name, value string) float64 {
	t.Helper()
	want := maps.Clone(labels)
	want[name] = value
	ch := make(chan prometheus.Metric, 1024)
	c.Collect(ch)
	close(ch)
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, l := range pb.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if maps.Equal(got, want) {
			if pb.GetCounter() == nil {
				t.Fatalf("the series %v is not a counter", want)
			}
			return pb.GetCounter().GetValue()
		}
	}
	t.Fatalf("no series %v", want)
	return 0
}
