package v1alpha1_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// record is what a test reads of a PodRecord.
type record struct {
	UID, Namespace, Name, String string
	Priority                     slov1alpha1.PriorityClass
	CPU, Memory                  string // "" when the record has none
}

func records(s *slov1alpha1.NodeMetricStatus) []record {
	var out []record
	for i := range s.PodRecords() {
		p := s.PodRecord(i)
		r := record{UID: p.UID, Namespace: p.Namespace, Name: p.Name, String: p.String(), Priority: p.Priority}
		if q, ok := p.Usage(corev1.ResourceCPU); ok {
			r.CPU = q.String()
		}
		if q, ok := p.Usage(corev1.ResourceMemory); ok {
			r.Memory = q.String()
		}
		out = append(out, r)
	}
	return out
}

// A report is read from podUsages when it has any, else from podsMetric (an agent from before podUsages), with the
// same priority and usage either way.
func TestPodRecords(t *testing.T) {
	q := resource.MustParse
	old := []slov1alpha1.PodMetricInfo{
		{Name: "web", Namespace: "shop", UID: "u-web", Priority: slov1alpha1.PriorityProd, QoS: slov1alpha1.QoSLS,
			Usage: corev1.ResourceList{"cpu": q("250m"), "memory": q("512Mi")}},
		{Name: "job", Namespace: "shop", UID: "u-job", Priority: slov1alpha1.PriorityNone, QoS: slov1alpha1.QoSBE,
			Usage: corev1.ResourceList{"cpu": q("1")}},
	}
	compact := []slov1alpha1.PodUsage{
		slov1alpha1.NewPodUsage("u-web", old[0].EffectivePriority(), old[0].Usage, nil),
		slov1alpha1.NewPodUsage("u-job", old[1].EffectivePriority(), old[1].Usage, nil),
	}
	tests := []struct {
		name   string
		status slov1alpha1.NodeMetricStatus
		want   []record
	}{
		{name: "an agent from before podUsages", status: slov1alpha1.NodeMetricStatus{PodsMetric: old}, want: []record{
			{UID: "u-web", Namespace: "shop", Name: "web", String: "shop/web", Priority: slov1alpha1.PriorityProd, CPU: "250m", Memory: "512Mi"},
			{UID: "u-job", Namespace: "shop", Name: "job", String: "shop/job", Priority: slov1alpha1.PriorityBatch, CPU: "1"},
		}},
		{name: "podUsages", status: slov1alpha1.NodeMetricStatus{PodUsages: compact}, want: []record{
			{UID: "u-web", String: "uid u-web", Priority: slov1alpha1.PriorityProd, CPU: "250m", Memory: "512Mi"},
			{UID: "u-job", String: "uid u-job", Priority: slov1alpha1.PriorityBatch, CPU: "1", Memory: "0"},
		}},
		{name: "podUsages win over podsMetric", status: slov1alpha1.NodeMetricStatus{PodsMetric: old, PodUsages: compact[:1]}, want: []record{
			{UID: "u-web", String: "uid u-web", Priority: slov1alpha1.PriorityProd, CPU: "250m", Memory: "512Mi"},
		}},
		{name: "no pods", status: slov1alpha1.NodeMetricStatus{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, records(&tt.status)); d != "" {
				t.Errorf("records (-want +got):\n%s", d)
			}
		})
	}
	if compact[0].Priority != "" || compact[1].Priority != slov1alpha1.PriorityBatch {
		t.Errorf("priorities written %q %q, want prod left out and batch", compact[0].Priority, compact[1].Priority)
	}
}

// Reading a record allocates nothing: the manager reads every record of every report.
func TestPodRecordAllocatesNothing(t *testing.T) {
	s := &slov1alpha1.NodeMetricStatus{PodUsages: []slov1alpha1.PodUsage{{UID: "u", CPUMillis: 250, MemoryBytes: 1 << 30}}}
	var sum int64
	allocs := testing.AllocsPerRun(100, func() {
		for i := range s.PodRecords() {
			q, _ := s.PodRecord(i).Usage(corev1.ResourceCPU)
			sum += q.MilliValue()
		}
	})
	if allocs != 0 || sum == 0 {
		t.Errorf("%v allocations per read, want 0", allocs)
	}
}
