package nodeallocation

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gleaner-sh/gleaner/pkg/allocation"
)

func resources(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// TestAllocatedMetricsOneUnitEach: each resource's requests and limits land in the family of its unit, in that
// unit (batch-cpu's millicores as cores); the deprecated families keep the mixed values; a resource the node no
// longer has and a node that went lose their series in every family.
func TestAllocatedMetricsOneUnitEach(t *testing.T) {
	m := newMetrics()
	if err := m.register(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	m.set("n1", allocation.Summary{
		Requests: resources("cpu", "1500m", "memory", "1Gi", "ephemeral-storage", "0", "hugepages-2Mi", "4Mi",
			"kubernetes.io/batch-cpu", "2500", "kubernetes.io/batch-memory", "2Gi", "nvidia.com/gpu", "2"),
		Limits: resources("cpu", "3", "memory", "0", "ephemeral-storage", "0", "hugepages-2Mi", "0",
			"kubernetes.io/batch-cpu", "4000", "kubernetes.io/batch-memory", "0", "nvidia.com/gpu", "2"),
	})
	tests := []struct {
		vec      *prometheus.GaugeVec
		resource string
		want     float64
	}{
		{m.requests[allocation.Cores], "cpu", 1.5},
		{m.requests[allocation.Cores], "kubernetes.io/batch-cpu", 2.5},
		{m.requests[allocation.Bytes], "memory", 1 << 30},
		{m.requests[allocation.Bytes], "hugepages-2Mi", 4 << 20},
		{m.requests[allocation.Bytes], "ephemeral-storage", 0},
		{m.requests[allocation.Bytes], "kubernetes.io/batch-memory", 2 << 30},
		{m.requests[allocation.Count], "nvidia.com/gpu", 2},
		{m.limits[allocation.Cores], "cpu", 3},
		{m.limits[allocation.Cores], "kubernetes.io/batch-cpu", 4},
		{m.oldRequests, "kubernetes.io/batch-cpu", 2500},
		{m.oldRequests, "cpu", 1.5},
		{m.oldLimits, "kubernetes.io/batch-cpu", 4000},
	}
	for _, tt := range tests {
		if got := promtest.ToFloat64(tt.vec.WithLabelValues("n1", tt.resource)); got != tt.want {
			t.Errorf("%s = %v, want %v", tt.resource, got, tt.want)
		}
	}
	count := func(v *prometheus.GaugeVec) int { return promtest.CollectAndCount(v) }
	if c, b, e := count(m.requests[allocation.Cores]), count(m.requests[allocation.Bytes]), count(m.requests[allocation.Count]); c != 2 || b != 4 || e != 1 {
		t.Errorf("requests series: %d in cores, %d in bytes, %d extended; want 2, 4, 1: a resource in another unit's family", c, b, e)
	}

	// A summary has the same resources in its requests and its limits (0 when no pod asks).
	m.set("n1", allocation.Summary{Requests: resources("cpu", "1", "memory", "1Gi"), Limits: resources("cpu", "0", "memory", "0")})
	if c, b, e, o := count(m.requests[allocation.Cores]), count(m.requests[allocation.Bytes]), count(m.requests[allocation.Count]), count(m.oldRequests); c != 1 || b != 1 || e != 0 || o != 2 {
		t.Errorf("after the node lost resources: %d, %d, %d, %d series (cores, bytes, extended, deprecated); want 1, 1, 0, 2", c, b, e, o)
	}
	if c, o := count(m.limits[allocation.Cores]), count(m.oldLimits); c != 1 || o != 2 {
		t.Errorf("limits series: %d in cores, %d deprecated; want 1 (cpu), 2 (cpu, memory)", c, o)
	}
	m.forget("n1")
	for u, v := range m.requests {
		if n := count(v); n != 0 {
			t.Errorf("%d %s series left after the node went", n, u)
		}
	}
	if n := count(m.oldRequests); n != 0 {
		t.Errorf("%d deprecated series left after the node went", n)
	}
}
