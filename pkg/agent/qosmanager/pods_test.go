package qosmanager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

func TestIsBestEffort(t *testing.T) {
	meta := func(p *corev1.Pod) *statesinformer.PodMeta {
		c := slov1alpha1.ClassOf(p)
		return &statesinformer.PodMeta{Pod: p, QoS: c.QoS, Priority: c.Priority, KubeQoS: c.KubeQoS}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"BE label", tu.Pod("a").Label(slov1alpha1.LabelQoSClass, "BE").Container("c").Requests("cpu", "1").Obj(), true},
		{"batch band", tu.Pod("b").Priority(5500).Container("c").Requests("cpu", "1").Obj(), true},
		{"free band", tu.Pod("c").Priority(3500).Container("c").Requests("cpu", "1").Obj(), true},
		{"Kubernetes BestEffort, no label: BE", tu.Pod("d").Container("c").Obj(), true},
		{"prod band, burstable", tu.Pod("e").Priority(9500).Container("c").Requests("cpu", "1").Obj(), false},
		{"LS label", tu.Pod("f").Label(slov1alpha1.LabelQoSClass, "LS").Container("c").Obj(), false},
		{"system-node-critical BestEffort", tu.Pod("g").Priority(2000001000).Container("c").Obj(), false},
		{"static pod's mirror, BE label", tu.Pod("h").Label(slov1alpha1.LabelQoSClass, "BE").Annotation("kubernetes.io/config.mirror", "x").Container("c").Obj(), false},
	}
	for _, tt := range tests {
		if got := IsBestEffort(meta(tt.pod)); got != tt.want {
			t.Errorf("%s: IsBestEffort = %v, want %v", tt.name, got, tt.want)
		}
	}
}
