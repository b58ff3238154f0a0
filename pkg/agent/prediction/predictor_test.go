package prediction

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestWithMargin(t *testing.T) {
	for _, tt := range []struct {
		peak   Resources
		margin int64
		want   Resources
	}{
		{Resources{1000, 1 << 30}, 0, Resources{1000, 1 << 30}},
		{Resources{1000, 1 << 30}, 10, Resources{1100, 1181116007}}, // 1073741824 x 1.1 = 1181116006.4, rounded up
		{Resources{333, 3}, 10, Resources{367, 4}},                  // 366.3 and 3.3 rounded up
	} {
		if got := WithMargin(tt.peak, tt.margin); got != tt.want {
			t.Errorf("WithMargin(%+v, %d) = %+v, want %+v", tt.peak, tt.margin, got, tt.want)
		}
	}
}

// TestPodReclaimable: each warm pod adds what it requested above its peak with the margin; a pod using more than it
// requested adds nothing (it does not take from the others), and a cold pod adds nothing.
func TestPodReclaimable(t *testing.T) {
	gi := int64(1 << 30)
	pods := []PodTerm{
		{Request: Resources{4000, 8 * gi}, Peak: Resources{1000, 2 * gi}, Warm: true},  // 4000-1100, 8Gi-2.2Gi
		{Request: Resources{1000, 1 * gi}, Peak: Resources{2000, 2 * gi}, Warm: true},  // over its request: 0
		{Request: Resources{8000, 16 * gi}, Peak: Resources{100, 1 * gi}, Warm: false}, // cold: 0
	}
	got := PodReclaimable(pods, 10)
	want := Resources{MilliCPU: 2900, MemoryBytes: 8*gi - WithMargin(Resources{MemoryBytes: 2 * gi}, 10).MemoryBytes}
	if got != want {
		t.Errorf("PodReclaimable = %+v, want %+v", got, want)
	}
	if got := PodReclaimable(nil, 10); got != (Resources{}) {
		t.Errorf("no pods: %+v, want zero", got)
	}
}

// TestPriorityReclaimable: requests less the system and prod peaks together with the margin, floored at zero; cold
// reclaims nothing.
func TestPriorityReclaimable(t *testing.T) {
	req := Resources{10000, 20 << 30}
	sys, prod := Resources{1000, 2 << 30}, Resources{3000, 6 << 30}
	got := PriorityReclaimable(req, sys, prod, true, 25)
	want := Resources{10000 - 5000, 20<<30 - 10<<30}
	if got != want {
		t.Errorf("PriorityReclaimable = %+v, want %+v", got, want)
	}
	if got := PriorityReclaimable(Resources{1000, 1 << 30}, sys, prod, true, 25); got != (Resources{}) {
		t.Errorf("peaks above the requests: %+v, want zero", got)
	}
	if got := PriorityReclaimable(req, sys, prod, false, 25); got != (Resources{}) {
		t.Errorf("cold: %+v, want zero", got)
	}
}

func TestReclaimableIsTheSmaller(t *testing.T) {
	got := Reclaimable(Resources{3000, 5 << 30}, Resources{4000, 1 << 30})
	if want := (Resources{3000, 1 << 30}); got != want {
		t.Errorf("Reclaimable = %+v, want %+v", got, want)
	}
	l := got.List()
	if l.Cpu().MilliValue() != 3000 || l.Memory().Value() != 1<<30 || len(l) != 2 {
		t.Errorf("List = %v", l)
	}
	if _, ok := l[corev1.ResourceCPU]; !ok {
		t.Error("List has no cpu")
	}
}
