package cgreconcile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/qosmanagertest"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

const mi = 1 << 20

// rig is a simulated node (qosmanagertest.Node) with the plugin on it and a state directory.
type rig struct {
	*qosmanagertest.Node
	t     *testing.T
	p     *Plugin
	state string // Deps.StateDir
}

// newRig lays out the node; with memFiles the cgroups have memory.min, memory.low, memory.high and
// memory.oom.group at the kernel's defaults (cgroup v2 with the memory controller on).
func newRig(t *testing.T, v cgroup.Version, d cgroup.Driver, memFiles bool, pods ...*corev1.Pod) *rig {
	t.Helper()
	n := qosmanagertest.NewNode(t, hostsim.Config{Version: v, Driver: d}, pods...)
	if memFiles {
		for file, content := range map[string]string{"memory.min": "0\n", "memory.low": "0\n", "memory.high": "max\n", "memory.oom.group": "0\n"} {
			n.WriteEach(file, content)
		}
	}
	r := &rig{Node: n, t: t, state: t.TempDir()}
	r.restart()
	return r
}

// restart is a new agent on the node: a new executor and plugin, the same cgroups and state directory.
func (r *rig) restart() {
	r.t.Helper()
	r.NewExecutor()
	d := r.Deps(DefaultInterval)
	d.StateDir = r.state
	p, err := New(d)
	if err != nil {
		r.t.Fatal(err)
	}
	r.p = p.(*Plugin)
}

func (r *rig) run(spec *slov1alpha1.NodeSLOSpec) { r.t.Helper(); r.Run(r.p, spec) }

// mem is what a cgroup holds: min and low in MiB, high in MiB (-1 for max), oom.group.
type mem struct {
	min, low, high int64
	group          bool
}

func (r *rig) mem(dir string) mem {
	r.t.Helper()
	var m mem
	var err [4]error
	var minB, lowB, highB int64
	minB, err[0] = r.FS.MemoryMin(dir)
	lowB, err[1] = r.FS.MemoryLow(dir)
	highB, err[2] = r.FS.MemoryHigh(dir)
	m.group, err[3] = r.FS.MemoryOOMGroup(dir)
	for _, e := range err {
		if e != nil {
			r.t.Fatalf("reading the memory QoS of %s: %v", dir, e)
		}
	}
	m.min, m.low, m.high = minB/mi, lowB/mi, highB
	if highB >= 0 {
		m.high = highB / mi
	}
	return m
}

func (r *rig) expectMem(want map[string]mem) {
	r.t.Helper()
	got := map[string]mem{}
	for dir := range want {
		got[dir] = r.mem(dir)
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(mem{})); d != "" {
		r.t.Errorf("memory QoS (-want +got):\n%s", d)
	}
}

func (r *rig) podDir(pod *corev1.Pod) string { return r.Host.Layout().PodDir(pod) }

func (r *rig) containerDir(pod *corev1.Pod, id string) string {
	r.t.Helper()
	dir, err := r.Host.Layout().ContainerDir(r.podDir(pod), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return dir
}

func (r *rig) qosDir(c corev1.PodQOSClass) string { return r.Host.Layout().QoSDir(c) }

// spec is the NodeSLO spec with the defaults and edit applied to its resourceQOSStrategy.
func spec(edit func(s *slov1alpha1.ResourceQOSStrategy)) *slov1alpha1.NodeSLOSpec {
	s := slov1alpha1.DefaultResourceQOSStrategy()
	if edit != nil {
		edit(s)
	}
	return (&slov1alpha1.NodeSLOSpec{ResourceQOSStrategy: s}).WithDefaults()
}

// memOn turns memoryQOS on for cfg with the percents and oomKillGroup.
func memOn(q *slov1alpha1.ResourceQOS, minPct, lowPct, thrPct, group int64) {
	m := q.MemoryQOS
	m.Enable = ptr.To(true)
	m.MinLimitPercent, m.LowLimitPercent, m.ThrottlingPercent, m.OomKillGroup = ptr.To(minPct), ptr.To(lowPct), ptr.To(thrPct), ptr.To(group)
}

// lsAndLSR is LS at 50 / 80 / 90 % with oomKillGroup, LSR at 100 % memory.min only.
func lsAndLSR(s *slov1alpha1.ResourceQOSStrategy) {
	memOn(s.LSClass, 50, 80, 90, 1)
	memOn(s.LSRClass, 100, 0, 0, 0)
}

// The pods: a service with two containers (LS, Burstable; one without a memory limit), a Guaranteed pod (LSR),
// and a batch pod (BE, BestEffort).
func web() *corev1.Pod {
	return tu.Pod("web").UID("0000000a-0000-4000-8000-000000000001").
		Container("a").Requests("cpu", "500m", "memory", "100Mi").Limits("memory", "200Mi").Running("containerd://web-a").
		Container("b").Requests("memory", "50Mi").Running("containerd://web-b").Obj()
}

func db() *corev1.Pod {
	return tu.Pod("db").UID("0000000d-0000-4000-8000-000000000004").
		Container("c").Requests("cpu", "1", "memory", "64Mi").Limits("cpu", "1", "memory", "64Mi").Running("containerd://db").Obj()
}

func batch() *corev1.Pod {
	return tu.Pod("batch").UID("0000000b-0000-4000-8000-000000000002").Label(slov1alpha1.LabelQoSClass, "BE").
		Container("c").Running("containerd://batch").Obj()
}

var v2Trees = []cgroup.Driver{cgroup.Cgroupfs, cgroup.Systemd}

// TestV2Values: the pods' and containers' values from their requests and limits, and the QoS parents' sums,
// written parents first; turning LS off puts the kernel's defaults back, children first, and releases them.
func TestV2Values(t *testing.T) {
	for _, d := range v2Trees {
		t.Run(string(d), func(t *testing.T) {
			w, g, b := web(), db(), batch()
			r := newRig(t, cgroup.V2, d, true, w, g, b)
			r.run(spec(lsAndLSR))
			kubepods, burstable, besteffort := r.qosDir(corev1.PodQOSGuaranteed), r.qosDir(corev1.PodQOSBurstable), r.qosDir(corev1.PodQOSBestEffort)
			wa, wb, gc := r.containerDir(w, "containerd://web-a"), r.containerDir(w, "containerd://web-b"), r.containerDir(g, "containerd://db")
			r.expectMem(map[string]mem{
				// a: 100 x 50 % = 50, 100 x 80 % = 80, 200 x 90 % = 180; b: 25, 40, no limit.
				wa: {50, 80, 180, false},
				wb: {25, 40, -1, false},
				// The pod: 75, 120; one container has no limit, so no memory.high; oomKillGroup on the pod.
				r.podDir(w): {75, 120, -1, true},
				// LSR: 64 x 100 %.
				gc: {64, 0, -1, false}, r.podDir(g): {64, 0, -1, false},
				r.podDir(b): {0, 0, -1, false},
				// Parents: burstable holds web, kubepods everything.
				burstable: {75, 120, -1, false}, besteffort: {0, 0, -1, false}, kubepods: {139, 120, -1, false},
			})
			// Parents first when raising.
			order := map[string]int{}
			for i, rec := range r.Exec.Audit() {
				if rec.Resource == executor.ResourceMemoryMin {
					if _, seen := order[rec.Dir]; !seen {
						order[rec.Dir] = i
					}
				}
			}
			if !ascending(order, kubepods, burstable, r.podDir(w), wa) {
				t.Errorf("memory.min not written parents first: %v", order)
			}

			// LS off: web back to the defaults, burstable to 0, kubepods to LSR's 64; children first.
			n := len(r.Exec.Audit())
			r.run(spec(func(s *slov1alpha1.ResourceQOSStrategy) { memOn(s.LSRClass, 100, 0, 0, 0) }))
			r.expectMem(map[string]mem{
				wa: {0, 0, -1, false}, wb: {0, 0, -1, false}, r.podDir(w): {0, 0, -1, false},
				burstable: {0, 0, -1, false}, kubepods: {64, 0, -1, false}, gc: {64, 0, -1, false},
			})
			order = map[string]int{}
			for i, rec := range r.Exec.Audit()[n:] {
				if rec.Resource == executor.ResourceMemoryLow {
					order[rec.Dir] = i
				}
			}
			if !ascending(order, wa, r.podDir(w), burstable, kubepods) {
				t.Errorf("memory.low not written children first when lowering: %v", order)
			}
			// Released: another writer's value is not overwritten at the resync; LSR's is still held.
			if err := r.FS.SetMemoryMin(wa, 10*mi); err != nil {
				t.Fatal(err)
			}
			if err := r.FS.SetMemoryMin(gc, 1*mi); err != nil {
				t.Fatal(err)
			}
			if err := r.Exec.Resync(r.Ctx); err != nil {
				t.Fatal(err)
			}
			if got := r.mem(wa).min; got != 10 {
				t.Errorf("the executor still asserts memory.min of %s after LS was turned off: %d MiB", wa, got)
			}
			if got := r.mem(gc).min; got != 64 {
				t.Errorf("the executor no longer asserts LSR's memory.min of %s: %d MiB", gc, got)
			}
		})
	}
}

// ascending reports whether the dirs were written in this order (each is in order).
func ascending(order map[string]int, dirs ...string) bool {
	for i := 1; i < len(dirs); i++ {
		a, okA := order[dirs[i-1]]
		b, okB := order[dirs[i]]
		if !okA || !okB || a >= b {
			return false
		}
	}
	return true
}

// TestPercentToZero: a percent set to 0 gives that file back to the kernel, the others stay.
func TestPercentToZero(t *testing.T) {
	for _, d := range v2Trees {
		t.Run(string(d), func(t *testing.T) {
			w := web()
			r := newRig(t, cgroup.V2, d, true, w)
			r.run(spec(lsAndLSR))
			r.run(spec(func(s *slov1alpha1.ResourceQOSStrategy) { memOn(s.LSClass, 50, 0, 0, 0) }))
			wa := r.containerDir(w, "containerd://web-a")
			r.expectMem(map[string]mem{
				wa: {50, 0, -1, false}, r.podDir(w): {75, 0, -1, false}, r.qosDir(corev1.PodQOSBurstable): {75, 0, -1, false},
			})
		})
	}
}

// TestV1StepsAside: upstream cgroup v1 has none of the files: said once when a class turns memory QoS on, nothing
// written, no error.
func TestV1StepsAside(t *testing.T) {
	for _, d := range []cgroup.Driver{cgroup.Cgroupfs, cgroup.Systemd} {
		t.Run(string(d), func(t *testing.T) {
			r := newRig(t, cgroup.V1, d, false, web(), batch())
			r.run(spec(nil))
			if n := r.Log.Count("cgroup v1 has no memory.min"); n != 0 {
				t.Errorf("said the files are missing while no class asks for them")
			}
			for range 3 {
				r.run(spec(lsAndLSR))
			}
			if n := r.Log.Count("cgroup v1 has no memory.min"); n != 1 {
				t.Errorf("said %d times that cgroup v1 lacks the files, want once; log:\n%s", n, r.Log)
			}
			if a := r.Exec.Audit(); len(a) != 0 {
				t.Errorf("the plugin wrote on cgroup v1: %+v", a)
			}
		})
	}
}

// TestV2WithoutFiles: a v2 tree whose kubepods cgroup lacks memory.min (the memory controller is not enabled
// there): said once, nothing written.
func TestV2WithoutFiles(t *testing.T) {
	r := newRig(t, cgroup.V2, cgroup.Systemd, false, web())
	for range 3 {
		r.run(spec(lsAndLSR))
	}
	if n := r.Log.Count("has no memory.min"); n != 1 {
		t.Errorf("said %d times that memory.min is missing, want once", n)
	}
	if a := r.Exec.Audit(); len(a) != 0 {
		t.Errorf("the plugin wrote without the files: %+v", a)
	}
}

// TestAnolisFieldsSaidOnce: the fields that need Anolis OS are said once not to be applied.
func TestAnolisFieldsSaidOnce(t *testing.T) {
	r := newRig(t, cgroup.V2, cgroup.Cgroupfs, true, web())
	r.run(spec(nil))
	if n := r.Log.Count("need Anolis OS"); n != 0 {
		t.Errorf("said the Anolis OS fields are not applied while memory QoS is off")
	}
	for range 3 {
		r.run(spec(lsAndLSR))
	}
	if n := r.Log.Count("wmarkRatio, wmarkScalePermill, wmarkMinAdj, priorityEnable and priority need Anolis OS"); n != 1 {
		t.Errorf("said %d times, want once", n)
	}
}

// TestLeftovers: what an earlier agent wrote and recorded is given back at the first run when the class was turned
// off while the agent was down (and then nothing more is written); values it did not write are left alone.
func TestLeftovers(t *testing.T) {
	w, g := web(), db()
	r := newRig(t, cgroup.V2, cgroup.Cgroupfs, true, w, g)
	wa, gc := r.containerDir(w, "containerd://web-a"), r.containerDir(g, "containerd://db")
	burstable := r.qosDir(corev1.PodQOSBurstable)
	r.run(spec(func(s *slov1alpha1.ResourceQOSStrategy) { memOn(s.LSClass, 50, 80, 90, 1) }))
	if err := r.FS.SetMemoryMin(gc, 64*mi); err != nil { // someone else's, on a pod of a class that is off
		t.Fatal(err)
	}
	r.restart()
	r.run(spec(nil))
	r.expectMem(map[string]mem{burstable: {0, 0, -1, false}, r.podDir(w): {0, 0, -1, false}, wa: {0, 0, -1, false}, gc: {64, 0, -1, false}})
	n := len(r.Exec.Audit())
	r.run(spec(nil))
	if a := r.Exec.Audit()[n:]; len(a) != 0 {
		t.Errorf("wrote again with nothing to do: %+v", a)
	}
	rec, err := loadRecord(r.state, r.Host.Layout().Kubepods())
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Held) != 0 {
		t.Errorf("the state file still holds %v after everything was given back", rec.Held)
	}
}

// TestKubeletMemoryQoSLeftAlone: the kubelet's MemoryQoS feature gate writes memory.min and memory.high on the QoS
// parents, pods and containers. With every class off (the default) the plugin touches none of it, at the first run
// or later; with a class on it writes only that class's pods (and the parents' sums).
func TestKubeletMemoryQoSLeftAlone(t *testing.T) {
	for _, d := range v2Trees {
		t.Run(string(d), func(t *testing.T) {
			w, g := web(), db()
			r := newRig(t, cgroup.V2, d, true, w, g)
			wa, wb, gc := r.containerDir(w, "containerd://web-a"), r.containerDir(w, "containerd://web-b"), r.containerDir(g, "containerd://db")
			kubepods, burstable := r.qosDir(corev1.PodQOSGuaranteed), r.qosDir(corev1.PodQOSBurstable)
			kubelet := map[string]mem{ // memory.min = requests, memory.high on containers with a limit
				wa: {100, 0, 190, false}, wb: {50, 0, -1, false}, r.podDir(w): {150, 0, -1, false},
				gc: {64, 0, -1, false}, r.podDir(g): {64, 0, -1, false},
				burstable: {150, 0, -1, false}, kubepods: {214, 0, -1, false},
			}
			for dir, m := range kubelet {
				if err := r.FS.SetMemoryMin(dir, m.min*mi); err != nil {
					t.Fatal(err)
				}
				if m.high >= 0 {
					if err := r.FS.SetMemoryHigh(dir, m.high*mi); err != nil {
						t.Fatal(err)
					}
				}
			}
			for range 2 {
				r.run(spec(nil))
			}
			r.expectMem(kubelet)
			if a := r.Exec.Audit(); len(a) != 0 {
				t.Errorf("the plugin wrote with every class off: %+v", a)
			}

			// LSR on: db's cgroups and the parents' sums are the plugin's; web (LS, off) keeps the kubelet's values.
			r.run(spec(func(s *slov1alpha1.ResourceQOSStrategy) { memOn(s.LSRClass, 50, 0, 0, 0) }))
			r.run(spec(nil))
			r.expectMem(map[string]mem{wa: kubelet[wa], wb: kubelet[wb], r.podDir(w): kubelet[r.podDir(w)]})
		})
	}
}

// TestBadStateFile: a state file that cannot be read, or that names cgroups or files the plugin does not write,
// stops the plugin before it writes anything, naming the file; the file is kept as it is.
func TestBadStateFile(t *testing.T) {
	for name, content := range map[string]string{
		"not JSON":         `{"held": {`,
		"outside kubepods": `{"held": {"system.slice": ["memory.min"]}}`,
		"parent path":      `{"held": {"kubepods/../system.slice": ["memory.min"]}}`,
		"unknown file":     `{"held": {"kubepods/burstable": ["memory.max"]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			w := web()
			r := newRig(t, cgroup.V2, cgroup.Cgroupfs, true, w)
			path := filepath.Join(r.state, StateFile)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, s := range []*slov1alpha1.NodeSLOSpec{spec(lsAndLSR), spec(nil)} {
				err := r.p.Run(r.Ctx, s)
				if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "moving it away") {
					t.Errorf("Run: want an error naming %s, got %v", path, err)
				}
			}
			if a := r.Exec.Audit(); len(a) != 0 {
				t.Errorf("written with an unreadable state file: %+v", a)
			}
			if b, _ := os.ReadFile(path); string(b) != content {
				t.Errorf("the state file changed: %q", b)
			}
		})
	}
}

// TestUnwritableStateDir: a value that cannot be recorded is not written. The state directory is one that cannot
// be created even by root (procfs takes no mkdir), and it has no state file to read.
func TestUnwritableStateDir(t *testing.T) {
	r := newRig(t, cgroup.V2, cgroup.Cgroupfs, true, web())
	r.state = "/proc/gleaner-cgreconcile-test"
	r.restart()
	err := r.p.Run(r.Ctx, spec(lsAndLSR))
	if err == nil || !strings.Contains(err.Error(), "leaving the memory QoS as it is") {
		t.Errorf("Run: want an error saying nothing is written, got %v", err)
	}
	if a := r.Exec.Audit(); len(a) != 0 {
		t.Errorf("written without a record: %+v", a)
	}
}

// TestValidate: out-of-range values of a class that is on are refused naming each field; a class that is off is
// accepted whatever it holds.
func TestValidate(t *testing.T) {
	p := &Plugin{}
	tests := []struct {
		name string
		edit func(s *slov1alpha1.ResourceQOSStrategy)
		want string
	}{
		{"defaults", nil, ""},
		{"percents", func(s *slov1alpha1.ResourceQOSStrategy) {
			memOn(s.LSClass, 150, -1, 101, 0)
		}, "resourceQOSStrategy.lsClass.memoryQOS.minLimitPercent is 150, outside [0, 100]; " +
			"resourceQOSStrategy.lsClass.memoryQOS.lowLimitPercent is -1, outside [0, 100]; " +
			"resourceQOSStrategy.lsClass.memoryQOS.throttlingPercent is 101, outside [0, 100]"},
		{"oomKillGroup and priority", func(s *slov1alpha1.ResourceQOSStrategy) {
			memOn(s.BEClass, 0, 0, 0, 2)
			s.BEClass.MemoryQOS.Priority = ptr.To[int64](13)
			s.BEClass.MemoryQOS.WmarkRatio = ptr.To[int64](120)
		}, "resourceQOSStrategy.beClass.memoryQOS.wmarkRatio is 120, outside [0, 100]; " +
			"resourceQOSStrategy.beClass.memoryQOS.priority is 13, outside [0, 12]; " +
			"resourceQOSStrategy.beClass.memoryQOS.oomKillGroup is 2, outside [0, 1]"},
		{"off class", func(s *slov1alpha1.ResourceQOSStrategy) { s.LSClass.MemoryQOS.MinLimitPercent = ptr.To[int64](500) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Validate(spec(tt.edit))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Validate =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestBadNodeSLOKeepsLastGood runs the plugin under the QoS manager: an out-of-range percent is refused and the
// last good values stay.
func TestBadNodeSLOKeepsLastGood(t *testing.T) {
	w := web()
	r := newRig(t, cgroup.V2, cgroup.Cgroupfs, true, w)
	clk := clocktesting.NewFakeClock(time.Now())
	d := qosmanager.Deps{States: r.Store, Executor: r.Exec, Cgroups: r.FS, Layout: r.Host.Layout(), Clock: clk}
	m, err := qosmanager.NewManager(d, clk, []qosmanager.Factory{{Name: Name, Interval: DefaultInterval, Default: true,
		New: func(qosmanager.Deps) (qosmanager.RunPlugin, error) { return r.p, nil }}}, []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Store.SetNodeSLO(&slov1alpha1.NodeSLO{Spec: *spec(lsAndLSR)})
	if err := m.RunOnce(r.Ctx); err != nil {
		t.Fatal(err)
	}
	r.Store.SetNodeSLO(&slov1alpha1.NodeSLO{Spec: *spec(func(s *slov1alpha1.ResourceQOSStrategy) { memOn(s.LSClass, 50, 80, 900, 1) })})
	if err := m.RunOnce(r.Ctx); err != nil {
		t.Fatal(err)
	}
	r.expectMem(map[string]mem{r.podDir(w): {75, 120, -1, true}})
	if n := r.Log.Count("throttlingPercent is 900, outside [0, 100]"); n != 1 {
		t.Errorf("the refusal was logged %d times, want once", n)
	}
}
