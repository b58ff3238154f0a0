package runtimehook

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// TestOOMScoreAdj: each class in its band, the kubelet's order kept within a band, and the pods the feature leaves
// to the kubelet.
func TestOOMScoreAdj(t *testing.T) {
	const capacity = 8 << 30
	tests := []struct {
		name string
		pod  *corev1.Pod
		want int // -1: none
	}{
		{"batch pod", batchPod(), 1000},
		{"best-effort pod without tier resources", bePod(), 1000},
		{"a BestEffort pod labelled batch", testutil.Pod("b").Label(slov1alpha1.LabelPriorityClass, "batch").Container("main").Requests("cpu", "100m").Obj(), 1000},
		// 1Gi of mid-memory in 8Gi: the kubelet would give 875; its band [334, 666]: 334 + 872 x 332 / 996 = 624.
		{"mid pod", testutil.Pod("m").Priority(7000).Container("main").Requests("kubernetes.io/mid-memory", "1Gi").Obj(), 624},
		{"mid pod without a memory request", testutil.Pod("m").Priority(7000).Container("main").Requests("kubernetes.io/mid-cpu", "500").Obj(), 666},
		// 256Mi of 8Gi: the kubelet's 969, in [1, 333]: 1 + 966 x 332 / 996 = 323.
		{"Burstable service", lsPod(), 323},
		{"Burstable service requesting the whole node", testutil.Pod("big").Container("main").Requests("memory", "8Gi").Obj(), 1},
		{"Burstable service without a memory request", testutil.Pod("cpu").Container("main").Requests("cpu", "1").Obj(), 333},
		// The kubelet's -997, given explicitly so that it comes back when an annotation goes.
		{"Guaranteed service", testutil.Pod("g").Container("main").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Obj(), -997},
		// A service without a request: the kubelet's 999 (or 1000, BestEffort), the top of the band.
		{"BestEffort service (labelled prod)", testutil.Pod("p").Label(slov1alpha1.LabelPriorityClass, "prod").Container("main").Obj(), 333},
		// System pods are as protected as services: left at the kubelet's 998 they would die before every service.
		// 70Mi: the kubelet's 992, 1 + 989 x 332 / 996 = 330.
		{"system-cluster-critical pod", testutil.Pod("dns").Priority(2000000000).Container("main").Requests("memory", "70Mi").Obj(), 330},
		{"SYSTEM pod", testutil.Pod("agent").Label(slov1alpha1.LabelQoSClass, "SYSTEM").Container("main").Requests("memory", "70Mi").Obj(), 330},
		{"static pod", testutil.Pod("etcd").Annotation("kubernetes.io/config.mirror", "x").Container("main").Requests("memory", "70Mi").Obj(), 330},
		{"node-critical pod (the kubelet's -997)", nodeCriticalPod(), -997},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := OOMScoreAdj(slov1alpha1.ClassOf(tt.pod), tt.pod, &tt.pod.Spec.Containers[0], capacity)
			if !ok {
				got = -1
			}
			if got != tt.want {
				t.Errorf("OOMScoreAdj = %d, want %d", got, tt.want)
			}
		})
	}
	// Without the node's capacity only best-effort work and Guaranteed pods have a value (neither needs it).
	if _, ok := OOMScoreAdj(slov1alpha1.ClassOf(lsPod()), lsPod(), &lsPod().Spec.Containers[0], 0); ok {
		t.Error("a service got a value without the node's memory capacity")
	}
	// The bands never meet: best-effort work above every mid value, mid above every service value.
	for k := kubeletBurstableLow; k <= kubeletBurstableHigh; k++ {
		if m, s := band(k, oomMidLow, oomMidHigh), band(k, oomServiceLow, oomServiceHigh); m < oomMidLow || m > oomMidHigh || s < oomServiceLow || s > oomServiceHigh || m >= oomBestEffort || s >= oomMidLow {
			t.Fatalf("kubelet value %d: mid %d, service %d are outside their bands", k, m, s)
		}
	}
}

// nodeCriticalPod is a Burstable pod of the priority class system-node-critical.
func nodeCriticalPod() *corev1.Pod {
	p := testutil.Pod("proxy").Priority(2000001000).Container("main").Requests("memory", "70Mi").Obj()
	p.Spec.PriorityClassName = "system-node-critical"
	return p
}

// With --oom-score-order=false the hook has no OOM feature, and a round leaves every process's oom_score_adj alone.
func TestOOMScoreOrderOff(t *testing.T) {
	ls := lsPod()
	ls.Status.ContainerStatuses = testutil.Pod("x").Container("main").Running("containerd://c-ls").Obj().Status.ContainerStatuses
	f := newFixture(t, clock.RealClock{}, ls)
	f.addCgroup(t, lsDir+"/c-ls")
	opts := DefaultOptions()
	opts.Mode, opts.OOMScoreOrder = string(ModeReconciler), false
	h, err := New(f.deps, opts, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(h.Reconciler.fs.Names(), OOMScoreFeatureName) {
		t.Fatalf("features %v include %s", h.Reconciler.fs.Names(), OOMScoreFeatureName)
	}
	if err := h.Reconciler.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.oomScore(t, lsDir+"/c-ls"); got != "0" {
		t.Errorf("oom_score_adj = %s with the order off, want the 0 it had", got)
	}
}

// TestAnnotatedOOMScoreAdj: the per-container spec before the pod's value, gleaner.sh before Koordinator's, and each
// class's range; what cannot be used is an error naming the annotation.
func TestAnnotatedOOMScoreAdj(t *testing.T) {
	svc := func(annotations ...string) *corev1.Pod {
		b := testutil.Pod("web").Container("app").Requests("memory", "64Mi").Container("sidecar").Requests("memory", "16Mi")
		for i := 0; i+1 < len(annotations); i += 2 {
			b = b.Annotation(annotations[i], annotations[i+1])
		}
		return b.Obj()
	}
	withClass := func(p *corev1.Pod, priority int32) *corev1.Pod { p.Spec.Priority = &priority; return p }
	const (
		pod, podKoord   = slov1alpha1.AnnotationOOMScoreAdj, slov1alpha1.AnnotationOOMScoreAdjAlias
		spec, specKoord = slov1alpha1.AnnotationOOMScoreAdjSpec, slov1alpha1.AnnotationOOMScoreAdjSpecAlias
	)
	tests := []struct {
		name      string
		pod       *corev1.Pod
		container string
		want      int // -2000: none
		wantErr   string
	}{
		{"no annotation", svc(), "app", -2000, ""},
		{"the pod's value", svc(pod, "-500"), "app", -500, ""},
		{"Koordinator's pod value", svc(podKoord, "200"), "app", 200, ""},
		{"gleaner.sh wins", svc(pod, "-100", podKoord, "200"), "app", -100, ""},
		{"the container's entry", svc(pod, "-100", spec, `{"sidecar": 800}`), "sidecar", 800, ""},
		{"a container the spec does not name gets the pod's", svc(pod, "-100", spec, `{"sidecar": 800}`), "app", -100, ""},
		{"Koordinator's spec", svc(specKoord, `{"app": -900}`), "app", -900, ""},
		{"a malformed spec", svc(spec, `{"app": "high"}`), "app", -2000, "annotation gleaner.sh/oom-score-adj-spec is not a JSON object"},
		{"not an integer", svc(pod, "low"), "app", -2000, `annotation gleaner.sh/oom-score-adj: "low" is not an integer`},
		{"beyond the kernel's range", svc(pod, "1001"), "app", -2000, "1001 is outside what a pod may set, -997 to 1000"},
		{"safer than Guaranteed", svc(pod, "-999"), "app", -2000, "-999 is outside what a pod may set, -997 to 1000"},
		{"a batch pod asking to be spared", withClass(svc(pod, "0"), 5000), "app", -2000, "0 is outside what a best-effort pod may set, 1000 to 1000"},
		{"a batch pod at 1000", withClass(svc(pod, "1000"), 5000), "app", 1000, ""},
		{"a mid pod below its band", withClass(svc(pod, "100"), 7000), "app", -2000, "100 is outside what a mid pod may set, 334 to 1000"},
		{"a mid pod more killable", withClass(svc(pod, "900"), 7000), "app", 900, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := AnnotatedOOMScoreAdj(slov1alpha1.ClassOf(tt.pod), tt.pod, tt.container)
			if !ok {
				got = -2000
			}
			if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("AnnotatedOOMScoreAdj = %d, %v, %v; want %d and an error containing %q", got, ok, err, tt.want, tt.wantErr)
			}
		})
	}
}

// A round writes an annotated service's own value; a malformed annotation leaves the class's value, with one Warning
// event however many rounds see it, and one more when the annotation changes.
func TestReconcilerWritesAnnotatedOOMScores(t *testing.T) {
	good := lsPod()
	good.Annotations = map[string]string{slov1alpha1.AnnotationOOMScoreAdjAlias: "-500"}
	good.Status.ContainerStatuses = testutil.Pod("x").Container("main").Running("containerd://c-good").Obj().Status.ContainerStatuses
	bad := testutil.Pod("bad").Namespace("prod").UID(beUID).Annotation(slov1alpha1.AnnotationOOMScoreAdj, "-2000").
		Container("main").Requests("cpu", "100m", "memory", "256Mi").Running("containerd://c-bad").Obj()
	f := newFixture(t, clock.RealClock{}, good, bad)
	rec := &testutil.Events{}
	f.deps.Events = rec
	badDir := "kubepods/burstable/pod" + beUID + "/c-bad"
	f.addCgroup(t, lsDir+"/c-good")
	f.addCgroup(t, badDir)
	st := f.status(t, ModeReconciler)
	r := NewReconciler(f.deps, f.registry(t), st, time.Second)
	for range 3 {
		if err := r.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.oomScore(t, lsDir+"/c-good"); got != "-500" {
		t.Errorf("the annotated service's oom_score_adj = %s, want -500", got)
	}
	if got := f.oomScore(t, badDir); got != "323" {
		t.Errorf("with a malformed annotation oom_score_adj = %s, want the class's 323", got)
	}
	if len(rec.List()) != 1 || !strings.Contains(rec.List()[0], "bad Warning InvalidOOMScoreAdj: annotation gleaner.sh/oom-score-adj: -2000 is outside") {
		t.Fatalf("events = %q, want one InvalidOOMScoreAdj warning", rec.List())
	}
	bad = bad.DeepCopy()
	bad.Annotations[slov1alpha1.AnnotationOOMScoreAdj] = "x"
	f.store.SetPod(bad)
	if err := r.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rec.List()) != 2 {
		t.Errorf("events after the annotation changed = %q, want a second warning", rec.List())
	}
}

// The reconciler puts host applications of class BE at 1000 with batch pods and leaves the others alone (a free
// priority without class BE too: cpuqos and blkio go by the class alike); one that is no longer BE gets 0 back once
// and is let go: a value it then sets itself stays, at the next round and at the executor's resync.
func TestReconcilerOrdersHostApplications(t *testing.T) {
	f := newFixture(t, clock.RealClock{})
	apps := []slov1alpha1.HostApplicationSpec{
		{Name: "backup", QoS: slov1alpha1.QoSBE, CgroupPath: &slov1alpha1.CgroupPath{ParentDir: "daemons"}},
		{Name: "cache", Priority: slov1alpha1.PriorityFree, CgroupPath: &slov1alpha1.CgroupPath{ParentDir: "daemons"}},
		{Name: "nginx", QoS: slov1alpha1.QoSLS},
	}
	dirs := map[string]string{}
	for _, app := range apps {
		base, parent, rel := app.CgroupLocation()
		dirs[app.Name] = f.deps.Layout.HostDir(cgroup.HostBase(base), parent, rel)
		f.addCgroup(t, dirs[app.Name])
	}
	slo := &slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{HostApplications: apps}}
	f.store.SetNodeSLO(slo)
	r := NewReconciler(f.deps, f.registry(t), f.status(t, ModeReconciler), time.Second)
	expect := func(step string, want map[string]string) {
		t.Helper()
		if err := r.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		for name, w := range want {
			if got := f.oomScore(t, dirs[name]); got != w {
				t.Errorf("%s: oom_score_adj of %s = %s, want %s", step, name, got, w)
			}
		}
	}
	expect("first round", map[string]string{"backup": "1000", "cache": "0", "nginx": "0"})
	slo = slo.DeepCopy()
	slo.Spec.HostApplications[0].QoS = slov1alpha1.QoSLS
	f.store.SetNodeSLO(slo)
	expect("backup moved to LS", map[string]string{"backup": "0"})
	// Its own value now: neither the next round nor a resync writes over it.
	writeFile(t, f.host, "proc/oom_score_adj", strconv.Itoa(f.pids[dirs["backup"]]), "-100\n")
	expect("a round after", map[string]string{"backup": "-100"})
	if err := f.deps.Executor.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.oomScore(t, dirs["backup"]); got != "-100" {
		t.Errorf("after a resync oom_score_adj of backup = %s, want its own -100", got)
	}
}

// A Guaranteed pod whose annotation made it 1000 gets the kubelet's -997 back when the annotation goes; a debug
// (ephemeral) container gets its pod's band like any other, not "unknown".
func TestOOMScoreAnnotationGoesAndEphemeralContainers(t *testing.T) {
	g := testutil.Pod("db").Namespace("prod").UID(lsUID).Annotation(slov1alpha1.AnnotationOOMScoreAdj, "1000").
		Container("main").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Running("containerd://c-db").Obj()
	g.Status.QOSClass = corev1.PodQOSGuaranteed
	dir := "kubepods/pod" + lsUID + "/c-db"
	f := newFixture(t, clock.RealClock{}, g)
	f.addCgroup(t, dir)
	r := NewReconciler(f.deps, f.registry(t), f.status(t, ModeReconciler), time.Second)
	for _, step := range []struct {
		annotated bool
		want      string
	}{{true, "1000"}, {false, "-997"}} {
		p := g.DeepCopy()
		if !step.annotated {
			p.Annotations = nil
		}
		f.store.SetPod(p)
		if err := r.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := f.oomScore(t, dir); got != step.want {
			t.Errorf("annotated %v: oom_score_adj = %s, want %s", step.annotated, got, step.want)
		}
	}

	debug := lsPod()
	debug.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger"}}}
	f.store.SetPod(debug)
	m := f.store.GetPod(debug.UID)
	v, err := f.registry(t).containerValues(Target{Stage: StageCreateContainer, Pod: m, Container: "debugger"})
	if err != nil || v.OOMScoreAdj == nil || *v.OOMScoreAdj != 333 {
		t.Errorf("an ephemeral container's values: %+v, %v; want the top of the services' band, 333", v, err)
	}
}

// Where the runtime cannot start a process below 0 (Deps.RuntimeLowersOOMScores false), negative values are not
// given at creation (see oomFeature.values), only by the reconciler: a Guaranteed pod's -997 and an annotated
// service's -500. Where it can, they go to the runtime at creation too.
func TestNegativeOOMScoresAtCreationOnlyWhereTheRuntimeCan(t *testing.T) {
	g := testutil.Pod("db").UID(lsUID).Container("main").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Obj()
	annotated := testutil.Pod("web").UID(beUID).Annotation(slov1alpha1.AnnotationOOMScoreAdj, "-500").Container("main").Requests("memory", "64Mi").Obj()
	for _, lowers := range []bool{false, true} {
		f := newFixture(t, clock.RealClock{}, g, annotated)
		f.deps.RuntimeLowersOOMScores = lowers
		reg := f.registry(t)
		for _, tt := range []struct {
			uid    types.UID
			values string
		}{{lsUID, "-997"}, {beUID, "-500"}} {
			m := f.store.GetPod(tt.uid)
			atCreation := ""
			if lowers {
				atCreation = tt.values
			}
			for stage, want := range map[Stage]string{StageCreateContainer: atCreation, StageReconcile: tt.values} {
				v, err := reg.containerValues(Target{Stage: stage, Pod: m, Container: "main"})
				got := ""
				if v.OOMScoreAdj != nil {
					got = strconv.Itoa(*v.OOMScoreAdj)
				}
				if err != nil || got != want {
					t.Errorf("runtime lowers %v, %s at %s: %q, %v; want %q", lowers, m.Pod.Name, stage, got, err, want)
				}
			}
		}
	}
}
