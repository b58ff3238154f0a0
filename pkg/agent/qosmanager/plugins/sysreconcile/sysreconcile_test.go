package sysreconcile

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolsrecord "k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/qosmanagertest"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/proc"
)

// These tests write only fixture trees copied from testdata/ into t.TempDir(): writing the real vm sysctls would
// change the settings of the machine the tests run on, which others share.

const (
	minFree   = "proc/sys/vm/min_free_kbytes"
	watermark = "proc/sys/vm/watermark_scale_factor"
	reaper    = "sys/kernel/mm/memcg_reaper/reap_background"
	// wantMinFree is MemTotal 16303412 kB x 100 / 10000 (testdata's meminfo, the default factor).
	wantMinFree = "163034"
)

// node is a fixture host: its tree, state directory, executor and plugin. restart replaces the executor and the
// plugin, as an agent restart does, keeping the tree and the state directory.
type node struct {
	t     *testing.T
	root  string
	state string
	exec  *executor.Executor
	p     *Plugin
}

// newNode copies testdata/<tree> into a temporary host root.
func newNode(t *testing.T, tree string) *node {
	t.Helper()
	root := t.TempDir()
	src := filepath.Join("testdata", tree)
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(root, strings.TrimPrefix(path, src))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, root: root, state: filepath.Join(t.TempDir(), "gleaner-agent")}
	n.restart()
	return n
}

// deps are the plugin's dependencies, wired as pkg/agent wires them (/proc/sys mounted apart from /proc).
func (n *node) deps(clk clock.WithTicker) qosmanager.Deps {
	n.t.Helper()
	host := system.NewHostFS("/").Mount("proc", filepath.Join(n.root, "proc")).
		Mount("proc/sys", filepath.Join(n.root, "proc/sys")).Mount("sys", filepath.Join(n.root, "sys"))
	opts := executor.DefaultOptions()
	opts.Host = host
	exec, err := executor.New(nil, clk, prometheus.NewRegistry(), opts)
	if err != nil {
		n.t.Fatal(err)
	}
	procFS, err := proc.New(filepath.Join(n.root, "proc"))
	if err != nil {
		n.t.Fatal(err)
	}
	n.exec = exec
	return qosmanager.Deps{Executor: exec, Proc: procFS, Host: host, StateDir: n.state, Clock: clk, Interval: DefaultInterval}
}

func (n *node) restart() {
	n.t.Helper()
	p, err := New(n.deps(clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))))
	if err != nil {
		n.t.Fatal(err)
	}
	n.p = p.(*Plugin)
}

func (n *node) read(rel string) string {
	n.t.Helper()
	b, err := os.ReadFile(filepath.Join(n.root, rel))
	if err != nil {
		n.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func (n *node) write(rel, v string) {
	n.t.Helper()
	if err := os.WriteFile(filepath.Join(n.root, rel), []byte(v+"\n"), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// run runs the plugin once with s as the NodeSLO's systemStrategy (defaults filled in), after Validate accepts it.
func (n *node) run(s *slov1alpha1.SystemStrategy) error {
	n.t.Helper()
	spec := (&slov1alpha1.NodeSLOSpec{SystemStrategy: s}).WithDefaults()
	if err := n.p.Validate(spec); err != nil {
		n.t.Fatalf("Validate refused %+v: %v", spec.SystemStrategy, err)
	}
	return n.p.Run(context.Background(), spec)
}

// expect checks the files' values.
func (n *node) expect(when string, want map[string]string) {
	n.t.Helper()
	got := map[string]string{}
	for f := range want {
		got[f] = n.read(f)
	}
	if d := cmp.Diff(want, got); d != "" {
		n.t.Errorf("%s: files (-want +got):\n%s", when, d)
	}
}

// recorded is the state file's originals as a fresh read sees them.
func (n *node) recorded() map[string]string {
	n.t.Helper()
	rec, err := loadRecord(n.state)
	if err != nil {
		n.t.Fatal(err)
	}
	return rec.Originals
}

// written is what the executor's audit trail shows the plugin wrote, in order.
func (n *node) written() []string {
	var out []string
	for _, r := range n.exec.Audit() {
		if r.Owner == Name && r.Result == executor.ResultWritten {
			out = append(out, r.Dir+"="+r.Value)
		}
	}
	return out
}

func on() *slov1alpha1.SystemStrategy { return &slov1alpha1.SystemStrategy{Enable: ptr.To(true)} }

// TestOnWritesAndRecords: with the strategy on, min_free_kbytes is MemTotal x factor / 10000 and
// watermark_scale_factor the strategy's value, both written through the executor, with the values they replaced
// recorded before the writes; a change behind the agent's back is undone by the executor's resync without being
// recorded as an original.
func TestOnWritesAndRecords(t *testing.T) {
	n := newNode(t, "upstream")
	if err := n.run(on()); err != nil {
		t.Fatal(err)
	}
	n.expect("on", map[string]string{minFree: wantMinFree, watermark: "150"})
	if d := cmp.Diff(map[string]string{minFree: "67584", watermark: "10"}, n.recorded()); d != "" {
		t.Errorf("recorded originals (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{minFree + "=" + wantMinFree, watermark + "=150"}, n.written()); d != "" {
		t.Errorf("executor writes (-want +got):\n%s", d)
	}

	s := on()
	s.MinFreeKbytesFactor, s.WatermarkScaleFactor = ptr.To[int64](200), ptr.To[int64](300)
	if err := n.run(s); err != nil {
		t.Fatal(err)
	}
	n.expect("factor 200", map[string]string{minFree: "326068", watermark: "300"})

	n.write(minFree, "5000") // an operator's sysctl -w
	if err := n.exec.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := n.run(s); err != nil {
		t.Fatal(err)
	}
	n.expect("after a change behind the agent's back", map[string]string{minFree: "326068"})
	if got := n.recorded()[minFree]; got != "67584" {
		t.Errorf("recorded original = %s, want the kernel's 67584 still", got)
	}
}

// TestOffRestores: turning the strategy off writes the recorded values back, forgets them, and stops holding the
// files, so the executor's resync no longer overrides other writers.
func TestOffRestores(t *testing.T) {
	n := newNode(t, "upstream")
	if err := n.run(on()); err != nil {
		t.Fatal(err)
	}
	if err := n.run(&slov1alpha1.SystemStrategy{Enable: ptr.To(false), WatermarkScaleFactor: ptr.To[int64](400)}); err != nil {
		t.Fatal(err)
	}
	n.expect("off", map[string]string{minFree: "67584", watermark: "10"})
	if got := n.recorded(); len(got) != 0 {
		t.Errorf("after restoring, still recorded: %v", got)
	}
	n.write(watermark, "77")
	if err := n.exec.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := n.run(nil); err != nil {
		t.Fatal(err)
	}
	n.expect("another writer after off", map[string]string{minFree: "67584", watermark: "77"})

	// On again: what is there now (the other writer's 77) is the new original.
	if err := n.run(on()); err != nil {
		t.Fatal(err)
	}
	if got := n.recorded()[watermark]; got != "77" {
		t.Errorf("recorded original = %s, want 77", got)
	}
}

// TestRestartKeepsOriginals: an agent restarted while the strategy is on finds its own values in the files and must
// not record them as the originals; the recorded ones survive, and turning the strategy off (before or after the
// restarted plugin's first run) restores them.
func TestRestartKeepsOriginals(t *testing.T) {
	for _, runFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "on then off", false: "off at once"}[runFirst], func(t *testing.T) {
			n := newNode(t, "upstream")
			if err := n.run(on()); err != nil {
				t.Fatal(err)
			}
			n.restart()
			if runFirst {
				if err := n.run(on()); err != nil {
					t.Fatal(err)
				}
				n.expect("restarted, on", map[string]string{minFree: wantMinFree, watermark: "150"})
			}
			if d := cmp.Diff(map[string]string{minFree: "67584", watermark: "10"}, n.recorded()); d != "" {
				t.Errorf("recorded originals after a restart (-want +got):\n%s", d)
			}
			if err := n.run(nil); err != nil {
				t.Fatal(err)
			}
			n.expect("restarted, off", map[string]string{minFree: "67584", watermark: "10"})
		})
	}
}

// TestAlreadyThere: a file that already holds the strategy's value is neither written nor recorded.
func TestAlreadyThere(t *testing.T) {
	n := newNode(t, "upstream")
	n.write(watermark, "150")
	if err := n.run(on()); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]string{minFree: "67584"}, n.recorded()); d != "" {
		t.Errorf("recorded (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{minFree + "=" + wantMinFree}, n.written()); d != "" {
		t.Errorf("executor writes (-want +got):\n%s", d)
	}
}

// TestReaper: on an Anolis kernel memcgReapBackGround is written, recorded and restored like the sysctls; where
// the kernel lacks memcg_reaper (upstream), or a sysctl (watermark_scale_factor before 4.6), the setting is skipped
// without an error, and the file is not asked for again.
func TestReaper(t *testing.T) {
	s := on()
	s.MemcgReapBackGround = ptr.To[int64](1)

	anolis := newNode(t, "anolis")
	if err := anolis.run(s); err != nil {
		t.Fatal(err)
	}
	anolis.expect("anolis, on", map[string]string{reaper: "1"})
	if got := anolis.recorded()[reaper]; got != "0" {
		t.Errorf("recorded reaper original = %q, want 0", got)
	}
	if err := anolis.run(nil); err != nil {
		t.Fatal(err)
	}
	anolis.expect("anolis, off", map[string]string{reaper: "0"})

	upstream := newNode(t, "upstream")
	if err := os.Remove(filepath.Join(upstream.root, watermark)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := upstream.run(s); err != nil {
			t.Fatalf("a kernel lacking files: %v", err)
		}
	}
	upstream.expect("upstream", map[string]string{minFree: wantMinFree})
	if d := cmp.Diff(map[string]bool{reaper: true, watermark: true}, upstream.p.lacking); d != "" {
		t.Errorf("lacking (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{minFree: "67584"}, upstream.recorded()); d != "" {
		t.Errorf("recorded (-want +got):\n%s", d)
	}
	if _, err := os.Stat(filepath.Join(upstream.root, "sys/kernel/mm/memcg_reaper")); err == nil {
		t.Error("the reaper's directory was created")
	}
}

// TestBadStateFile: a state file that cannot be read stops every write (its values would otherwise be lost at the
// next restore) with an error naming it, and is left as it is.
func TestBadStateFile(t *testing.T) {
	for name, content := range map[string]string{
		"not JSON":     `{"originals": {`,
		"unknown file": `{"originals": {"proc/sys/kernel/panic": "1"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			n := newNode(t, "upstream")
			if err := os.MkdirAll(n.state, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(n.state, StateFile)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, s := range []*slov1alpha1.SystemStrategy{on(), nil} {
				err := n.run(s)
				if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "moving it away") {
					t.Errorf("Run: want an error naming %s, got %v", path, err)
				}
			}
			n.expect("bad state file", map[string]string{minFree: "67584", watermark: "10"})
			if b, _ := os.ReadFile(path); string(b) != content {
				t.Errorf("the state file changed: %q", b)
			}
		})
	}
}

// TestUnwritableStateDir: a value whose original cannot be recorded is not changed. The state directory is one
// that cannot be created even by root (procfs takes no mkdir), and it has no state file to read.
func TestUnwritableStateDir(t *testing.T) {
	n := newNode(t, "upstream")
	n.state = "/proc/gleaner-sysreconcile-test"
	n.restart()
	err := n.run(on())
	if err == nil || !strings.Contains(err.Error(), "leaving "+minFree+" at 67584") {
		t.Errorf("Run: want an error saying min_free_kbytes is left alone, got %v", err)
	}
	n.expect("unwritable state", map[string]string{minFree: "67584", watermark: "10"})
	if got := n.written(); len(got) != 0 {
		t.Errorf("written without a record: %v", got)
	}
}

// TestValidate: with the strategy on, every value out of its range is named; off, nothing is checked.
func TestValidate(t *testing.T) {
	n := newNode(t, "upstream")
	tests := []struct {
		name string
		s    slov1alpha1.SystemStrategy
		want []string
	}{
		{name: "defaults, on", s: slov1alpha1.SystemStrategy{Enable: ptr.To(true)}},
		{name: "edges", s: slov1alpha1.SystemStrategy{Enable: ptr.To(true), MinFreeKbytesFactor: ptr.To[int64](1),
			WatermarkScaleFactor: ptr.To[int64](1000), MemcgReapBackGround: ptr.To[int64](1)}},
		{name: "off, anything", s: slov1alpha1.SystemStrategy{MinFreeKbytesFactor: ptr.To[int64](-5), WatermarkScaleFactor: ptr.To[int64](0)}},
		{name: "factor 0", s: slov1alpha1.SystemStrategy{Enable: ptr.To(true), MinFreeKbytesFactor: ptr.To[int64](0)},
			want: []string{"systemStrategy.minFreeKbytesFactor is 0, outside [1, 1000]"}},
		{name: "all out", s: slov1alpha1.SystemStrategy{Enable: ptr.To(true), MinFreeKbytesFactor: ptr.To[int64](1001),
			WatermarkScaleFactor: ptr.To[int64](3000), MemcgReapBackGround: ptr.To[int64](2)},
			want: []string{"minFreeKbytesFactor is 1001, outside [1, 1000]", "watermarkScaleFactor is 3000, outside [10, 1000]",
				"memcgReapBackGround is 2, outside [0, 1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := n.p.Validate((&slov1alpha1.NodeSLOSpec{SystemStrategy: &tt.s}).WithDefaults())
			qosmanagertest.ExpectValidation(t, err, false, tt.want...)
		})
	}
	unset := &slov1alpha1.NodeSLOSpec{SystemStrategy: &slov1alpha1.SystemStrategy{Enable: ptr.To(true)}}
	if err := n.p.Validate(unset); err == nil || !strings.Contains(err.Error(), "systemStrategy.watermarkScaleFactor is unset") {
		t.Errorf("Validate without defaults = %v, want unset fields named", err)
	}
}

// TestRefusedKeepsLastGood: through the QoS manager, a NodeSLO with an out-of-range value is refused with a Warning
// event, and the values of the last accepted one stay in the files.
func TestRefusedKeepsLastGood(t *testing.T) {
	n := newNode(t, "upstream")
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	store := statesinformer.NewStore()
	events := toolsrecord.NewFakeRecorder(10)
	d := n.deps(clk)
	d.States, d.Events = store, events
	m, err := qosmanager.NewManager(d, clk, []qosmanager.Factory{{Name: Name, Interval: DefaultInterval, Default: true, New: New}}, []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	slo := func(s *slov1alpha1.SystemStrategy) *slov1alpha1.NodeSLO {
		return &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: slov1alpha1.NodeSLOSpec{SystemStrategy: s}}
	}
	good := on()
	good.WatermarkScaleFactor = ptr.To[int64](200)
	store.SetNodeSLO(slo(good))
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	bad := on()
	bad.WatermarkScaleFactor = ptr.To[int64](5000)
	store.SetNodeSLO(slo(bad))
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	n.expect("after a refused NodeSLO", map[string]string{minFree: wantMinFree, watermark: "200"})
	select {
	case e := <-events.Events:
		if !strings.Contains(e, "NodeSLORefused") || !strings.Contains(e, "watermarkScaleFactor is 5000, outside [10, 1000]") {
			t.Errorf("event = %q", e)
		}
	default:
		t.Error("no Warning event for the refused NodeSLO")
	}
}

// TestParseRecord reads literal state files.
func TestParseRecord(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]string
		wantErr  string
	}{
		{name: "two files", in: `{"originals": {"proc/sys/vm/min_free_kbytes": "67584", "proc/sys/vm/watermark_scale_factor": "10"}}`,
			want: map[string]string{minFree: "67584", watermark: "10"}},
		{name: "empty", in: `{}`, want: map[string]string{}},
		{name: "unknown field", in: `{"originals": {}, "version": 2}`, wantErr: `unknown field "version"`},
		{name: "unknown file", in: `{"originals": {"proc/sys/kernel/panic": "1"}}`, wantErr: "does not manage: proc/sys/kernel/panic"},
		{name: "truncated", in: `{"originals": {"proc/sys/vm/min_free_kbytes": "675`, wantErr: "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := parseRecord(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseRecord = %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, rec.Originals); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestNewNeedsDeps(t *testing.T) {
	_, err := New(qosmanager.Deps{})
	if err == nil || err.Error() != "building the sysreconcile plugin: missing Executor, Proc, Host, StateDir" {
		t.Errorf("New = %v", err)
	}
}
