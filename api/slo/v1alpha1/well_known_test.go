package v1alpha1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestPriorityClassOf(t *testing.T) {
	tests := []struct {
		priority *int32
		want     PriorityClass
	}{
		{nil, PriorityNone},
		{ptr.To[int32](0), PriorityNone},
		{ptr.To[int32](2999), PriorityNone},
		{ptr.To[int32](3000), PriorityFree},
		{ptr.To[int32](3999), PriorityFree},
		{ptr.To[int32](4000), PriorityNone},
		{ptr.To[int32](5000), PriorityBatch},
		{ptr.To[int32](5999), PriorityBatch},
		{ptr.To[int32](7000), PriorityMid},
		{ptr.To[int32](7999), PriorityMid},
		{ptr.To[int32](9000), PriorityProd},
		{ptr.To[int32](9999), PriorityProd},
		{ptr.To[int32](10000), PriorityNone},
		{ptr.To[int32](2000000000), PriorityNone}, // system-cluster-critical
	}
	for _, tt := range tests {
		if got := PriorityClassOf(tt.priority); got != tt.want {
			t.Errorf("PriorityClassOf(%v) = %q, want %q", ptr.Deref(tt.priority, -1), got, tt.want)
		}
	}
}

func TestQoSClassOf(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   QoSClass
	}{
		{"no labels", nil, QoSNone},
		{"gleaner label", map[string]string{LabelQoSClass: "BE"}, QoSBE},
		{"alias label", map[string]string{LabelQoSClassAlias: "LSR"}, QoSLSR},
		{"gleaner label wins over the alias", map[string]string{LabelQoSClass: "LS", LabelQoSClassAlias: "BE"}, QoSLS},
		{"unknown value", map[string]string{LabelQoSClass: "gold"}, QoSNone},
		{"case matters", map[string]string{LabelQoSClass: "be"}, QoSNone},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{}
		pod.Labels = tt.labels
		if got := QoSClassOf(pod); got != tt.want {
			t.Errorf("%s: QoSClassOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}
