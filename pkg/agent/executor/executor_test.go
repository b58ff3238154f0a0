package executor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/cpuset"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// The tree every test starts from: a besteffort QoS cgroup with two pods, on cgroup v1 files.
const (
	qosDir = "kubepods/besteffort"
	podA   = "kubepods/besteffort/poda"
	podB   = "kubepods/besteffort/podb"
)

// newTree writes a v1 tree: every cgroup has no CPU quota, CPUs 0-3 and no memory limit; without lists files to
// leave out ("cpu.cfs_burst_us" to model an old kernel).
func newTree(t *testing.T, without ...string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000", "cpu/cpu.shares": "2",
		"cpu/cpu.cfs_burst_us": "0", "cpuset/cpuset.cpus": "0-3", "cpuset/cpuset.effective_cpus": "0-3", "memory/memory.limit_in_bytes": "9223372036854771712",
	}
	for _, dir := range []string{"kubepods", qosDir, podA, podB} {
		for f, v := range files {
			if strings.Contains(strings.Join(without, " "), path.Base(f)) {
				continue
			}
			sub, name := path.Split(f)
			p := filepath.Join(root, sub, dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// kernel is a cgroup.ReadWriter that enforces cgroup v1's hierarchy rules the way the kernel does (a cpuset within
// its parent's and containing its children's, a CFS quota no larger than the parent's), and records every write.
type kernel struct {
	*cgroup.FS
	t      *testing.T
	writes []string
}

func (k *kernel) children(dir string) []string {
	var out []string
	for _, d := range []string{"kubepods", qosDir, podA, podB} {
		if path.Dir(d) == dir {
			out = append(out, d)
		}
	}
	return out
}

func (k *kernel) SetCPUSet(dir string, cpus cpuset.CPUSet) error {
	if parent, err := k.CPUSet(path.Dir(dir)); dir != "kubepods" && err == nil && !cpus.IsSubsetOf(parent) {
		return fmt.Errorf("%s: %s outside the parent's %s: %w", dir, cpus, parent, errEINVAL)
	}
	for _, c := range k.children(dir) {
		if cs, _ := k.CPUSet(c); !cs.IsSubsetOf(cpus) {
			return fmt.Errorf("%s: %s leaves out child %s's %s: %w", dir, cpus, c, cs, errEINVAL)
		}
	}
	k.writes = append(k.writes, "cpuset "+dir+" "+cpus.String())
	if err := k.FS.SetCPUSet(dir, cpus); err != nil {
		return err
	}
	// The kernel's view, which the Reader reads.
	return os.WriteFile(filepath.Join(k.Dir("cpuset", dir), "cpuset.effective_cpus"), []byte(cpus.String()), 0o644)
}

func (k *kernel) SetCPUQuota(dir string, q cgroup.CPUQuota) error {
	if parent, err := k.CPUQuota(path.Dir(dir)); dir != "kubepods" && err == nil && !parent.Unlimited() && (q.Unlimited() || q.Cores() > parent.Cores()) {
		return fmt.Errorf("%s: quota %v above the parent's %v: %w", dir, q.Cores(), parent.Cores(), errEINVAL)
	}
	for _, c := range k.children(dir) {
		// As on the kernel's v1: an unlimited child inherits the parent's limit; a limited one may not exceed it.
		if cq, _ := k.CPUQuota(c); !q.Unlimited() && !cq.Unlimited() && cq.Cores() > q.Cores() {
			return fmt.Errorf("%s: quota %v below child %s's %v: %w", dir, q.Cores(), c, cq.Cores(), errEINVAL)
		}
	}
	k.writes = append(k.writes, fmt.Sprintf("quota %s %v", dir, q.Cores()))
	return k.FS.SetCPUQuota(dir, q)
}

func (k *kernel) SetCPUShares(dir string, s uint64) error {
	k.writes = append(k.writes, fmt.Sprintf("shares %s %d", dir, s))
	return k.FS.SetCPUShares(dir, s)
}

var errEINVAL = errors.New("invalid argument")

func newExecutor(t *testing.T, root string, opts Options) (*Executor, *kernel, *prometheus.Registry, *clocktesting.FakeClock) {
	t.Helper()
	k := &kernel{FS: cgroup.NewFS(root, cgroup.V1), t: t}
	reg := prometheus.NewRegistry()
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	e, err := New(k, clk, reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e, k, reg, clk
}

func quota(cores float64) CPUQuota {
	if cores < 0 {
		return CPUQuota{Quota: -1, Period: 100 * time.Millisecond}
	}
	return CPUQuota{Quota: time.Duration(cores * float64(100*time.Millisecond)), Period: 100 * time.Millisecond}
}

func cpus(ids ...int) CPUSet { return NewCPUSet(cpuset.New(ids...)) }

// TestApplyOrdersForTheKernel: each batch is handed over in the order that would fail (parents last when
// loosening, first when tightening); the executor must reorder it so the strict kernel accepts every write.
func TestApplyOrdersForTheKernel(t *testing.T) {
	tests := []struct {
		name    string
		updates []Update
		want    []string
	}{
		{
			name:    "tighten quota: children first",
			updates: []Update{{Dir: qosDir, Value: quota(1)}, {Dir: podA, Value: quota(0.5)}, {Dir: podB, Value: quota(1)}},
			want:    []string{"quota " + podA + " 0.5", "quota " + podB + " 1", "quota " + qosDir + " 1"},
		},
		{
			name:    "loosen quota: parents first",
			updates: []Update{{Dir: podA, Value: quota(-1)}, {Dir: qosDir, Value: quota(-1)}, {Dir: "kubepods", Value: quota(-1)}},
			want:    []string{"quota kubepods -1", "quota " + qosDir + " -1", "quota " + podA + " -1"},
		},
		{
			name:    "shrink cpuset: children first",
			updates: []Update{{Dir: qosDir, Value: cpus(2, 3)}, {Dir: podA, Value: cpus(2, 3)}, {Dir: podB, Value: cpus(3)}},
			want:    []string{"cpuset " + podA + " 2-3", "cpuset " + podB + " 3", "cpuset " + qosDir + " 2-3"},
		},
		{
			// 0-3 -> 4-5 is impossible within kubepods' 0-3; first kubepods grows, then the rest moves sideways:
			// union first (parents first), then the final sets (children first).
			name: "move cpuset sideways",
			updates: []Update{
				{Dir: podA, Value: cpus(4)}, {Dir: podB, Value: cpus(5)}, {Dir: qosDir, Value: cpus(4, 5)},
				{Dir: "kubepods", Value: cpus(0, 1, 2, 3, 4, 5)},
			},
			want: []string{
				"cpuset kubepods 0-5", "cpuset " + qosDir + " 0-5", "cpuset " + podA + " 0-4", "cpuset " + podB + " 0-3,5",
				"cpuset " + podA + " 4", "cpuset " + podB + " 5", "cpuset " + qosDir + " 4-5",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, k, _, _ := newExecutor(t, newTree(t), DefaultOptions())
			if err := e.Apply(context.Background(), "test", tt.updates...); err != nil {
				t.Fatalf("Apply: %v (writes so far: %v)", err, k.writes)
			}
			if d := cmp.Diff(tt.want, k.writes); d != "" {
				t.Errorf("writes (-want +got):\n%s", d)
			}
		})
	}
}

// TestApplyWritesOnlyChanges: a value the executor holds is not written again; a new value is; Resync writes all.
func TestApplyWritesOnlyChanges(t *testing.T) {
	e, k, reg, _ := newExecutor(t, newTree(t), DefaultOptions())
	ctx := context.Background()
	apply := func(u ...Update) {
		t.Helper()
		if err := e.Apply(ctx, "cpusuppress", u...); err != nil {
			t.Fatal(err)
		}
	}
	apply(Update{Dir: qosDir, Value: quota(1.5)}, Update{Dir: qosDir, Value: CPUShares(2)})
	apply(Update{Dir: qosDir, Value: quota(1.5)}, Update{Dir: qosDir, Value: CPUShares(2)})
	if len(k.writes) != 2 {
		t.Fatalf("the same values applied twice made %d writes, want 2: %v", len(k.writes), k.writes)
	}
	apply(Update{Dir: qosDir, Value: quota(1)}, Update{Dir: qosDir, Value: CPUShares(2)})
	if len(k.writes) != 3 || k.writes[2] != "quota "+qosDir+" 1" {
		t.Fatalf("a changed quota: writes %v", k.writes)
	}
	if err := e.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if len(k.writes) != 5 {
		t.Errorf("resync wrote %d values, want both held ones: %v", len(k.writes)-3, k.writes[3:])
	}
	if got := testutil.ToFloat64(e.writes.WithLabelValues(string(ResourceCPUQuota), ResultWritten)); got != 3 {
		t.Errorf("quota writes counted: %v, want 3", got)
	}
	if n, err := testutil.GatherAndCount(reg, "gleaner_agent_executor_writes_total"); err != nil || n != 2 {
		t.Errorf("series of gleaner_agent_executor_writes_total: %d (%v), want 2", n, err)
	}
}

// TestResyncUndoesDrift: a value changed behind the executor's back is restored by the next resync, run by Start
// on its clock.
func TestResyncUndoesDrift(t *testing.T) {
	root := newTree(t)
	e, _, _, clk := newExecutor(t, root, Options{Resync: 10 * time.Second, AuditSize: 16})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := e.Apply(ctx, "cpusuppress", Update{Dir: qosDir, Value: quota(1.5), Reason: "be share 1.5 cores"}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "cpu", qosDir, "cpu.cfs_quota_us")
	read := func() string { b, _ := os.ReadFile(file); return string(b) }
	if got := read(); got != "150000" {
		t.Fatalf("quota after Apply = %q", got)
	}
	if err := os.WriteFile(file, []byte("-1"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- e.Start(ctx) }()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(10 * time.Second)
	for deadline := time.Now().Add(5 * time.Second); read() != "150000"; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("quota still %q one resync after it was changed", read())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
	audit := e.Audit()
	if len(audit) != 2 || audit[1].Reason != "be share 1.5 cores" || audit[1].Owner != "cpusuppress" || audit[1].Value != "150000 100000" {
		t.Errorf("audit trail %+v, want the write and its resync with owner and reason", audit)
	}
}

// TestOneBadFileDoesNotStopTheBatch: a cgroup that is gone is forgotten, a value the kernel refuses is reported
// and kept for the resync, a file the kernel lacks is said once; the good writes all happen.
func TestOneBadFileDoesNotStopTheBatch(t *testing.T) {
	root := newTree(t, "cpu.cfs_burst_us")
	e, k, _, _ := newExecutor(t, root, DefaultOptions())
	ctx := context.Background()
	err := e.Apply(ctx, "test",
		Update{Dir: "kubepods/besteffort/podgone", Value: CPUShares(2)},
		Update{Dir: podA, Value: cpus(7)}, // outside the parent's 0-3: refused
		Update{Dir: podA, Value: CPUBurst(time.Millisecond)},
		Update{Dir: podB, Value: CPUShares(100)},
		Update{Dir: podB, Value: MemoryLimit(1 << 30)},
	)
	if err == nil || !strings.Contains(err.Error(), "writing cpuset.cpus 7 of "+podA) {
		t.Errorf("Apply error %v, want the refused cpuset named", err)
	}
	if strings.Contains(fmt.Sprint(err), "podgone") || strings.Contains(fmt.Sprint(err), "burst") {
		t.Errorf("a gone cgroup and a missing file are not errors of the batch: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(root, "memory", podB, "memory.limit_in_bytes"))
	if string(b) != "1073741824" {
		t.Errorf("memory limit of %s = %q: the good writes after the bad ones did not happen", podB, b)
	}
	for _, res := range []struct {
		r      Resource
		result string
	}{{ResourceCPUShares, ResultGone}, {ResourceCPUSet, ResultError}, {ResourceCPUBurst, ResultUnsupported}, {ResourceCPUShares, ResultWritten}, {ResourceMemoryLimit, ResultWritten}} {
		if got := testutil.ToFloat64(e.writes.WithLabelValues(string(res.r), res.result)); got != 1 {
			t.Errorf("writes{%s,%s} = %v, want 1", res.r, res.result, got)
		}
	}
	// The refused value is retried by the resync; the gone cgroup and the missing file are not.
	k.writes = nil
	_ = e.Resync(ctx)
	_ = e.Apply(ctx, "test", Update{Dir: podB, Value: CPUBurst(time.Millisecond)})
	if got := testutil.ToFloat64(e.writes.WithLabelValues(string(ResourceCPUBurst), ResultUnsupported)); got != 1 {
		t.Errorf("a missing file was tried again: unsupported count %v", got)
	}
	if got := testutil.ToFloat64(e.writes.WithLabelValues(string(ResourceCPUSet), ResultError)); got != 2 {
		t.Errorf("the refused cpuset was not retried by the resync: error count %v", got)
	}
	if got := testutil.ToFloat64(e.writes.WithLabelValues(string(ResourceCPUShares), ResultGone)); got != 1 {
		t.Errorf("the gone cgroup was written again: gone count %v", got)
	}
}

func TestForget(t *testing.T) {
	e, k, _, _ := newExecutor(t, newTree(t), DefaultOptions())
	ctx := context.Background()
	if err := e.Apply(ctx, "test", Update{Dir: podA, Value: CPUShares(10)}, Update{Dir: podB, Value: CPUShares(20)}); err != nil {
		t.Fatal(err)
	}
	if n := e.Forget(func(dir string) bool { return dir == podA }); n != 1 {
		t.Errorf("Forget dropped %d values, want 1", n)
	}
	k.writes = nil
	if err := e.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"shares " + podB + " 20"}, k.writes); d != "" {
		t.Errorf("resync after Forget (-want +got):\n%s", d)
	}
}

func TestAuditIsBounded(t *testing.T) {
	e, _, _, _ := newExecutor(t, newTree(t), Options{Resync: time.Minute, AuditSize: 3})
	for i := range 5 {
		if err := e.Apply(context.Background(), "test", Update{Dir: podA, Value: CPUShares(uint64(10 + i)), Reason: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range e.Audit() {
		got = append(got, r.Reason+"="+r.Value)
	}
	if d := cmp.Diff([]string{"2=12", "3=13", "4=14"}, got); d != "" {
		t.Errorf("audit (-want +got):\n%s", d)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, o := range []Options{{Resync: 0, AuditSize: 1}, {Resync: time.Second, AuditSize: 0}} {
		if _, err := New(cgroup.NewFS(t.TempDir(), cgroup.V1), clocktesting.NewFakeClock(time.Now()), prometheus.NewRegistry(), o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// TestKillIsRecorded: killing goes through the writer's Kill and into the audit trail and the counters.
func TestKillIsRecorded(t *testing.T) {
	root := t.TempDir()
	dir := "kubepods/besteffort/podv2"
	if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, dir, "cgroup.kill"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := New(cgroup.NewFS(root, cgroup.V2), clocktesting.NewFakeClock(time.Now()), prometheus.NewRegistry(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Kill(dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, dir, "cgroup.kill")); string(b) != "1" {
		t.Errorf("cgroup.kill = %q, want 1", b)
	}
	if err := e.Kill("kubepods/besteffort/podgone"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("killing a gone cgroup: %v, want fs.ErrNotExist", err)
	}
	audit := e.Audit()
	if len(audit) != 2 || audit[0].Resource != ResourceKill || audit[0].Result != ResultWritten || audit[1].Result != ResultGone {
		t.Errorf("audit %+v", audit)
	}
}
