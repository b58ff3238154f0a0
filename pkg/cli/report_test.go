package cli

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/allocation"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

func TestParseSortBy(t *testing.T) {
	tests := []struct {
		in      string
		want    sortKey
		wantErr bool
	}{
		{in: "", want: sortKey{}},
		{in: "name", want: sortKey{}},
		{in: "cpu.requests", want: sortKey{resource: "cpu"}},
		{in: "memory.limits", want: sortKey{resource: "memory", limits: true}},
		{in: "kubernetes.io/batch-cpu.requests", want: sortKey{resource: "kubernetes.io/batch-cpu"}},
		{in: "cpu", wantErr: true},
		{in: ".requests", wantErr: true},
		{in: "cpu.usage", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseSortBy(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseSortBy(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), "want name, RESOURCE.requests or RESOURCE.limits") {
				t.Errorf("parseSortBy(%q) error %q does not say what is accepted", tt.in, err)
			}
			continue
		}
		if got != tt.want {
			t.Errorf("parseSortBy(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// cluster is three nodes: a is half full of CPU, b a quarter, c 65.9%, which truncates to the same 65 as 65.1%.
func cluster() ([]corev1.Node, []corev1.Pod) {
	nodes := []corev1.Node{
		*testutil.Node("b").Allocatable("cpu", "4", "memory", "4Gi").Obj(),
		*testutil.Node("a").Allocatable("cpu", "4", "memory", "8Gi").Obj(),
		*testutil.Node("c").Allocatable("cpu", "1000", "memory", "1Gi").Obj(),
	}
	pods := []corev1.Pod{
		*testutil.Pod("a1").Namespace("web").Node("a").Requests("cpu", "1500m").Obj(),
		*testutil.Pod("a2").Namespace("db").Node("a").Requests("cpu", "500m", "memory", "2Gi").Obj(),
		*testutil.Pod("b1").Namespace("web").Node("b").Requests("cpu", "1", "memory", "3Gi").Limits("memory", "3Gi").Obj(),
		*testutil.Pod("c1").Namespace("web").Node("c").Requests("cpu", "659").Obj(),
		*testutil.Pod("done").Namespace("web").Node("c").Phase(corev1.PodSucceeded).Requests("cpu", "300").Obj(),
		*testutil.Pod("x").Namespace("web").Node("gone").Requests("cpu", "1").Obj(),
	}
	return nodes, pods
}

func names(reports []NodeReport) []string {
	var out []string
	for _, r := range reports {
		out = append(out, r.Name)
	}
	return out
}

func TestSortReports(t *testing.T) {
	nodes, pods := cluster()
	tests := []struct {
		sortBy string
		want   []string
	}{
		{"name", []string{"a", "b", "c"}},
		{"cpu.requests", []string{"c", "a", "b"}},
		{"memory.requests", []string{"b", "a", "c"}},
		{"memory.limits", []string{"b", "a", "c"}},
		{"example.com/gpu.requests", []string{"a", "b", "c"}}, // nobody has any: by name
	}
	for _, tt := range tests {
		reports := liveReports(nodes, pods, true, "")
		key, err := parseSortBy(tt.sortBy)
		if err != nil {
			t.Fatal(err)
		}
		sortReports(reports, key)
		if d := cmp.Diff(tt.want, names(reports)); d != "" {
			t.Errorf("--sort-by %s (-want +got):\n%s", tt.sortBy, d)
		}
	}
	// Pods inside a node follow the key too: on a, a1 (1500m) before a2 (500m); by name a2 (db) comes first.
	reports := liveReports(nodes, pods, true, "")
	sortReports(reports, sortKey{resource: "cpu"})
	if a := reports[1]; a.Name != "a" || a.Pods[0].Name != "a1" {
		t.Errorf("pods on a by cpu requests: %+v", a.Pods)
	}
	sortReports(reports, sortKey{})
	if a := reports[0]; a.Pods[0].Name != "a2" {
		t.Errorf("pods on a by name: %+v", a.Pods)
	}
}

func TestLiveReports(t *testing.T) {
	nodes, pods := cluster()
	reports := liveReports(nodes, pods, true, "web")
	sortReports(reports, sortKey{})
	a := reports[0]
	if a.PodCount != 2 {
		t.Errorf("node a counts %d pods, want 2 (every namespace)", a.PodCount)
	}
	if len(a.Pods) != 1 || a.Pods[0].Name != "a1" {
		t.Errorf("node a lists %+v, want only web/a1", a.Pods)
	}
	if got := a.Resources[0]; got.Name != "cpu" || got.Requests.String() != "2" || *got.RequestsPercent != 50 {
		t.Errorf("node a cpu row = %+v, want 2 (50%%) counting both namespaces", got)
	}
	c := reports[2]
	if c.PodCount != 1 || len(c.Pods) != 1 {
		t.Errorf("node c: %d pods counted, %d listed; the succeeded pod must not count", c.PodCount, len(c.Pods))
	}
	if p := c.Pods[0]; p.RequestsPercent["cpu"] != 65 || p.QoSClass != corev1.PodQOSBurstable {
		t.Errorf("pod c1 = %+v", p)
	}
	// Without --pods no pod rows.
	for _, r := range liveReports(nodes, pods, false, "") {
		if r.Pods != nil {
			t.Errorf("node %s lists pods without --pods", r.Name)
		}
	}
}

func TestStoredReports(t *testing.T) {
	nodes, pods := cluster()
	now := metav1.Now()
	var allocs []slov1alpha1.NodeAllocation
	for i := range nodes[:2] {
		st := allocation.Summarize(&nodes[i], pods).Status()
		st.UpdateTime = &now
		allocs = append(allocs, slov1alpha1.NodeAllocation{ObjectMeta: metav1.ObjectMeta{Name: nodes[i].Name}, Status: st})
	}
	reports, missing := storedReports(nodes, allocs)
	if d := cmp.Diff([]string{"c"}, missing); d != "" {
		t.Errorf("missing (-want +got):\n%s", d)
	}
	live := liveReports(nodes[:2], pods, false, "")
	if len(reports) != 2 {
		t.Fatalf("%d reports, want 2", len(reports))
	}
	for i := range reports {
		if reports[i].UpdateTime == nil {
			t.Errorf("node %s: no update time from the NodeAllocation", reports[i].Name)
		}
		reports[i].UpdateTime = nil
	}
	if d := cmp.Diff(live, reports, quantityEqual, cmp.AllowUnexported(NodeReport{})); d != "" {
		t.Errorf("stored and live reports differ (-live +stored):\n%s", d)
	}
}
