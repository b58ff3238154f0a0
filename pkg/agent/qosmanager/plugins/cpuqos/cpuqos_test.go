package cpuqos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/qosmanagertest"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// rig is a simulated node (qosmanagertest.Node) with the plugin on it.
type rig struct {
	*qosmanagertest.Node
	t *testing.T
	p *Plugin
}

// newRig lays out the node; with idleFile the kernel has cpu.idle (5.15+) in every cgroup, holding 0.
func newRig(t *testing.T, l qosmanagertest.Layout, idleFile bool, pods ...*corev1.Pod) *rig {
	t.Helper()
	n := qosmanagertest.NewNode(t, hostsim.Config{Version: l.Version, Driver: l.Driver}, pods...)
	if idleFile {
		file := "cpu.idle"
		if l.Version == cgroup.V1 {
			file = "cpu/cpu.idle"
		}
		n.WriteEach(file, "0\n")
	}
	p, err := New(n.Deps(DefaultInterval))
	if err != nil {
		t.Fatal(err)
	}
	return &rig{Node: n, t: t, p: p.(*Plugin)}
}

func (r *rig) run(spec *slov1alpha1.NodeSLOSpec) { r.t.Helper(); r.Run(r.p, spec) }

// idle is cpu.idle of dir.
func (r *rig) idle(dir string) bool {
	r.t.Helper()
	on, err := r.FS.CPUIdle(dir)
	if err != nil {
		r.t.Fatal(err)
	}
	return on
}

func (r *rig) setIdle(dir string, on bool) {
	r.t.Helper()
	if err := r.FS.SetCPUIdle(dir, on); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) podDir(pod *corev1.Pod) string { return r.Host.Layout().PodDir(pod) }

func (r *rig) beDir() string { return r.Host.Layout().QoSDir(corev1.PodQOSBestEffort) }

// expectIdle checks cpu.idle of each cgroup.
func (r *rig) expectIdle(want map[string]bool) {
	r.t.Helper()
	for dir, w := range want {
		if got := r.idle(dir); got != w {
			r.t.Errorf("cpu.idle of %s is %v, want %v", dir, got, w)
		}
	}
}

// spec is the NodeSLO spec with the defaults and edit applied to its resourceQOSStrategy.
func spec(edit func(s *slov1alpha1.ResourceQOSStrategy)) *slov1alpha1.NodeSLOSpec {
	s := slov1alpha1.DefaultResourceQOSStrategy()
	if edit != nil {
		edit(s)
	}
	return (&slov1alpha1.NodeSLOSpec{ResourceQOSStrategy: s}).WithDefaults()
}

func beOff(s *slov1alpha1.ResourceQOSStrategy) { s.BEClass.CPUQOS.Enable = ptr.To(false) }

// The pods: a service (Burstable, LS), a batch pod (BestEffort, BE), and a BE-labelled pod with requests, which
// the kubelet puts in the burstable QoS cgroup.
func web() *corev1.Pod {
	return tu.Pod("web").UID("0000000a-0000-4000-8000-000000000001").Container("c").Requests("cpu", "1").Running("containerd://web").Obj()
}

func batch() *corev1.Pod {
	return tu.Pod("batch").UID("0000000b-0000-4000-8000-000000000002").Label(slov1alpha1.LabelQoSClass, "BE").
		Container("c").Running("containerd://batch").Obj()
}

func beOutside() *corev1.Pod {
	return tu.Pod("be-outside").UID("0000000c-0000-4000-8000-000000000003").Label(slov1alpha1.LabelQoSClass, "BE").
		Container("c").Requests("cpu", "500m").Running("containerd://outside").Obj()
}

// TestDefaultIdlesBestEffort: by default class BE runs idle: the besteffort QoS cgroup and the BE pod outside it
// get cpu.idle 1, nothing else does; turning BE's cpuQOS off writes 0 back and the executor stops asserting it.
func TestDefaultIdlesBestEffort(t *testing.T) {
	qosmanagertest.ForEachLayout(t, func(t *testing.T, l qosmanagertest.Layout) {
		w, b, o := web(), batch(), beOutside()
		r := newRig(t, l, true, w, b, o)
		r.run(spec(nil))
		r.expectIdle(map[string]bool{r.beDir(): true, r.podDir(o): true, r.podDir(b): false, r.podDir(w): false,
			r.Host.Layout().QoSDir(corev1.PodQOSBurstable): false, r.Host.Layout().Kubepods(): false})

		// Held: a change behind the executor's back is undone at the resync.
		r.setIdle(r.beDir(), false)
		if err := r.Exec.Resync(r.Ctx); err != nil {
			t.Fatal(err)
		}
		r.expectIdle(map[string]bool{r.beDir(): true})

		// systemd (v2) resets cpu.idle when it applies the slice's settings: the next run puts it back, without
		// waiting for the executor's resync.
		r.setIdle(r.beDir(), false)
		r.run(spec(nil))
		r.expectIdle(map[string]bool{r.beDir(): true})

		// Leaving idle the kernel resets the weight to 1024 (as here); the kubelet's values are written back.
		for _, dir := range []string{r.beDir(), r.podDir(o)} {
			if err := r.FS.SetCPUShares(dir, 1024); err != nil {
				t.Fatal(err)
			}
		}
		r.run(spec(beOff))
		r.expectIdle(map[string]bool{r.beDir(): false, r.podDir(o): false})
		for dir, want := range map[string]uint64{r.beDir(): cgroup.MinShares, r.podDir(o): cgroup.MilliCPUToShares(500)} {
			got, err := r.FS.CPUShares(dir)
			if l.Version == cgroup.V2 {
				want = cgroup.WeightToShares(cgroup.SharesToWeight(want))
			}
			if err != nil || got != want {
				t.Errorf("cpu.shares of %s after cpu.idle 0 = %d (%v), want the kubelet's %d", dir, got, err, want)
			}
		}
		if n := r.p.hold.Len(); n != 0 {
			t.Errorf("the plugin still holds %d values after BE's cpuQOS was turned off", n)
		}
		// Released: the executor no longer writes 0 over another writer's value.
		r.setIdle(r.beDir(), true)
		if err := r.Exec.Resync(r.Ctx); err != nil {
			t.Fatal(err)
		}
		r.expectIdle(map[string]bool{r.beDir(): true})
	})
}

// TestHostApplications: a host application of class BE runs idle like a BE pod, one of class LS does not; moving
// the BE one to LS writes 0 back (the kernel's weight of 1024 stays: its weight is not the kubelet's to restore).
func TestHostApplications(t *testing.T) {
	qosmanagertest.ForEachLayout(t, func(t *testing.T, l qosmanagertest.Layout) {
		r := newRig(t, l, false, web())
		apps := []slov1alpha1.HostApplicationSpec{
			// Its own cgroup path: without one the class decides the parent directory, and a new class is a new cgroup.
			{Name: "log-shipper", QoS: slov1alpha1.QoSBE, CgroupPath: &slov1alpha1.CgroupPath{ParentDir: "daemons"}},
			{Name: "nginx", QoS: slov1alpha1.QoSLS},
			{Name: "sidecar", QoS: slov1alpha1.QoSBE, CgroupPath: &slov1alpha1.CgroupPath{Base: slov1alpha1.CgroupBaseKubepods, ParentDir: "host", RelativePath: "sidecar"}},
		}
		dirs := map[string]string{}
		for i := range apps {
			base, parent, rel := apps[i].CgroupLocation()
			dirs[apps[i].Name] = r.Host.Layout().HostDir(cgroup.HostBase(base), parent, rel)
			if err := r.Host.AddHostApp(apps[i].Name, dirs[apps[i].Name], hostsim.Usage{}); err != nil {
				t.Fatal(err)
			}
		}
		file := "cpu.idle"
		if l.Version == cgroup.V1 {
			file = "cpu/cpu.idle"
		}
		r.WriteEach(file, "0\n")
		withApps := func(edit func(s *slov1alpha1.ResourceQOSStrategy)) *slov1alpha1.NodeSLOSpec {
			s := spec(edit)
			s.HostApplications = apps
			return s
		}
		r.run(withApps(nil))
		r.expectIdle(map[string]bool{dirs["log-shipper"]: true, dirs["sidecar"]: true, dirs["nginx"]: false, r.beDir(): true})

		apps[0].QoS = slov1alpha1.QoSLS
		r.run(withApps(nil))
		r.expectIdle(map[string]bool{dirs["log-shipper"]: false, dirs["sidecar"]: true})

		// BE's cpuQOS off: every BE application leaves idle with the besteffort cgroup.
		r.run(withApps(beOff))
		r.expectIdle(map[string]bool{dirs["sidecar"]: false, r.beDir(): false})
	})
}

// TestPodAnnotation: a service's own CPU QoS annotation (Koordinator's here) makes it idle although its class is
// not; a BE pod cannot leave its class's idle, and a malformed annotation is ignored: each said once with a Warning
// event, and the class decides.
func TestPodAnnotation(t *testing.T) {
	qosmanagertest.ForEachLayout(t, func(t *testing.T, l qosmanagertest.Layout) {
		yields := tu.Pod("yields").UID("0000000d-0000-4000-8000-000000000004").Annotation(slov1alpha1.AnnotationCPUQOSAlias, `{"enable":true,"groupIdentity":-1}`).
			Container("c").Requests("cpu", "1").Running("containerd://yields").Obj()
		stays := beOutside()
		stays.Annotations = map[string]string{slov1alpha1.AnnotationCPUQOS: `{"enable":false}`}
		bad := tu.Pod("bad").UID("0000000e-0000-4000-8000-000000000005").Annotation(slov1alpha1.AnnotationCPUQOS, `{"groupIdentity":-2}`).
			Container("c").Requests("cpu", "1").Running("containerd://bad").Obj()
		w := web()
		r := newRig(t, l, true, w, yields, stays, bad)
		for range 2 {
			r.run(spec(nil))
		}
		r.expectIdle(map[string]bool{r.podDir(yields): true, r.podDir(stays): true, r.podDir(bad): false, r.podDir(w): false})
		close(r.Events.Events)
		var events []string
		for e := range r.Events.Events {
			events = append(events, e)
		}
		if len(events) != 2 || !strings.Contains(strings.Join(events, "\n"), "would take the pod out of SCHED_IDLE") ||
			!strings.Contains(strings.Join(events, "\n"), "groupIdentity -2 is outside [-1, 2]") {
			t.Errorf("events %q, want one Warning for each of the two pods", events)
		}
	})
}

// TestPodIdle: Koordinator's cpuQOS values are read as Koordinator reads them (fields Gleaner lacks left out and
// named, schedIdle 1 idle as groupIdentity -1 is, nothing asked without "enable": true); Gleaner's own key stays
// strict; a value that does not parse, or would take idle from the class, is an error and the class decides.
func TestPodIdle(t *testing.T) {
	koord, own := slov1alpha1.AnnotationCPUQOSAlias, slov1alpha1.AnnotationCPUQOS
	tests := []struct {
		name       string
		key, value string
		classIdle  bool
		want       bool
		wantPartly []string // what partly must name; nil: partly is ""
		wantErr    string
	}{
		{"no annotation", "", "", false, false, nil, ""},
		{"Koordinator's groupIdentity and schedIdle", koord, `{"enable":true,"groupIdentity":-1,"schedIdle":1}`, false, true, nil, ""},
		{"schedIdle alone", koord, `{"enable":true,"schedIdle":1}`, false, true, nil, ""},
		{"schedIdle 0 asks for nothing", koord, `{"enable":true,"schedIdle":0}`, false, false, nil, ""},
		{"Gleaner's key reads schedIdle too", own, `{"enable":true,"schedIdle":1}`, false, true, nil, ""},
		{"without enable, as Koordinator: not idle, said", koord, `{"groupIdentity":-1,"schedIdle":1}`, false, false,
			[]string{`without "enable": true, groupIdentity -1 and schedIdle 1 does not make the pod idle`}, ""},
		{"Koordinator's fields Gleaner lacks: left out, named", koord, `{"enable":true,"groupIdentity":-1,"coreExpeller":true,"future":{"a":1}}`, false, true,
			[]string{"annotation koordinator.sh/cpuQOS: Gleaner does not read coreExpeller, future, ignored"}, ""},
		{"field names ignore case, as encoding/json's", koord, `{"Enable":true,"GroupIdentity":-1}`, false, true, nil, ""},
		{"an idle class keeps a pod that asks for idle", koord, `{"enable":true,"schedIdle":1}`, true, true, nil, ""},
		{"Gleaner's key is strict", own, `{"enable":true,"groupIdentity":-1,"coreExpeller":true}`, false, false, nil, `unknown field "coreExpeller"`},
		{"not JSON", koord, `groupIdentity=-1`, false, false, nil, "is not a CPU QoS configuration"},
		{"not JSON, an idle class", koord, `{"enable":`, true, true, nil, "is not a CPU QoS configuration"},
		{"more after the value", koord, `{"enable":true,"schedIdle":1} {}`, false, false, nil, "more follows the JSON value"},
		{"a field of the wrong type", koord, `{"enable":true,"schedIdle":"1"}`, false, false, nil, "is not a CPU QoS configuration"},
		{"schedIdle out of range", koord, `{"enable":true,"schedIdle":2}`, false, false, nil, "schedIdle 2 is not 0 or 1"},
		{"groupIdentity out of range", koord, `{"enable":true,"groupIdentity":3}`, false, false, nil, "groupIdentity 3 is outside [-1, 2]"},
		{"would leave the class's idle", koord, `{"schedIdle":1}`, true, true, nil, "would take the pod out of SCHED_IDLE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tu.Pod("p")
			if tt.key != "" {
				b = b.Annotation(tt.key, tt.value)
			}
			got, _, partly, err := PodIdle(b.Obj(), tt.classIdle)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("idle %v, want %v", got, tt.want)
			}
			if (partly == "") != (tt.wantPartly == nil) {
				t.Errorf("left out %q, want it to name %q", partly, tt.wantPartly)
			}
			for _, w := range tt.wantPartly {
				if !strings.Contains(partly, w) {
					t.Errorf("left out %q, want it to name %q", partly, w)
				}
			}
		})
	}
}

// TestKoordinatorAnnotation: on the node, a service with Koordinator's cpuQOS (schedIdle, and a field Gleaner does
// not read) runs idle, said once with an AnnotationFieldsIgnored Warning naming the field; one whose value is not
// JSON keeps its class's (not idle), said once with InvalidCPUQOSAnnotation; a value that changes is said again.
func TestKoordinatorAnnotation(t *testing.T) {
	qosmanagertest.ForEachLayout(t, func(t *testing.T, l qosmanagertest.Layout) {
		koord := tu.Pod("koord").UID("0000000f-0000-4000-8000-000000000006").
			Annotation(slov1alpha1.AnnotationCPUQOSAlias, `{"enable":true,"groupIdentity":-1,"schedIdle":1,"coreExpeller":false}`).
			Container("c").Requests("cpu", "1").Running("containerd://koord").Obj()
		broken := tu.Pod("broken").UID("00000010-0000-4000-8000-000000000007").
			Annotation(slov1alpha1.AnnotationCPUQOSAlias, `{"enable":true,"schedIdle":1`).
			Container("c").Requests("cpu", "1").Running("containerd://broken").Obj()
		r := newRig(t, l, true, koord, broken)
		for range 3 {
			r.run(spec(nil))
		}
		r.expectIdle(map[string]bool{r.podDir(koord): true, r.podDir(broken): false})
		events := drain(r.Events.Events)
		if len(events) != 2 ||
			!strings.Contains(events[0]+events[1], qosmanager.ReasonAnnotationFieldsIgnored+" annotation koordinator.sh/cpuQOS: Gleaner does not read coreExpeller") ||
			!strings.Contains(events[0]+events[1], ReasonBadAnnotation+" annotation koordinator.sh/cpuQOS=") {
			t.Errorf("events %q, want one of each kind", events)
		}
		// A new value is said again; the same one again is not.
		koord = koord.DeepCopy()
		koord.Annotations[slov1alpha1.AnnotationCPUQOSAlias] = `{"enable":true,"schedIdle":1,"coreExpeller":true}`
		r.Store.SetPod(koord)
		for range 2 {
			r.run(spec(nil))
		}
		if events := drain(r.Events.Events); len(events) != 1 || !strings.Contains(events[0], "coreExpeller") {
			t.Errorf("events after the change %q, want one naming coreExpeller", events)
		}
		r.expectIdle(map[string]bool{r.podDir(koord): true})
	})
}

// drain is the events recorded so far.
func drain(ch chan string) []string {
	var out []string
	for {
		select {
		case e := <-ch:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestStandsInForTheKubelet: while the besteffort QoS cgroup is idle the plugin keeps the burstable QoS cgroup's
// weight (cpu.shares, or cpu.weight by the kubelet's conversion) at the kubelet's value (the kubelet's own update stops at the refused besteffort write), follows a new
// Burstable pod, and lets the value go, without writing, once BE's cpuQOS is off.
func TestStandsInForTheKubelet(t *testing.T) {
	qosmanagertest.ForEachLayout(t, func(t *testing.T, l qosmanagertest.Layout) {
		w, b, o := web(), batch(), beOutside()
		r := newRig(t, l, true, w, b, o)
		burstable := r.Host.Layout().QoSDir(corev1.PodQOSBurstable)
		shares := func() uint64 {
			t.Helper()
			n, err := r.FS.CPUShares(burstable)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		// kubelet is the value the kubelet writes for Burstable requests of milli, as it reads back: on v2 a
		// cpu.weight through the kubelet's linear conversion.
		kubelet := func(milli int64) uint64 {
			s := cgroup.MilliCPUToShares(milli)
			if l.Version == cgroup.V2 {
				s = cgroup.WeightToShares(cgroup.SharesToWeight(s))
			}
			return s
		}
		r.run(spec(nil))
		// web asks for 1 CPU, be-outside for 500m: the kubelet's 1536 shares.
		if got, want := shares(), kubelet(1500); got != want {
			t.Errorf("cpu.shares of %s = %d, want the kubelet's %d", burstable, got, want)
		}
		more := tu.Pod("api").UID("0000000d-0000-4000-8000-000000000004").Container("c").Requests("cpu", "250m").Running("containerd://api").Obj()
		if err := r.Host.AddPod(more, hostsim.Usage{}); err != nil {
			t.Fatal(err)
		}
		r.Store.SetPod(more)
		r.run(spec(nil))
		if got, want := shares(), kubelet(1750); got != want {
			t.Errorf("after a new Burstable pod cpu.shares of %s = %d, want %d", burstable, got, want)
		}
		// Not held: the kubelet's own value is not overwritten at the resync, only corrected at the next run.
		if err := r.FS.SetCPUShares(burstable, 4000); err != nil {
			t.Fatal(err)
		}
		if err := r.Exec.Resync(r.Ctx); err != nil {
			t.Fatal(err)
		}
		if got := shares(); got != 4000 && got != cgroup.WeightToShares(cgroup.SharesToWeight(4000)) {
			t.Errorf("the executor holds the stand-in value: cpu.shares %d after a resync, want 4000", got)
		}
		r.run(spec(nil))
		if got, want := shares(), kubelet(1750); got != want {
			t.Errorf("a wrong weight is not corrected at the next run: %d, want %d", got, want)
		}

		r.run(spec(beOff))
		if err := r.FS.SetCPUShares(burstable, cgroup.MilliCPUToShares(4000)); err != nil { // the kubelet, whose updates go through again
			t.Fatal(err)
		}
		if err := r.Exec.Resync(r.Ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := shares(), kubelet(4000); got != want {
			t.Errorf("cpu.shares of %s = %d after BE's cpuQOS was turned off: the plugin still asserts its value", burstable, got)
		}
	})
}

// TestHookOwnedPodsStayOutOfIdle: a BE pod asking for batch-cpu with a native memory request is Burstable to the
// kubelet, and the runtime hook writes its pod cgroup's cpu.shares, which the kernel would refuse while idle: the
// plugin does not make it idle on its own.
func TestHookOwnedPodsStayOutOfIdle(t *testing.T) {
	qosmanagertest.ForEachLayout(t, func(t *testing.T, l qosmanagertest.Layout) {
		hooked := tu.Pod("batch-burstable").UID("0000000e-0000-4000-8000-000000000005").Label(slov1alpha1.LabelQoSClass, "BE").
			PriorityClass("gleaner-batch").Container("c").Requests(string(slov1alpha1.BatchCPU), "500", "memory", "64Mi").
			Running("containerd://hooked").Obj()
		o := beOutside()
		r := newRig(t, l, true, hooked, o)
		r.run(spec(nil))
		r.expectIdle(map[string]bool{r.beDir(): true, r.podDir(o): true, r.podDir(hooked): false})
	})
}

// TestPerClassSwitch: groupIdentity -1 idles any class's pods; 0..2 need Anolis OS, leave cpu.idle 0 and are said
// once; a class that is off is left alone.
func TestPerClassSwitch(t *testing.T) {
	qosmanagertest.ForEachLayout(t, func(t *testing.T, l qosmanagertest.Layout) {
		w, b := web(), batch()
		r := newRig(t, l, true, w, b)
		lsIdle := func(s *slov1alpha1.ResourceQOSStrategy) {
			beOff(s)
			s.LSClass.CPUQOS.Enable, s.LSClass.CPUQOS.GroupIdentity = ptr.To(true), ptr.To[int64](-1)
		}
		r.run(spec(lsIdle))
		r.expectIdle(map[string]bool{r.podDir(w): true, r.beDir(): false, r.podDir(b): false})

		lsAnolis := func(s *slov1alpha1.ResourceQOSStrategy) {
			s.LSClass.CPUQOS.Enable, s.LSClass.CPUQOS.GroupIdentity = ptr.To(true), ptr.To[int64](2)
		}
		r.run(spec(lsAnolis))
		r.run(spec(lsAnolis))
		r.expectIdle(map[string]bool{r.podDir(w): false, r.beDir(): true})
		if n := r.Log.Count("need Anolis OS group identity"); n != 1 {
			t.Errorf("the Anolis OS line was logged %d times, want once", n)
		}
	})
}

// TestOldKernel: a kernel before 5.15 has no cpu.idle: the plugin says so once, writes nothing and fails nothing.
func TestOldKernel(t *testing.T) {
	qosmanagertest.ForEachLayout(t, func(t *testing.T, l qosmanagertest.Layout) {
		r := newRig(t, l, false, web(), beOutside())
		for range 3 {
			r.run(spec(nil))
		}
		if n := r.Log.Count("this kernel has no cpu.idle"); n != 1 {
			t.Errorf("the missing cpu.idle was said %d times, want once; log:\n%s", n, r.Log)
		}
		if a := r.Exec.Audit(); len(a) != 0 {
			t.Errorf("the plugin wrote on a kernel without cpu.idle: %+v", a)
		}
		if _, err := r.FS.CPUIdle(r.beDir()); !errors.Is(err, system.ErrUnsupported) {
			t.Errorf("cpu.idle appeared in the besteffort cgroup (%v)", err)
		}
	})
}

// TestLeftovers: cpu.idle 1 that an earlier agent left where the strategy no longer asks for it is written back
// to 0 at the first run; a pod that left is let go without a write.
func TestLeftovers(t *testing.T) {
	qosmanagertest.ForEachLayout(t, func(t *testing.T, l qosmanagertest.Layout) {
		w, o := web(), beOutside()
		r := newRig(t, l, true, w, o)
		r.setIdle(r.beDir(), true)
		r.setIdle(r.podDir(w), true)
		r.run(spec(nil))
		r.expectIdle(map[string]bool{r.beDir(): true, r.podDir(w): false, r.podDir(o): true})

		// The BE pod leaves: its cgroup is gone, nothing is written to it.
		if err := r.Host.RemovePod(o.UID); err != nil {
			t.Fatal(err)
		}
		r.Store.DeletePod(o.UID)
		n := len(r.Exec.Audit())
		r.run(spec(beOff))
		for _, rec := range r.Exec.Audit()[n:] {
			if rec.Dir == r.podDir(o) {
				t.Errorf("wrote to the cgroup of a pod that left: %+v", rec)
			}
		}
		r.expectIdle(map[string]bool{r.beDir(): false})
		if r.p.hold.Len() != 0 {
			t.Errorf("the plugin still holds %d values", r.p.hold.Len())
		}
	})
}

// TestValidate: a groupIdentity outside [-1, 2] of a class that is on is refused naming the field; one of a class
// that is off is accepted.
func TestValidate(t *testing.T) {
	p := &Plugin{}
	tests := []struct {
		name string
		edit func(s *slov1alpha1.ResourceQOSStrategy)
		want string
	}{
		{"defaults", nil, ""},
		{"below -1", func(s *slov1alpha1.ResourceQOSStrategy) { s.BEClass.CPUQOS.GroupIdentity = ptr.To[int64](-2) },
			"resourceQOSStrategy.beClass.cpuQOS.groupIdentity is -2, outside [-1, 2]"},
		{"above 2, two classes", func(s *slov1alpha1.ResourceQOSStrategy) {
			s.LSClass.CPUQOS.Enable, s.LSClass.CPUQOS.GroupIdentity = ptr.To(true), ptr.To[int64](3)
			s.SystemClass.CPUQOS.Enable, s.SystemClass.CPUQOS.GroupIdentity = ptr.To(true), ptr.To[int64](9)
		}, "resourceQOSStrategy.lsClass.cpuQOS.groupIdentity is 3, outside [-1, 2]; resourceQOSStrategy.systemClass.cpuQOS.groupIdentity is 9, outside [-1, 2]"},
		{"off class", func(s *slov1alpha1.ResourceQOSStrategy) { s.LSClass.CPUQOS.GroupIdentity = ptr.To[int64](7) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Validate(spec(tt.edit))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Validate = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestBadNodeSLOKeepsLastGood runs the plugin under the QoS manager: a NodeSLO with an out-of-range groupIdentity
// is refused, and the last good one (BE idle) stays in force.
func TestBadNodeSLOKeepsLastGood(t *testing.T) {
	r := newRig(t, qosmanagertest.Layout{Version: cgroup.V1, Driver: cgroup.Cgroupfs}, true, batch())
	clk := clocktesting.NewFakeClock(time.Now())
	d := qosmanager.Deps{States: r.Store, Executor: r.Exec, Cgroups: r.FS, Layout: r.Host.Layout(), Clock: clk}
	m, err := qosmanager.NewManager(d, clk, []qosmanager.Factory{{Name: Name, Interval: DefaultInterval, Default: true,
		New: func(qosmanager.Deps) (qosmanager.RunPlugin, error) { return r.p, nil }}}, []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Store.SetNodeSLO(&slov1alpha1.NodeSLO{Spec: *spec(nil)})
	if err := m.RunOnce(r.Ctx); err != nil {
		t.Fatal(err)
	}
	r.expectIdle(map[string]bool{r.beDir(): true})
	r.Store.SetNodeSLO(&slov1alpha1.NodeSLO{Spec: *spec(func(s *slov1alpha1.ResourceQOSStrategy) {
		s.BEClass.CPUQOS.GroupIdentity = ptr.To[int64](5)
	})})
	if err := m.RunOnce(r.Ctx); err != nil {
		t.Fatal(err)
	}
	r.expectIdle(map[string]bool{r.beDir(): true})
	if n := r.Log.Count("beClass.cpuQOS.groupIdentity is 5, outside [-1, 2]"); n != 1 {
		t.Errorf("the refusal was logged %d times, want once", n)
	}
}

// TestKubeletStartsWithoutIdle: the kubelet cannot start while the besteffort QoS cgroup is idle (the kernel refuses
// its cpu.shares write there, and the kubelet exits), so the cgroup leaves idle while a kubelet that started again
// has run for less than KubeletSettle, or is gone, and goes back to idle afterwards. A kubelet that started long
// before the agent is settled at once; a node where no kubelet process can be seen keeps the cgroup idle.
func TestKubeletStartsWithoutIdle(t *testing.T) {
	qosmanagertest.ForEachLayout(t, func(t *testing.T, l qosmanagertest.Layout) {
		// No kubelet process to be seen: the cgroup is idle as asked, and that the plugin cannot tell is said once.
		blind := newRig(t, l, true, batch())
		blind.run(spec(nil))
		blind.Clock.Step(time.Second)
		blind.run(spec(nil))
		blind.expectIdle(map[string]bool{blind.beDir(): true})
		if n := blind.Log.Count("no kubelet process in /proc"); n != 1 {
			t.Errorf("a node without a visible kubelet was logged %d times, want once:\n%s", n, blind.Log.String())
		}

		b := batch()
		r := newRig(t, l, true, b)
		procRoot := r.Host.ProcRoot()
		boot := r.Clock.Now().Add(-time.Hour)
		// kubelet writes the kubelet process (PID 4242) started at start, and /proc/uptime as of the clock.
		kubelet := func(start time.Time) {
			t.Helper()
			ticks := start.Sub(boot) / (time.Second / 100)
			stat := fmt.Sprintf("4242 (kubelet) S 1 4242 4242 0 -1 4194560 1 0 0 0 1 1 0 0 20 0 30 0 %d 2000000 3000 18446744073709551615\n", ticks)
			writeFile(t, filepath.Join(procRoot, "4242", "comm"), "kubelet\n")
			writeFile(t, filepath.Join(procRoot, "4242", "stat"), stat)
		}
		uptime := func() {
			t.Helper()
			writeFile(t, filepath.Join(procRoot, "uptime"), fmt.Sprintf("%.2f 100.00\n", r.Clock.Now().Sub(boot).Seconds()))
		}
		uptime()
		kubelet(boot.Add(time.Minute))
		r.run(spec(nil))
		r.expectIdle(map[string]bool{r.beDir(): true})

		// The kubelet starts again: the cgroup leaves idle, with the kubelet's weight back.
		r.Clock.Step(time.Second)
		uptime()
		kubelet(r.Clock.Now())
		if err := r.FS.SetCPUShares(r.beDir(), 1024); err != nil { // what the kernel leaves when idle goes
			t.Fatal(err)
		}
		r.run(spec(nil))
		r.expectIdle(map[string]bool{r.beDir(): false})
		if got, err := r.FS.CPUShares(r.beDir()); err != nil || cgroup.SharesToWeight(got) != cgroup.SharesToWeight(cgroup.MinShares) {
			t.Errorf("cpu.shares of the besteffort cgroup while the kubelet starts: %d (%v), want the kubelet's %d", got, err, cgroup.MinShares)
		}
		if r.Log.Count("the kubelet is starting") != 1 {
			t.Errorf("the kubelet's start was not logged once:\n%s", r.Log.String())
		}
		// Not yet settled a second before KubeletSettle; idle again at it.
		r.Clock.Step(KubeletSettle - 2*time.Second)
		uptime()
		r.run(spec(nil))
		r.expectIdle(map[string]bool{r.beDir(): false})
		r.Clock.Step(2 * time.Second)
		uptime()
		r.run(spec(nil))
		r.expectIdle(map[string]bool{r.beDir(): true})

		// The kubelet is gone (it failed, or its service manager stopped it): idle goes until one has settled.
		if err := os.RemoveAll(filepath.Join(procRoot, "4242")); err != nil {
			t.Fatal(err)
		}
		r.Clock.Step(time.Second)
		uptime()
		r.run(spec(nil))
		r.expectIdle(map[string]bool{r.beDir(): false})
		if n := r.Log.Count("the kubelet is starting"); n != 2 {
			t.Errorf("the kubelet's going was logged %d times in all, want a second time:\n%s", n, r.Log.String())
		}
	})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
