package noderesource

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/podcache"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

func TestNodeChangedSeesReservations(t *testing.T) {
	base := testutil.Node("n").Capacity("cpu", "4").Allocatable("cpu", "4").Obj()
	with := func(key, value string) *corev1.Node {
		n := base.DeepCopy()
		n.Annotations = map[string]string{key: value}
		return n
	}
	tests := []struct {
		name     string
		old, new *corev1.Node
		want     bool
	}{
		{"unchanged", base, base.DeepCopy(), false},
		{"other annotation", base, with("example.com/x", "y"), false},
		{"gleaner reservation added", base, with(slov1alpha1.AnnotationNodeReservation, `{"reservedCPUs": "0"}`), true},
		{"alias reservation changed", with(slov1alpha1.AnnotationNodeReservationAlias, `{"reservedCPUs": "0"}`),
			with(slov1alpha1.AnnotationNodeReservationAlias, `{"reservedCPUs": "0-1"}`), true},
		{"reservation removed", with(slov1alpha1.AnnotationNodeReservationAlias, `{}`), base, true},
	}
	for _, tt := range tests {
		if got := (nodeChanged{}).Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.want {
			t.Errorf("%s: Update = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPodChangedSeesClasses(t *testing.T) {
	base := testutil.Pod("p").Node("n").Requests("cpu", "1").Obj() // Burstable: LS, prod
	label := func(k, v string) *corev1.Pod {
		p := base.DeepCopy()
		p.Labels = map[string]string{k: v}
		return p
	}
	tests := []struct {
		name string
		new  *corev1.Pod
		want bool
	}{
		{"unchanged", base.DeepCopy(), false},
		{"unrelated label", label("app", "web"), false},
		{"QoS label BE: now batch", label(slov1alpha1.LabelQoSClassAlias, "BE"), true},
		{"QoS label LSE: same priority, other QoS class", label(slov1alpha1.LabelQoSClass, "LSE"), true},
		{"QoS label LS: the class it had", label(slov1alpha1.LabelQoSClass, "LS"), false},
		{"priority-class label", label(slov1alpha1.LabelPriorityClassAlias, "koord-batch"), true},
		{"request resized", testutil.Pod("p").Node("n").Requests("cpu", "2").Obj(), true},
		{"succeeded", testutil.Pod("p").Node("n").Requests("cpu", "1").Phase(corev1.PodSucceeded).Obj(), true},
	}
	for _, tt := range tests {
		if got := podChanged(podcache.FromPod(base), podcache.FromPod(tt.new)); got != tt.want {
			t.Errorf("%s: podChanged = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMetricChangedSeesStampsAndUsages(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := testutil.Pod("p").Obj()
	report := func(stamp time.Time, usage string) *slov1alpha1.NodeMetric {
		return testutil.NodeMetric("n").Updated(stamp).NodeUsage("cpu", "2").Pod(pod, "cpu", usage).Obj()
	}
	unstamped := report(at, "1")
	unstamped.Status.UpdateTime = nil
	tests := []struct {
		name     string
		old, new *slov1alpha1.NodeMetric
		want     bool
	}{
		{"same report", report(at, "1"), report(at, "1"), false},
		{"new stamp, same usages", report(at, "1"), report(at.Add(time.Minute), "1"), true},
		{"same stamp, a pod's usage moved", report(at, "1"), report(at, "2"), true},
		{"stamp removed", report(at, "1"), unstamped, true},
		{"both unstamped", unstamped, unstamped.DeepCopy(), false},
		{"same stamp, a pod's usage moved in podUsages", testutil.AsPodUsages(report(at, "1")), testutil.AsPodUsages(report(at, "2")), true},
		{"same stamp, same podUsages", testutil.AsPodUsages(report(at, "1")), testutil.AsPodUsages(report(at, "1")), false},
	}
	for _, tt := range tests {
		if got := (metricChanged{}).Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.want {
			t.Errorf("%s: metricChanged = %v, want %v", tt.name, got, tt.want)
		}
	}
}
