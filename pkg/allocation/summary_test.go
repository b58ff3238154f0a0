package allocation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

func TestPercent(t *testing.T) {
	tests := []struct {
		name              string
		resource          corev1.ResourceName
		used, allocatable string
		want              int64
		wantOK            bool
	}{
		{"describe node example cpu requests", "cpu", "2632m", "4", 65, true},
		{"describe node example cpu limits over 100%", "cpu", "5110m", "4", 127, true},
		{"describe node example memory", "memory", "2237Mi", "7599548Ki", 30, true},
		{"describe node example memory limits", "memory", "7223Mi", "7599548Ki", 97, true},
		// 29/100 is 0.29, times 100 is 28.999999999999996 in float64: kubectl prints 28, not 29.
		{"float truncation as kubectl does it", "memory", "29", "100", 28, true},
		{"cpu counts millicores", "cpu", "1m", "3", 0, true},
		{"cpu below a millicore rounds up first", "cpu", "100u", "100m", 1, true},
		{"exactly full", "ephemeral-storage", "10Gi", "10Gi", 100, true},
		{"zero allocatable", "cpu", "1", "0", 0, false},
		{"extended resource", "kubernetes.io/batch-cpu", "1500", "6000", 25, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Percent(tt.resource, resource.MustParse(tt.used), resource.MustParse(tt.allocatable))
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Percent(%s, %s, %s) = %d, %v; want %d, %v", tt.resource, tt.used, tt.allocatable, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// row is a Row in strings, for readable wants.
type row struct {
	Resource, Requests, Limits string
	ReqPct, LimPct             *int64
	KubectlPercent             bool
}

func rowsOf(rows []Row) []row {
	out := make([]row, 0, len(rows))
	for _, r := range rows {
		out = append(out, row{string(r.Resource), r.Requests.String(), r.Limits.String(), r.RequestsPercent, r.LimitsPercent, r.KubectlPercent})
	}
	return out
}

func pct(v int64) *int64 { return &v }

func TestSummarize(t *testing.T) {
	node := testutil.Node("n1").
		Capacity("cpu", "8", "memory", "16Gi", "pods", "110").
		Allocatable("cpu", "4", "memory", "8Gi", "ephemeral-storage", "100Gi", "pods", "110",
			"hugepages-2Mi", "1Gi", "hugepages-1Gi", "0", "example.com/gpu", "4", "kubernetes.io/batch-cpu", "6000").Obj()
	pods := []corev1.Pod{
		*testutil.Pod("web").Node("n1").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "2", "memory", "2Gi").Obj(),
		*testutil.Pod("gpu").Node("n1").Requests("cpu", "500m", "example.com/gpu", "1", "hugepages-2Mi", "256Mi").Limits("example.com/gpu", "1", "hugepages-2Mi", "256Mi").Obj(),
		*testutil.Pod("batch").Node("n1").Requests("kubernetes.io/batch-cpu", "1500").Limits("kubernetes.io/batch-cpu", "1500").Obj(),
		*testutil.Pod("pending").Node("n1").Phase(corev1.PodPending).Requests("cpu", "250m").Obj(),
		*testutil.Pod("terminating").Node("n1").Terminating().Requests("memory", "512Mi").Obj(),
		*testutil.Pod("unoffered").Node("n1").Requests("example.com/fpga", "1").Limits("example.com/fpga", "1").Obj(),
		*testutil.Pod("done").Node("n1").Phase(corev1.PodSucceeded).Requests("cpu", "3").Obj(),
		*testutil.Pod("crashed").Node("n1").Phase(corev1.PodFailed).Requests("cpu", "3").Obj(),
		*testutil.Pod("elsewhere").Node("n2").Requests("cpu", "3").Obj(),
		*testutil.Pod("unbound").Requests("cpu", "3").Obj(),
	}
	s := Summarize(node, pods)
	if s.Pods != 6 {
		t.Errorf("pods counted = %d, want 6", s.Pods)
	}
	want := []row{
		{"cpu", "1750m", "2", pct(43), pct(50), true},
		{"memory", "1536Mi", "2Gi", pct(18), pct(25), true},
		{"ephemeral-storage", "0", "0", pct(0), pct(0), true},
		{"hugepages-1Gi", "0", "0", nil, nil, true},
		{"hugepages-2Mi", "256Mi", "256Mi", pct(25), pct(25), true},
		{"example.com/gpu", "1", "1", pct(25), pct(25), false},
		{"kubernetes.io/batch-cpu", "1500", "1500", pct(25), pct(25), false},
	}
	if d := cmp.Diff(want, rowsOf(s.Rows())); d != "" {
		t.Errorf("rows (-want +got):\n%s", d)
	}
	// A resource the node does not offer is no row, but the totals keep it; pods is never summed.
	if q := s.Requests["example.com/fpga"]; q.Value() != 1 {
		t.Errorf("requests of an unoffered resource = %s, want 1", q.String())
	}
	if _, ok := s.Requests[corev1.ResourcePods]; ok {
		t.Error("pods appears in the requests")
	}

	st := s.Status()
	if st.RequestsPercent["cpu"] != 43 || st.LimitsPercent["memory"] != 25 || st.RequestsPercent["kubernetes.io/batch-cpu"] != 25 {
		t.Errorf("status percentages = %v / %v", st.RequestsPercent, st.LimitsPercent)
	}
	if _, ok := st.RequestsPercent["hugepages-1Gi"]; ok {
		t.Error("a percentage of a zero allocatable is in the status")
	}
	if _, ok := st.RequestsPercent["example.com/fpga"]; ok {
		t.Error("a percentage of an unoffered resource is in the status")
	}
	if d := cmp.Diff(rowsOf(s.Rows()), rowsOf(SummaryFromStatus(st).Rows())); d != "" {
		t.Errorf("rows do not survive the status round trip (-direct +from status):\n%s", d)
	}
}

func TestSummarizeEdgeCases(t *testing.T) {
	tests := []struct {
		name string
		node *corev1.Node
		pods []corev1.Pod
		want []row
	}{
		{
			name: "capacity is the denominator when allocatable is empty",
			node: testutil.Node("n").Capacity("cpu", "2", "memory", "4Gi").Obj(),
			pods: []corev1.Pod{*testutil.Pod("p").Node("n").Requests("cpu", "1", "memory", "1Gi").Obj()},
			want: []row{
				{"cpu", "1", "0", pct(50), pct(0), true},
				{"memory", "1Gi", "0", pct(25), pct(0), true},
				{"ephemeral-storage", "0", "0", nil, nil, true},
			},
		},
		{
			name: "a node without pods or resources still has kubectl's three rows",
			node: testutil.Node("n").Obj(),
			want: []row{
				{"cpu", "0", "0", nil, nil, true},
				{"memory", "0", "0", nil, nil, true},
				{"ephemeral-storage", "0", "0", nil, nil, true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, rowsOf(Summarize(tt.node, tt.pods).Rows())); d != "" {
				t.Errorf("rows (-want +got):\n%s", d)
			}
		})
	}
}

func TestSummaryFromEmptyStatus(t *testing.T) {
	s := SummaryFromStatus(slov1alpha1.NodeAllocationStatus{})
	if len(s.Rows()) != 3 || s.Requests == nil || s.Limits == nil || s.Allocatable == nil {
		t.Errorf("empty status gave %+v", s)
	}
}
