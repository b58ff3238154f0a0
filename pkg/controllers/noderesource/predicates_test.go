package noderesource

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

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
	}
	for _, tt := range tests {
		if got := (podChanged{}).Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tt.new}); got != tt.want {
			t.Errorf("%s: Update = %v, want %v", tt.name, got, tt.want)
		}
	}
}
