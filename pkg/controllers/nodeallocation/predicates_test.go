package nodeallocation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/gleaner-sh/gleaner/pkg/controllers/podcache"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

func TestNodeChanged(t *testing.T) {
	base := func() *corev1.Node {
		return testutil.Node("n").Capacity("cpu", "8").Allocatable("cpu", "4", "memory", "8Gi").Obj()
	}
	tests := []struct {
		name   string
		mutate func(*corev1.Node)
		want   bool
	}{
		{"heartbeat", func(n *corev1.Node) { n.Status.Conditions[0].LastHeartbeatTime = metav1.Now() }, false},
		{"label", func(n *corev1.Node) { n.Labels = map[string]string{"a": "b"} }, false},
		{"resource version", func(n *corev1.Node) { n.ResourceVersion = "42" }, false},
		{"same allocatable written differently", func(n *corev1.Node) {
			n.Status.Allocatable[corev1.ResourceCPU] = testutil.Node("x").Allocatable("cpu", "4000m").Obj().Status.Allocatable[corev1.ResourceCPU]
		}, false},
		{"allocatable", func(n *corev1.Node) {
			n.Status.Allocatable[corev1.ResourceCPU] = testutil.Node("x").Allocatable("cpu", "3").Obj().Status.Allocatable[corev1.ResourceCPU]
		}, true},
		{"new extended resource", func(n *corev1.Node) {
			n.Status.Allocatable["kubernetes.io/batch-cpu"] = testutil.Node("x").Allocatable("cpu", "1200").Obj().Status.Allocatable[corev1.ResourceCPU]
		}, true},
		{"capacity", func(n *corev1.Node) { n.Status.Capacity = nil }, true},
	}
	p := nodeChanged()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := base()
			tt.mutate(n)
			if got := p.Update(event.TypedUpdateEvent[*corev1.Node]{ObjectOld: base(), ObjectNew: n}); got != tt.want {
				t.Errorf("Update = %v, want %v", got, tt.want)
			}
		})
	}
	if !p.Create(event.TypedCreateEvent[*corev1.Node]{Object: base()}) || !p.Delete(event.TypedDeleteEvent[*corev1.Node]{Object: base()}) {
		t.Error("node creations and deletions must pass")
	}
}

func TestPodChanged(t *testing.T) {
	base := func() *testutil.PodBuilder {
		return testutil.Pod("p").Node("n").Requests("cpu", "250m").Limits("cpu", "500m")
	}
	tests := []struct {
		name     string
		old, new *corev1.Pod
		want     bool
	}{
		{"status condition", base().Obj(), withReady(base().Obj()), false},
		{"label", base().Obj(), base().Label("a", "b").Obj(), false},
		{"terminating still counts", base().Obj(), base().Terminating().Obj(), false},
		{"pending to running", base().Phase(corev1.PodPending).Obj(), base().Obj(), false},
		{"running to succeeded", base().Obj(), base().Phase(corev1.PodSucceeded).Obj(), true},
		{"running to failed", base().Obj(), base().Phase(corev1.PodFailed).Obj(), true},
		{"moved to another node", base().Obj(), base().Node("m").Obj(), true},
		{"resized", base().Obj(), testutil.Pod("p").Node("n").Requests("cpu", "300m").Limits("cpu", "500m").Obj(), true},
		{"limit resized", base().Obj(), testutil.Pod("p").Node("n").Requests("cpu", "250m").Limits("cpu", "1").Obj(), true},
		{"resize status only", base().Obj(), base().StatusRequests("c0", "cpu", "1").Obj(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podChanged(podcache.FromPod(tt.old), podcache.FromPod(tt.new)); got != tt.want {
				t.Errorf("podChanged = %v, want %v", got, tt.want)
			}
		})
	}
}

func withReady(p *corev1.Pod) *corev1.Pod {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}
