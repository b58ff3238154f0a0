package allocation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestInUnit(t *testing.T) {
	tests := []struct {
		name     corev1.ResourceName
		quantity string
		want     float64
		wantUnit Unit
	}{
		{"cpu", "1500m", 1.5, Cores},
		{"kubernetes.io/batch-cpu", "1500", 1.5, Cores},
		{"kubernetes.io/mid-cpu", "250", 0.25, Cores},
		{"memory", "1Gi", 1 << 30, Bytes},
		{"kubernetes.io/batch-memory", "2Gi", 2 << 30, Bytes},
		{"kubernetes.io/mid-memory", "1Mi", 1 << 20, Bytes},
		{"ephemeral-storage", "10G", 10e9, Bytes},
		{"hugepages-2Mi", "4Mi", 4 << 20, Bytes},
		{"nvidia.com/gpu", "2", 2, Count},
		{"pods", "110", 110, Count},
	}
	for _, tt := range tests {
		got, unit := InUnit(tt.name, resource.MustParse(tt.quantity))
		if got != tt.want || unit != tt.wantUnit {
			t.Errorf("InUnit(%s, %s) = %v %s, want %v %s", tt.name, tt.quantity, got, unit, tt.want, tt.wantUnit)
		}
	}
}
