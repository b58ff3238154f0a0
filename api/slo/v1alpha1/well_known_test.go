package v1alpha1

import (
	"testing"

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
