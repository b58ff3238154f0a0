package cgreconcile

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// TestPodMemoryQOS: a pod's annotation (gleaner.sh's over Koordinator's) only narrows its class's memory QoS; what
// would widen it, or does not parse, is an error and the class's applies. Koordinator's values are read as
// Koordinator reads them: policy auto is the class's values, and nothing where the class's memory QoS is off;
// fields Gleaner does not have are left out and named, as are the Anolis OS fields.
func TestPodMemoryQOS(t *testing.T) {
	class := &slov1alpha1.MemoryQOSCfg{Enable: ptr.To(true), MemoryQOS: slov1alpha1.MemoryQOS{
		MinLimitPercent: ptr.To[int64](50), LowLimitPercent: ptr.To[int64](80), ThrottlingPercent: ptr.To[int64](90), OomKillGroup: ptr.To[int64](0),
	}}
	unthrottled := class.DeepCopy()
	unthrottled.ThrottlingPercent = ptr.To[int64](0)
	type pcts struct{ min, low, thr, group int64 }
	off := pcts{-1, -1, -1, -1} // no memory QoS for the pod
	of := func(c *slov1alpha1.MemoryQOSCfg) pcts {
		if c == nil {
			return off
		}
		return pcts{*c.MinLimitPercent, *c.LowLimitPercent, *c.ThrottlingPercent, *c.OomKillGroup}
	}
	own, koord := slov1alpha1.AnnotationMemoryQOS, slov1alpha1.AnnotationMemoryQOSAlias
	tests := []struct {
		name       string
		key        string
		value      string
		class      *slov1alpha1.MemoryQOSCfg
		want       pcts
		wantPartly string // a part of partly; "": partly is ""
		wantErr    string
	}{
		{"no annotation", "", "", class, pcts{50, 80, 90, 0}, "", ""},
		{"policy none: no protection, the class's throttling", own, `{"policy":"none"}`, class, pcts{0, 0, 90, 0}, "", ""},
		{"Koordinator's: less protection", koord, `{"minLimitPercent":10,"lowLimitPercent":20}`, class, pcts{10, 20, 90, 0}, "", ""},
		{"more throttling, whole-pod OOM", own, `{"throttlingPercent":60,"oomKillGroup":1}`, class, pcts{50, 80, 60, 1}, "", ""},
		{"throttling where the class has none", own, `{"throttlingPercent":95}`, unthrottled, pcts{50, 80, 95, 0}, "", ""},
		{"more protection", own, `{"minLimitPercent":100}`, class, pcts{50, 80, 90, 0}, "", "minLimitPercent 100 is outside 0..50"},
		{"less throttling", own, `{"throttlingPercent":100}`, class, pcts{50, 80, 90, 0}, "", "throttlingPercent 100 is outside 1..90"},
		{"throttling off", own, `{"throttlingPercent":0}`, class, pcts{50, 80, 90, 0}, "", "throttlingPercent 0 is outside 1..90"},
		{"an unknown policy", own, `{"policy":"max"}`, class, pcts{50, 80, 90, 0}, "", `policy "max" is not default, auto or none`},
		{"unknown field in Gleaner's", own, `{"minPercent":10}`, class, pcts{50, 80, 90, 0}, "", "is not a memory QoS configuration"},
		{"Koordinator's auto: the class's values", koord, `{"policy":"auto"}`, class, pcts{50, 80, 90, 0}, "", ""},
		{"Koordinator's auto, narrowed", koord, `{"policy":"auto","throttlingPercent":80}`, class, pcts{50, 80, 80, 0}, "", ""},
		{"Koordinator's auto, class off: nothing", koord, `{"policy":"auto"}`, nil, off, "", ""},
		{"Koordinator's none, class off: nothing", koord, `{"policy":"none","minLimitPercent":0}`, nil, off, "", ""},
		{"Koordinator's fields Gleaner lacks: left out, named", koord, `{"policy":"auto","pageCacheEnable":true,"pageCacheLimitPercent":60}`, class, pcts{50, 80, 90, 0},
			"annotation koordinator.sh/memoryQOS: Gleaner does not read pageCacheEnable, pageCacheLimitPercent, ignored", ""},
		{"Anolis OS fields: named", koord, `{"policy":"default","wmarkRatio":95,"priority":3}`, class, pcts{50, 80, 90, 0},
			"wmarkRatio, priority need Anolis OS memcg extensions, not applied", ""},
		{"Gleaner's key is strict", own, `{"policy":"auto","pageCacheEnable":true}`, class, pcts{50, 80, 90, 0}, "", `unknown field "pageCacheEnable"`},
		{"Koordinator's, not JSON", koord, `policy: auto`, class, pcts{50, 80, 90, 0}, "", "is not a memory QoS configuration"},
		{"Koordinator's, a field of the wrong type", koord, `{"policy":"auto","minLimitPercent":"10"}`, class, pcts{50, 80, 90, 0}, "", "is not a memory QoS configuration"},
		{"class off: a parameter that turns something on", own, `{"throttlingPercent":80}`, nil, off, "", "throttlingPercent 80 would turn on memory QoS"},
		{"class off, Koordinator's auto with a percent", koord, `{"policy":"auto","minLimitPercent":100}`, nil, off, "", "minLimitPercent 100 would turn on memory QoS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tu.Pod("p")
			if tt.key != "" {
				b = b.Annotation(tt.key, tt.value)
			}
			got, partly, err := PodMemoryQOS(b.Obj(), tt.class)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if g := of(got); g != tt.want {
				t.Errorf("memory QoS %+v, want %+v", g, tt.want)
			}
			if (partly == "") != (tt.wantPartly == "") || !strings.Contains(partly, tt.wantPartly) {
				t.Errorf("left out %q, want %q", partly, tt.wantPartly)
			}
		})
	}
	// The class's values are never changed in place.
	if got := of(class); got != (pcts{50, 80, 90, 0}) {
		t.Errorf("the class's configuration became %+v", got)
	}
}

// A service that opts out of protection with Koordinator's annotation keeps its class's throttling and is left out
// of the QoS parents' sums; one that asks for more protection than its class gets the class's, with one Warning
// event however many runs see it.
func TestRunWithPodAnnotations(t *testing.T) {
	optOut := web()
	optOut.Annotations = map[string]string{slov1alpha1.AnnotationMemoryQOSAlias: `{"policy":"none"}`}
	greedy := tu.Pod("greedy").UID("0000000e-0000-4000-8000-000000000005").Annotation(slov1alpha1.AnnotationMemoryQOS, `{"minLimitPercent":100}`).
		Container("c").Requests("memory", "100Mi").Running("containerd://greedy").Obj()
	r := newRig(t, cgroup.V2, cgroup.Cgroupfs, true, optOut, greedy)
	for range 2 {
		r.run(spec(lsAndLSR))
	}
	wa, gc := r.containerDir(optOut, "containerd://web-a"), r.containerDir(greedy, "containerd://greedy")
	r.expectMem(map[string]mem{
		// No protection, the class's throttling (200 x 90 %) and oomKillGroup.
		wa: {0, 0, 180, false}, r.podDir(optOut): {0, 0, -1, true},
		// The class's 50 / 80 %, not the 100 % it asked for.
		gc:                               {50, 80, -1, false},
		r.qosDir(corev1.PodQOSBurstable): {50, 80, -1, false},
	})
	close(r.Events.Events)
	var events []string
	for e := range r.Events.Events {
		events = append(events, e)
	}
	if len(events) != 1 || !strings.Contains(events[0], "Warning InvalidMemoryQOSAnnotation") || !strings.Contains(events[0], "minLimitPercent 100 is outside 0..50") {
		t.Errorf("events %q, want one Warning about the greedy pod", events)
	}
}

// TestRunWithKoordinatorAnnotations: on the node, Koordinator's {"policy":"auto"} gets a service its class's values
// (with a field Gleaner lacks left out and said once) and a best-effort pod, whose class has memory QoS off,
// nothing, with no event; a Koordinator value that is not JSON is said once and the class's values apply.
func TestRunWithKoordinatorAnnotations(t *testing.T) {
	auto := web()
	auto.Annotations = map[string]string{slov1alpha1.AnnotationMemoryQOSAlias: `{"policy":"auto","pageCacheLimitPercent":60}`}
	broken := tu.Pod("broken").UID("0000000e-0000-4000-8000-000000000005").Annotation(slov1alpha1.AnnotationMemoryQOSAlias, `{"policy":"auto"`).
		Container("c").Requests("memory", "100Mi").Running("containerd://broken").Obj()
	be := tu.Pod("be").UID("0000000f-0000-4000-8000-000000000006").Label(slov1alpha1.LabelQoSClass, "BE").
		Annotation(slov1alpha1.AnnotationMemoryQOSAlias, `{"policy":"auto"}`).
		Container("c").Requests("memory", "100Mi").Running("containerd://be").Obj()
	r := newRig(t, cgroup.V2, cgroup.Cgroupfs, true, auto, broken, be)
	for range 3 {
		r.run(spec(lsAndLSR))
	}
	r.expectMem(map[string]mem{
		// The LS class's 50 / 80 / 90 % and oomKillGroup, as without the annotation.
		r.containerDir(auto, "containerd://web-a"): {50, 80, 180, false}, r.podDir(auto): {75, 120, -1, true},
		r.containerDir(broken, "containerd://broken"): {50, 80, -1, false},
		r.containerDir(be, "containerd://be"):         {0, 0, -1, false}, r.podDir(be): {0, 0, -1, false},
	})
	close(r.Events.Events)
	var events []string
	for e := range r.Events.Events {
		events = append(events, e)
	}
	all := strings.Join(events, "\n")
	if len(events) != 2 ||
		!strings.Contains(all, "Warning "+qosmanager.ReasonAnnotationFieldsIgnored+" annotation koordinator.sh/memoryQOS: Gleaner does not read pageCacheLimitPercent") ||
		!strings.Contains(all, "Warning InvalidMemoryQOSAnnotation annotation koordinator.sh/memoryQOS=") {
		t.Errorf("events %q, want one about each of the auto and the broken pod", events)
	}
}
