package resctrl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/qosmanagertest"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/proc"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/resctrl/resctrltest"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// rig is a fixture host (resctrltest: /proc/cpuinfo, /proc/mounts and /sys/fs/resctrl answering as the kernel
// does), a cgroup tree holding the pods' threads, the real executor writing to both, and the plugin.
type rig struct {
	t      *testing.T
	root   string
	v      cgroup.Version
	layout cgroup.Layout
	kernel *resctrltest.Kernel
	clk    *clocktesting.FakeClock
	store  *statesinformer.Store
	exec   *executor.Executor
	p      *Plugin
	logs   *qosmanagertest.Log
}

func newRig(t *testing.T, v cgroup.Version, host resctrltest.Host) *rig {
	t.Helper()
	root := t.TempDir()
	if err := host.Write(root); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	layout := cgroup.Layout{Driver: cgroup.Cgroupfs}
	cg := cgroup.NewFS(filepath.Join(root, "cgroup"), v)
	kernel := resctrltest.NewKernel(root)
	opts := executor.DefaultOptions()
	opts.Host = kernel
	exec, err := executor.New(cg, clk, prometheus.NewRegistry(), opts)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := proc.New(filepath.Join(root, "proc"))
	if err != nil {
		t.Fatal(err)
	}
	store := statesinformer.NewStore()
	p, err := New(qosmanager.Deps{States: store, Executor: exec, Cgroups: cg, Layout: layout, Proc: pr, Host: kernel.HostFS, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, root: root, v: v, layout: layout, kernel: kernel, clk: clk, store: store, exec: exec, p: p.(*Plugin), logs: &qosmanagertest.Log{}}
}

// addPod puts pod in the store and its containers' threads in its cgroup and, as the kernel does with every new
// task, in the root resctrl group.
func (r *rig) addPod(pod *corev1.Pod, threads map[string][]int) {
	r.t.Helper()
	r.store.SetPod(pod)
	r.setThreads(pod, threads)
}

func (r *rig) setThreads(pod *corev1.Pod, threads map[string][]int) {
	r.t.Helper()
	dir := r.layout.PodDir(pod)
	file := "cgroup.threads"
	base := filepath.Join(r.root, "cgroup", dir)
	if r.v == cgroup.V1 {
		file, base = "tasks", filepath.Join(r.root, "cgroup", "memory", dir)
	}
	threads[""] = nil // the pod's own cgroup, which holds no task itself
	for container, ids := range threads {
		if err := r.kernel.Spawn(ids...); err != nil {
			r.t.Fatal(err)
		}
		var b strings.Builder
		for _, id := range ids {
			fmt.Fprintf(&b, "%d\n", id)
		}
		p := filepath.Join(base, container, file)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

func (r *rig) ctx() context.Context {
	return klog.NewContext(context.Background(), r.logs.Logger())
}

func (r *rig) run(spec *slov1alpha1.NodeSLOSpec) {
	r.t.Helper()
	if err := r.p.Run(r.ctx(), spec); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) schemata(group string) string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.root, resctrltest.ResctrlDir, group, "schemata"))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

func (r *rig) tasks(group string) []int {
	r.t.Helper()
	ids, err := r.kernel.Tasks(group)
	if err != nil {
		r.t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

func (r *rig) hasGroup(group string) bool {
	_, err := os.Stat(filepath.Join(r.root, resctrltest.ResctrlDir, group))
	return err == nil
}

// writes counts the executor's audit records of resource r.
func (r *rig) writes(res executor.Resource) int {
	n := 0
	for _, rec := range r.exec.Audit() {
		if rec.Resource != res {
			continue
		}
		// A batch of task moves is one record, "N written[, M gone]".
		if k, _, ok := strings.Cut(rec.Value, " written"); ok && res == executor.ResourceResctrlTasks {
			w, err := strconv.Atoi(k)
			if err != nil {
				r.t.Fatalf("audit value %q", rec.Value)
			}
			n += w
			continue
		}
		n++
	}
	return n
}

// records counts the audit records of resource res.
func (r *rig) records(res executor.Resource) int {
	n := 0
	for _, rec := range r.exec.Audit() {
		if rec.Resource == res {
			n++
		}
	}
	return n
}

// rq is a resctrlQOS on, with a cache range and bandwidth.
func rq(start, end, mba int64) *slov1alpha1.ResctrlQOSCfg {
	return &slov1alpha1.ResctrlQOSCfg{Enable: ptr.To(true), ResctrlQOS: slov1alpha1.ResctrlQOS{
		CATRangeStartPercent: ptr.To(start), CATRangeEndPercent: ptr.To(end), MBAPercent: ptr.To(mba),
	}}
}

// spec turns resctrlQOS on for the classes given (nil leaves a class at its default: off).
func spec(lsr, ls, be *slov1alpha1.ResctrlQOSCfg) *slov1alpha1.NodeSLOSpec {
	s := &slov1alpha1.ResourceQOSStrategy{}
	if lsr != nil {
		s.LSRClass = &slov1alpha1.ResourceQOS{ResctrlQOS: lsr}
	}
	if ls != nil {
		s.LSClass = &slov1alpha1.ResourceQOS{ResctrlQOS: ls}
	}
	if be != nil {
		s.BEClass = &slov1alpha1.ResourceQOS{ResctrlQOS: be}
	}
	return (&slov1alpha1.NodeSLOSpec{ResourceQOSStrategy: s}).WithDefaults()
}

func off() *slov1alpha1.NodeSLOSpec { return (*slov1alpha1.NodeSLOSpec)(nil).WithDefaults() }

func web() *corev1.Pod {
	return tu.Pod("web").UID("web-uid").Container("c").Requests("cpu", "1").Running("containerd://web").Obj()
}

func batch() *corev1.Pod {
	return tu.Pod("batch").UID("batch-uid").Label(slov1alpha1.LabelQoSClass, "BE").Container("c").Running("containerd://batch").Obj()
}

func critical() *corev1.Pod {
	return tu.Pod("critical").UID("critical-uid").Label(slov1alpha1.LabelQoSClass, "LSE").
		Container("c").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Running("containerd://critical").Obj()
}

func systemPod() *corev1.Pod {
	return tu.Pod("agent").UID("agent-uid").Label(slov1alpha1.LabelQoSClass, "SYSTEM").Container("c").Running("containerd://agent").Obj()
}

// TestGroupsAndTasks runs the plugin on a two-socket Intel host with L3 and MB, on cgroup v1 and v2: each enabled
// class gets its group with its schemata and its pods' threads; SYSTEM pods stay in the root group; a new thread is
// moved on the next run, alone; a class turned off loses its group and its threads go back to the root group.
func TestGroupsAndTasks(t *testing.T) {
	for _, v := range []cgroup.Version{cgroup.V1, cgroup.V2} {
		t.Run(v.String(), func(t *testing.T) {
			r := newRig(t, v, resctrltest.Intel())
			r.addPod(web(), map[string][]int{"pause": {100}, "c": {101, 102}})
			r.addPod(batch(), map[string][]int{"pause": {200}, "c": {201, 202, 203}})
			r.addPod(critical(), map[string][]int{"c": {300}})
			r.addPod(systemPod(), map[string][]int{"c": {400}})

			// LSR whole cache, LS whole cache, BE the lower 30 % (4 of 11 ways) and 55 % bandwidth (the step 60 %).
			s := spec(rq(0, 100, 100), rq(0, 100, 100), rq(0, 30, 55))
			r.run(s)

			if got, want := r.schemata("gleaner-BE"), "L3:0=f;1=f\nMB:0=60;1=60\n"; got != want {
				t.Errorf("BE schemata %q, want %q", got, want)
			}
			if got, want := r.schemata("gleaner-LSR"), "L3:0=7ff;1=7ff\nMB:0=100;1=100\n"; got != want {
				t.Errorf("LSR schemata %q, want %q", got, want)
			}
			want := map[string][]int{
				"gleaner-BE": {200, 201, 202, 203}, "gleaner-LS": {100, 101, 102}, "gleaner-LSR": {300},
				"": {1, 2, 400}, // the host's own tasks and the SYSTEM pod's stay in the root group
			}
			for g, ids := range want {
				if d := cmp.Diff(ids, r.tasks(g)); d != "" {
					t.Errorf("tasks of group %q (-want +got):\n%s", g, d)
				}
			}
			moves := r.writes(executor.ResourceResctrlTasks)
			if moves != 8 {
				t.Errorf("%d task writes, want one per thread moved (8)", moves)
			}
			if n := r.records(executor.ResourceResctrlTasks); n != 3 {
				t.Errorf("%d audit records of task moves, want one per pod (3)", n)
			}

			// A new thread in the batch pod: moved on the next run, and only it.
			r.setThreads(batch(), map[string][]int{"c": {201, 202, 203, 204}})
			r.run(s)
			if d := cmp.Diff([]int{200, 201, 202, 203, 204}, r.tasks("gleaner-BE")); d != "" {
				t.Errorf("BE tasks after a new thread (-want +got):\n%s", d)
			}
			if n := r.writes(executor.ResourceResctrlTasks) - moves; n != 1 {
				t.Errorf("%d task writes for one new thread, want 1", n)
			}

			// BE turned off: its group is removed and its threads are back in the root group.
			r.run(spec(rq(0, 100, 100), rq(0, 100, 100), nil))
			if r.hasGroup("gleaner-BE") {
				t.Error("gleaner-BE still exists with BE's resctrlQOS off")
			}
			if d := cmp.Diff([]int{1, 2, 200, 201, 202, 203, 204, 400}, r.tasks("")); d != "" {
				t.Errorf("root tasks after BE turned off (-want +got):\n%s", d)
			}
			if !r.hasGroup("gleaner-LS") || !r.hasGroup("gleaner-LSR") {
				t.Error("the other classes' groups went too")
			}

			// Everything off: no group is left.
			r.run(off())
			for _, c := range Classes() {
				if r.hasGroup(Group(c)) {
					t.Errorf("%s still exists with every class off", Group(c))
				}
			}
		})
	}
}

// TestSchemataPerHost: several cache ids, CDP (both halves get the mask), L3 only (no MB line), AMD (MB left
// alone, said once).
func TestSchemataPerHost(t *testing.T) {
	cdp := resctrltest.Intel()
	cdp.CDP, cdp.MountOptions, cdp.Domains = true, []string{"cdp"}, []int{0, 1, 2, 3}

	l3Only := resctrltest.Intel()
	l3Only.Flags, l3Only.MB = []string{"rdt_a", "cat_l3"}, nil
	l3Only.L3 = &resctrltest.L3{Mask: "fffff", MinBits: 1, Closids: 16}

	amd := resctrltest.Intel()
	amd.Vendor, amd.MB = "AuthenticAMD", &resctrltest.MB{Min: 0, Gran: 1, Closids: 16}
	amd.L3 = &resctrltest.L3{Mask: "ffff", MinBits: 1, Closids: 16}

	tests := []struct {
		name     string
		host     resctrltest.Host
		want     string
		wantSaid string
	}{
		{name: "CDP on four caches", host: cdp, want: "L3CODE:0=f;1=f;2=f;3=f\nL3DATA:0=f;1=f;2=f;3=f\nMB:0=60;1=60;2=60;3=60\n"},
		{name: "L3 only, 20 ways", host: l3Only, want: "L3:0=3f;1=3f\n", wantSaid: "lacks the mba flag"},
		{name: "AMD, 16 ways", host: amd, want: "L3:0=1f;1=1f\n", wantSaid: "MB values are absolute bandwidth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, cgroup.V2, tt.host)
			s := spec(nil, nil, rq(0, 30, 55))
			r.run(s)
			r.run(s)
			if got := r.schemata("gleaner-BE"); got != tt.want {
				t.Errorf("schemata %q, want %q", got, tt.want)
			}
			if tt.wantSaid != "" {
				if n := r.logs.Count(tt.wantSaid); n != 1 {
					t.Errorf("%q logged %d times, want once: %q", tt.wantSaid, n, r.logs)
				}
			}
		})
	}
}

// TestStepsAside: on a host without resctrl mounted (this machine), and on a CPU without the flags, the plugin
// says once that it steps aside, writes nothing and fails nothing, and looks again a minute later.
func TestStepsAside(t *testing.T) {
	notMounted := resctrltest.Intel()
	notMounted.Mounted = false
	noFlags := resctrltest.Intel()
	noFlags.Flags = []string{"sse4_2"}
	for name, host := range map[string]resctrltest.Host{"not mounted": notMounted, "CPU without cat_l3 and mba": noFlags} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, cgroup.V1, host)
			r.addPod(batch(), map[string][]int{"c": {201}})
			s := spec(rq(0, 100, 100), rq(0, 100, 100), rq(0, 30, 50))
			for range 3 {
				r.run(s)
			}
			if err := r.p.Validate(s); err != nil {
				t.Errorf("Validate on a host without resctrl: %v; want only the range checks", err)
			}
			if n := r.logs.Count("steps aside"); n != 1 {
				t.Errorf("'steps aside' logged %d times, want once: %q", n, r.logs)
			}
			if a := r.exec.Audit(); len(a) != 0 {
				t.Errorf("the executor wrote %v", a)
			}
			if r.hasGroup("gleaner-BE") {
				t.Error("a group was made")
			}
			r.clk.Step(redetect)
			r.run(s)
			if n := r.logs.Count("steps aside"); n != 1 {
				t.Errorf("looking again with the same result logged again (%d)", n)
			}
		})
	}
}

// TestMountedLater: resctrl mounted after the agent started is found within a minute.
func TestMountedLater(t *testing.T) {
	host := resctrltest.Intel()
	host.Mounted = false
	r := newRig(t, cgroup.V2, host)
	s := spec(nil, nil, rq(0, 30, 50))
	r.run(s)
	host.Mounted = true
	if err := host.Write(r.root); err != nil {
		t.Fatal(err)
	}
	r.run(s)
	if r.hasGroup("gleaner-BE") {
		t.Fatal("looked again before a minute passed")
	}
	r.clk.Step(redetect)
	r.run(s)
	if !r.hasGroup("gleaner-BE") {
		t.Fatal("resctrl mounted later was not found a minute on")
	}
}

// TestExitedThread: a thread that ends between the listing and the write (ESRCH) is no error.
func TestExitedThread(t *testing.T) {
	r := newRig(t, cgroup.V2, resctrltest.Intel())
	r.addPod(batch(), map[string][]int{"c": {201, 202}})
	r.kernel.Exit(202)
	r.run(spec(nil, nil, rq(0, 30, 50)))
	if d := cmp.Diff([]int{201}, r.tasks("gleaner-BE")); d != "" {
		t.Errorf("BE tasks (-want +got):\n%s", d)
	}
}

// TestValidate: values the hardware cannot take are refused with the field and the limit named.
func TestValidate(t *testing.T) {
	// 11 ways, at least 2 per mask; MB from 10 % in steps of 10; 3 closids (root and two groups).
	host := resctrltest.Intel()
	host.L3 = &resctrltest.L3{Mask: "7ff", MinBits: 2, Closids: 3}
	tests := []struct {
		name string
		spec *slov1alpha1.NodeSLOSpec
		want []string
	}{
		{name: "good", spec: spec(nil, rq(0, 100, 100), rq(0, 30, 55))},
		{name: "off classes are not checked", spec: spec(nil, nil, &slov1alpha1.ResctrlQOSCfg{Enable: ptr.To(false), ResctrlQOS: slov1alpha1.ResctrlQOS{MBAPercent: ptr.To[int64](500)}})},
		{name: "fewer ways than min_cbm_bits", spec: spec(nil, nil, rq(0, 5, 100)),
			want: []string{"resourceQOSStrategy.beClass.resctrlQOS: the cache range 0%-5% is 1 of the cache's 11 ways; the hardware needs at least 2 (min_cbm_bits)"}},
		{name: "start not below end", spec: spec(nil, nil, rq(50, 50, 100)),
			want: []string{"resourceQOSStrategy.beClass.resctrlQOS.catRangeStartPercent (50) is not below catRangeEndPercent (50)"}},
		{name: "percents out of range", spec: spec(nil, rq(-1, 120, 0), nil),
			want: []string{"lsClass.resctrlQOS.catRangeStartPercent is -1, outside [0, 100]", "lsClass.resctrlQOS.catRangeEndPercent is 120, outside [0, 100]", "lsClass.resctrlQOS.mbaPercent is 0, outside [1, 100]"}},
		{name: "MB below min_bandwidth", spec: spec(nil, nil, rq(0, 30, 5)),
			want: []string{"beClass.resctrlQOS: memory bandwidth 5% is below the hardware's minimum of 10% (min_bandwidth)"}},
		{name: "more classes than closids", spec: spec(rq(0, 100, 100), rq(0, 100, 100), rq(0, 30, 50)),
			want: []string{"resctrlQOS is enabled for 3 classes, but the hardware has 3 closids"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, cgroup.V2, host)
			err := r.p.Validate(tt.spec)
			qosmanagertest.ExpectValidation(t, err, false, tt.want...)
		})
	}
}

// TestRefusedKeepsTheLastGoodValue runs the plugin through the QoS manager: a NodeSLO whose BE cache range is
// narrower than min_cbm_bits is refused with a Warning event, and the group keeps the schemata of the last one
// accepted.
func TestRefusedKeepsTheLastGoodValue(t *testing.T) {
	host := resctrltest.Intel()
	host.L3.MinBits = 2
	r := newRig(t, cgroup.V2, host)
	events := &tu.Events{}
	m, err := qosmanager.NewManager(qosmanager.Deps{States: r.store, Events: events}, r.clk,
		[]qosmanager.Factory{{Name: Name, Interval: DefaultInterval, Default: true, New: func(qosmanager.Deps) (qosmanager.RunPlugin, error) { return r.p, nil }}},
		[]string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	slo := func(be *slov1alpha1.ResctrlQOSCfg) *slov1alpha1.NodeSLO {
		return &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{ResourceQOSStrategy: &slov1alpha1.ResourceQOSStrategy{BEClass: &slov1alpha1.ResourceQOS{ResctrlQOS: be}}}}
	}
	r.store.SetNodeSLO(slo(rq(0, 30, 50)))
	if err := m.RunOnce(r.ctx()); err != nil {
		t.Fatal(err)
	}
	good := r.schemata("gleaner-BE")
	r.store.SetNodeSLO(slo(rq(0, 5, 50)))
	if err := m.RunOnce(r.ctx()); err != nil {
		t.Fatal(err)
	}
	if got := r.schemata("gleaner-BE"); got != good || good != "L3:0=f;1=f\nMB:0=50;1=50\n" {
		t.Errorf("schemata after a refused NodeSLO %q, want the last good %q", got, good)
	}
	if len(events.List()) != 1 || !strings.Contains(events.List()[0], "min_cbm_bits") {
		t.Errorf("events %q, want one Warning naming min_cbm_bits", events.List())
	}
}
