package executor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// newHost makes a host tree with two sysctls and a resctrl root, and returns it with an executor writing to it.
func newHost(t *testing.T) (string, *Executor) {
	t.Helper()
	host := t.TempDir()
	for f, v := range map[string]string{
		"proc/sys/vm/min_free_kbytes": "67584\n", "proc/sys/vm/watermark_scale_factor": "10\n", "sys/fs/resctrl/schemata": "L3:0=fff\n",
	} {
		if err := os.MkdirAll(filepath.Join(host, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(host, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := DefaultOptions()
	opts.Host = system.NewHostFS(host)
	e, _, _, _ := newExecutor(t, newTree(t), opts)
	return host, e
}

// TestHostFiles: sysctls are held and resynced like cgroup values, a sysctl this kernel lacks is said once for that
// file alone, and an executor without a host writer refuses host values as unsupported.
func TestHostFiles(t *testing.T) {
	host, e := newHost(t)
	ctx := context.Background()
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(host, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	minFree := "proc/sys/vm/min_free_kbytes"
	if err := e.Apply(ctx, "sysreconcile",
		Update{Dir: minFree, Value: HostFile{Kind: ResourceSysctl, Content: "262144"}},
		Update{Dir: "proc/sys/vm/memcg_reaper", Value: HostFile{Kind: ResourceSysctl, Content: "1"}},
	); err != nil {
		t.Fatalf("a missing sysctl is not an error of the batch: %v", err)
	}
	if got := read(minFree); got != "262144" {
		t.Errorf("min_free_kbytes = %q, want 262144", got)
	}
	if got := testutil.ToFloat64(e.writes.WithLabelValues(string(ResourceSysctl), ResultUnsupported)); got != 1 {
		t.Errorf("unsupported sysctl writes = %v, want 1", got)
	}
	// Another sysctl still goes through after one was missing; the missing one is not tried again.
	wsf := "proc/sys/vm/watermark_scale_factor"
	if err := e.Apply(ctx, "sysreconcile",
		Update{Dir: wsf, Value: HostFile{Kind: ResourceSysctl, Content: "150"}},
		Update{Dir: "proc/sys/vm/memcg_reaper", Value: HostFile{Kind: ResourceSysctl, Content: "1"}},
	); err != nil {
		t.Fatal(err)
	}
	if got := read(wsf); got != "150" {
		t.Errorf("watermark_scale_factor = %q, want 150", got)
	}
	if got := testutil.ToFloat64(e.writes.WithLabelValues(string(ResourceSysctl), ResultUnsupported)); got != 1 {
		t.Errorf("the missing sysctl was tried again: unsupported writes = %v", got)
	}
	// Drift is undone.
	if err := os.WriteFile(filepath.Join(host, minFree), []byte("1024"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := read(minFree); got != "262144" {
		t.Errorf("after a resync min_free_kbytes = %q, want 262144", got)
	}
	// A value changed behind the executor's back is written again at the next Apply once the owner says so, not
	// only at the resync.
	if err := os.WriteFile(filepath.Join(host, minFree), []byte("2048"), 0o644); err != nil {
		t.Fatal(err)
	}
	apply := func() {
		t.Helper()
		if err := e.Apply(ctx, "sysreconcile", Update{Dir: minFree, Value: HostFile{Kind: ResourceSysctl, Content: "262144"}}); err != nil {
			t.Fatal(err)
		}
	}
	apply()
	if got := read(minFree); got != "2048" {
		t.Errorf("Apply of a held, written value wrote it again: %q", got)
	}
	e.Invalidate(minFree, ResourceSysctl)
	apply()
	if got := read(minFree); got != "262144" {
		t.Errorf("after Invalidate, Apply did not write: min_free_kbytes = %q", got)
	}
	// Released values are no longer asserted.
	if n := e.Release("sysreconcile", ResourceSysctl, func(dir string) bool { return dir == minFree }); n != 1 {
		t.Errorf("Release dropped %d values, want 1", n)
	}
	if err := os.WriteFile(filepath.Join(host, minFree), []byte("1024"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = e.Resync(ctx)
	if got := read(minFree); got != "1024" {
		t.Errorf("a released value was written again: %q", got)
	}

	noHost, _, _, _ := newExecutor(t, newTree(t), DefaultOptions())
	err := noHost.Apply(ctx, "sysreconcile", Update{Dir: minFree, Value: HostFile{Kind: ResourceSysctl, Content: "1"}})
	if err != nil {
		t.Errorf("no host writer: want the value refused as unsupported, not an error: %v", err)
	}
	if got := testutil.ToFloat64(noHost.writes.WithLabelValues(string(ResourceSysctl), ResultUnsupported)); got != 1 {
		t.Errorf("no host writer: unsupported writes = %v, want 1", got)
	}
}

// TestDirsAndActions: a resctrl group is created, a task moved into it once (not held), and removing the group
// drops the values held under it.
func TestDirsAndActions(t *testing.T) {
	host, e := newHost(t)
	ctx := context.Background()
	group := "sys/fs/resctrl/gleaner-BE"
	if err := e.MakeDir(ctx, "resctrl", group, "class BE enabled"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"schemata", "tasks"} { // the kernel creates them; the fixture must
		if err := os.WriteFile(filepath.Join(host, group, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Apply(ctx, "resctrl", Update{Dir: group + "/schemata", Value: HostFile{Kind: ResourceResctrlSchemata, Content: "L3:0=3"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Do(ctx, "resctrl", Update{Dir: group + "/tasks", Value: HostFile{Kind: ResourceResctrlTasks, Content: "4242"}, Reason: "pod default/batch"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(host, group, "tasks")); string(b) != "4242" {
		t.Errorf("tasks = %q, want 4242", b)
	}
	if len(e.held) != 1 {
		t.Errorf("the executor holds %d values, want 1 (the schemata; a task move is an action)", len(e.held))
	}
	// A task that ended before it was moved: the kernel's ESRCH is a task gone, not a failed write.
	e.targets.host = esrch{e.targets.host}
	if err := e.Do(ctx, "resctrl", Update{Dir: group + "/tasks", Value: HostFile{Kind: ResourceResctrlTasks, Content: "4243"}}); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("want the write's ESRCH, got %v", err)
	}
	if got := testutil.ToFloat64(e.writes.WithLabelValues(string(ResourceResctrlTasks), ResultGone)); got != 1 {
		t.Errorf("writes{resctrl.tasks,gone} = %v, want 1", got)
	}
	e.targets.host = e.targets.host.(esrch).HostWriter
	if err := os.RemoveAll(filepath.Join(host, group)); err != nil { // the kernel removes a group's files with it
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(host, group), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := e.RemoveDir(ctx, "resctrl", group, "class BE disabled"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(host, group)); !os.IsNotExist(err) {
		t.Errorf("the group still exists: %v", err)
	}
	if len(e.held) != 0 {
		t.Errorf("values under a removed directory are still held: %v", e.held)
	}
	var seen []string
	for _, r := range e.Audit() {
		seen = append(seen, string(r.Resource)+" "+r.Value+" "+r.Result)
	}
	want := []string{"dir create written", "resctrl.schemata L3:0=3 written", "resctrl.tasks 4242 written", "resctrl.tasks 4243 gone", "dir remove written"}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("audit = %q, want %q", seen, want)
	}
}

// esrch is a host whose writes fail as the kernel's write of an ended task to a tasks file does.
type esrch struct{ HostWriter }

func (esrch) WriteFile(rel, _ string) error {
	return &os.PathError{Op: "write", Path: rel, Err: syscall.ESRCH}
}

// TestIOLimitsPerDevice: two devices of one cgroup are held apart, so changing one leaves the other alone.
func TestIOLimitsPerDevice(t *testing.T) {
	root := newTree(t)
	for _, f := range []string{"blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device", "blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device"} {
		p := filepath.Join(root, "blkio", podA, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e, _, _, _ := newExecutor(t, root, DefaultOptions())
	ctx := context.Background()
	sda, sdb := cgroup.Device{Major: 8}, cgroup.Device{Major: 8, Minor: 16}
	if err := e.Apply(ctx, "blkio",
		Update{Dir: podA, Value: IOLimit{Device: sda, Limit: cgroup.IOLimit{ReadBPS: 1 << 20}}},
		Update{Dir: podA, Value: IOLimit{Device: sdb, Limit: cgroup.IOLimit{WriteBPS: 2 << 20}}},
	); err != nil {
		t.Fatal(err)
	}
	if len(e.held) != 2 {
		t.Fatalf("held %d values, want one per device", len(e.held))
	}
	if err := e.Apply(ctx, "blkio", Update{Dir: podA, Value: IOLimit{Device: sda, Limit: cgroup.IOLimit{ReadBPS: 3 << 20}}}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, h := range e.held {
		got[k.instance] = h.value.String()
	}
	want := map[string]string{"8:0": "8:0 rbps=3145728 wbps=max riops=max wiops=max", "8:16": "8:16 rbps=max wbps=2097152 riops=max wiops=max"}
	if len(got) != 2 || got["8:0"] != want["8:0"] || got["8:16"] != want["8:16"] {
		t.Errorf("held = %v, want %v", got, want)
	}
}

// TestDoAllIsOneRecord: many one-shot writes (a pod's threads into a resctrl group) are one audit record with the
// count of each result, while the counters count every write and each update gets its own error.
func TestDoAllIsOneRecord(t *testing.T) {
	host, e := newHost(t)
	ctx := context.Background()
	group := "sys/fs/resctrl/gleaner-BE"
	if err := os.MkdirAll(filepath.Join(host, group), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, group, "tasks"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	task := func(dir, id string) Update {
		return Update{Dir: dir + "/tasks", Value: HostFile{Kind: ResourceResctrlTasks, Content: id}}
	}
	errs := e.DoAll(ctx, "resctrl", "threads of pod default/batch", task(group, "10"), task("sys/fs/resctrl/gone", "11"), task(group, "12"))
	if len(errs) != 3 || errs[0] != nil || !errors.Is(errs[1], fs.ErrNotExist) || errs[2] != nil {
		t.Fatalf("errors %v, want nil, a gone group, nil", errs)
	}
	audit := e.Audit()
	if len(audit) != 1 || audit[0].Value != "2 written, 1 gone" || audit[0].Reason != "threads of pod default/batch" || audit[0].Result != ResultWritten {
		t.Errorf("audit %+v, want one record of 2 written and 1 gone", audit)
	}
	if got := testutil.ToFloat64(e.writes.WithLabelValues(string(ResourceResctrlTasks), ResultWritten)); got != 2 {
		t.Errorf("writes{resctrl.tasks,written} = %v, want 2", got)
	}
	if errs := e.DoAll(ctx, "resctrl", "nothing"); errs != nil || len(e.Audit()) != 1 {
		t.Errorf("an empty DoAll wrote or recorded: %v, %d records", errs, len(e.Audit()))
	}
}
