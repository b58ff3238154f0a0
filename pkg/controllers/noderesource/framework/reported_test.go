package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gleaner-sh/gleaner/test/testutil"
)

// TestUsageIsHeldToCapacity: Usage on a node of 8 cores and 16Gi, including the quantities whose MilliValue or
// Value wrap (1E CPU, 1e30 bytes, 2^63 bytes).
func TestUsageIsHeldToCapacity(t *testing.T) {
	in := &Input{Node: testutil.Node("n").Capacity("cpu", "8", "memory", "16Gi").Obj()}
	tests := []struct {
		r       corev1.ResourceName
		q       string
		want    int64
		clamped bool
	}{
		{corev1.ResourceCPU, "1500m", 1500, false},
		{corev1.ResourceCPU, "8", 8000, false}, // exactly the capacity
		{corev1.ResourceCPU, "0", 0, false},
		{corev1.ResourceCPU, "0.0001", 1, false}, // below a millicore, rounded up as MilliValue does
		{corev1.ResourceCPU, "8001m", 8000, true},
		{corev1.ResourceCPU, "-1m", 0, true},
		{corev1.ResourceCPU, "1E", 8000, true},
		{corev1.ResourceCPU, "9223372036854775807", 8000, true},
		{corev1.ResourceMemory, "3Gi", 3 << 30, false},
		{corev1.ResourceMemory, "1e30", 16 << 30, true},
		{corev1.ResourceMemory, "8Ei", 16 << 30, true},
		{corev1.ResourceMemory, "-1", 0, true},
		{"example.com/gpu", "1", 0, true}, // the node has none of it
	}
	for _, tt := range tests {
		got, clamped := in.clamp(resource.MustParse(tt.q), tt.r)
		if got != tt.want || clamped != tt.clamped {
			t.Errorf("%s %s: got %d (clamped %v), want %d (clamped %v)", tt.r, tt.q, got, clamped, tt.want, tt.clamped)
		}
		if u := in.Usage(resource.MustParse(tt.q), tt.r); u != tt.want {
			t.Errorf("Usage(%s %s) = %d, want %d", tt.r, tt.q, u, tt.want)
		}
	}
	if w := in.OutOfRange(corev1.ResourceCPU); w != "" {
		t.Errorf("OutOfRange without a NodeMetric = %q, want none", w)
	}
}
