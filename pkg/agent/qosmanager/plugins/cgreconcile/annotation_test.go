package cgreconcile

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// TestPodMemoryQOS: a pod's annotation (gleaner.sh's over Koordinator's) only narrows its class's memory QoS; what
// would widen it, or does not parse, is an error and the class's applies.
func TestPodMemoryQOS(t *testing.T) {
	class := &slov1alpha1.MemoryQOSCfg{Enable: ptr.To(true), MemoryQOS: slov1alpha1.MemoryQOS{
		MinLimitPercent: ptr.To[int64](50), LowLimitPercent: ptr.To[int64](80), ThrottlingPercent: ptr.To[int64](90), OomKillGroup: ptr.To[int64](0),
	}}
	unthrottled := class.DeepCopy()
	unthrottled.ThrottlingPercent = ptr.To[int64](0)
	type pcts struct{ min, low, thr, group int64 }
	of := func(c *slov1alpha1.MemoryQOSCfg) pcts {
		return pcts{*c.MinLimitPercent, *c.LowLimitPercent, *c.ThrottlingPercent, *c.OomKillGroup}
	}
	tests := []struct {
		name    string
		key     string
		value   string
		class   *slov1alpha1.MemoryQOSCfg
		want    pcts
		wantErr string
	}{
		{"no annotation", "", "", class, pcts{50, 80, 90, 0}, ""},
		{"policy none: no protection, the class's throttling", slov1alpha1.AnnotationMemoryQOS, `{"policy":"none"}`, class, pcts{0, 0, 90, 0}, ""},
		{"Koordinator's: less protection", slov1alpha1.AnnotationMemoryQOSAlias, `{"minLimitPercent":10,"lowLimitPercent":20}`, class, pcts{10, 20, 90, 0}, ""},
		{"more throttling, whole-pod OOM", slov1alpha1.AnnotationMemoryQOS, `{"throttlingPercent":60,"oomKillGroup":1}`, class, pcts{50, 80, 60, 1}, ""},
		{"throttling where the class has none", slov1alpha1.AnnotationMemoryQOS, `{"throttlingPercent":95}`, unthrottled, pcts{50, 80, 95, 0}, ""},
		{"more protection", slov1alpha1.AnnotationMemoryQOS, `{"minLimitPercent":100}`, class, pcts{50, 80, 90, 0}, "minLimitPercent 100 is outside 0..50"},
		{"less throttling", slov1alpha1.AnnotationMemoryQOS, `{"throttlingPercent":100}`, class, pcts{50, 80, 90, 0}, "throttlingPercent 100 is outside 1..90"},
		{"throttling off", slov1alpha1.AnnotationMemoryQOS, `{"throttlingPercent":0}`, class, pcts{50, 80, 90, 0}, "throttlingPercent 0 is outside 1..90"},
		{"an unknown policy", slov1alpha1.AnnotationMemoryQOS, `{"policy":"max"}`, class, pcts{50, 80, 90, 0}, `policy "max" is not default, auto or none`},
		{"unknown field", slov1alpha1.AnnotationMemoryQOS, `{"minPercent":10}`, class, pcts{50, 80, 90, 0}, "is not a memory QoS configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tu.Pod("p")
			if tt.key != "" {
				b = b.Annotation(tt.key, tt.value)
			}
			got, err := PodMemoryQOS(b.Obj(), tt.class)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if g := of(got); g != tt.want {
				t.Errorf("memory QoS %+v, want %+v", g, tt.want)
			}
		})
	}
	// The class's memory QoS off: nothing for the pod, whatever it asks.
	if got, err := PodMemoryQOS(tu.Pod("p").Annotation(slov1alpha1.AnnotationMemoryQOS, `{"throttlingPercent":80}`).Obj(), nil); got != nil || err == nil {
		t.Errorf("with the class off: %v, %v; want nothing and an error", got, err)
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
