package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// explained returns a node carrying batch-cpu 1200 and the explanation the noderesource controller would write.
func explained(name string, published string) *corev1.Node {
	v, mem := resource.MustParse("1200"), resource.MustParse("5905580032")
	metricTime := metav1.NewTime(time.Date(2026, 11, 22, 11, 59, 30, 0, time.UTC))
	exp := slov1alpha1.NodeResourceExplanation{
		UpdateTime: metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)),
		Strategy:   "nodeConfigs gray",
		Resources: []slov1alpha1.ResourceDerivation{
			{
				Resource: slov1alpha1.BatchCPU, Plugin: "batch", Value: &v, MetricTime: &metricTime,
				Formula: "min(max(capacity - safetyMargin - systemUsed - hpUsed, 0), cap), at least batchHeld; policy usage",
				Terms: []slov1alpha1.DerivationTerm{
					{Name: "capacity", Value: resource.MustParse("4"), Detail: "node status.capacity"},
					{Name: "safetyMargin", Value: resource.MustParse("1600m"), Detail: "(100 - reclaimThresholdPercent 60)% of capacity"},
					{Name: "annotationReserved", Value: resource.MustParse("2"), Detail: "node annotation node.koordinator.sh/reservation"},
					{Name: "hpUnattributed", Value: resource.MustParse("300m"), Detail: "usage of 1 NodeMetric pods not active in the manager's cache (0 batch/free left out)"},
					{Name: "hpUsed", Value: resource.MustParse("800m"), Detail: "usage of 3 high-priority pods (1 LSE at CPU request), 1 without metric at request, plus hpUnattributed"},
				},
				Zones: map[string]resource.Quantity{"node-1": resource.MustParse("600"), "node-0": resource.MustParse("600")},
			},
			{
				Resource: slov1alpha1.BatchMemory, Plugin: "batch", Value: &mem, MetricTime: &metricTime,
				Terms: []slov1alpha1.DerivationTerm{{Name: "capacity", Value: resource.MustParse("16Gi")}},
			},
			{Resource: slov1alpha1.MidCPU, Plugin: "mid", Reason: "NodeMetric n reports no prod reclaimable resources"},
		},
	}
	raw, _ := json.Marshal(exp)
	n := testutil.Node(name).Allocatable("cpu", "4", string(slov1alpha1.BatchCPU), published, string(slov1alpha1.BatchMemory), "5905580032").Obj()
	n.Annotations = map[string]string{slov1alpha1.AnnotationResourceExplanation: string(raw)}
	return n
}

func TestExplainPrintsTheDerivation(t *testing.T) {
	e := env.Start(t)
	e.CreateNode(t, explained("explain-a", "1200"))
	out, _, err := glean(t, "--kubeconfig", e.Kubeconfig, "explain", "explain-a")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Node explain-a: published 2026-11-22 12:00:00 UTC",
		"colocation strategy: nodeConfigs gray",
		"kubernetes.io/batch-cpu = 1200 millicores (1200m CPU)  (plugin batch, NodeMetric of 11:59:30, 30s before publishing)",
		"policy usage",
		"safetyMargin        1600m  (100 - reclaimThresholdPercent 60)% of capacity",
		"annotationReserved  2      node annotation node.koordinator.sh/reservation",
		"hpUnattributed      300m   usage of 1 NodeMetric pods not active in the manager's cache (0 batch/free left out)",
		"hpUsed              800m   usage of 3 high-priority pods (1 LSE at CPU request), 1 without metric at request, plus hpUnattributed",
		"per NUMA zone: node-0=600, node-1=600",
		"kubernetes.io/batch-memory = 5905580032 bytes (≈5.50Gi)",
		"kubernetes.io/mid-cpu: not offered (plugin mid)\n  NodeMetric n reports no prod reclaimable resources",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "warning") {
		t.Errorf("a node carrying the explained values must not warn:\n%s", out)
	}
}

func TestExplainWarnsWhenTheNodeDisagrees(t *testing.T) {
	e := env.Start(t)
	e.CreateNode(t, explained("explain-edited", "9999"))
	out, _, err := glean(t, "--kubeconfig", e.Kubeconfig, "explain", "explain-edited")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "warning: the node carries 9999, not this value") {
		t.Errorf("no warning for a hand-edited value:\n%s", out)
	}
}

func TestExplainJSON(t *testing.T) {
	e := env.Start(t)
	e.CreateNode(t, explained("explain-json", "1200"))
	out, _, err := glean(t, "--kubeconfig", e.Kubeconfig, "explain", "explain-json", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got []Explanation
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("-o json is not JSON: %v\n%s", err, out)
	}
	if len(got) != 1 || got[0].Node != "explain-json" || len(got[0].Explanation.Resources) != 3 {
		t.Fatalf("unexpected JSON: %+v", got)
	}
	want := resource.MustParse("1200")
	if q := got[0].Published[slov1alpha1.BatchCPU]; q.Cmp(want) != 0 {
		t.Errorf("published batch-cpu = %s, want 1200", q.String())
	}
	if diff := cmp.Diff("nodeConfigs gray", got[0].Explanation.Strategy); diff != "" {
		t.Error(diff)
	}
}

func TestExplainErrors(t *testing.T) {
	e := env.Start(t)
	e.CreateNode(t, testutil.Node("explain-none").Allocatable("cpu", "1").Obj())
	bad := explained("explain-bad", "1")
	bad.Annotations[slov1alpha1.AnnotationResourceExplanation] = "{not json"
	e.CreateNode(t, bad)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"explain", "explain-none"}, "node explain-none has no noderesource.gleaner.sh/explanation annotation"},
		{[]string{"explain", "explain-nosuch"}, `node "explain-nosuch" not found`},
		{[]string{"explain", "explain-bad"}, "node explain-bad: decoding its noderesource.gleaner.sh/explanation annotation"},
		{[]string{"explain", "explain-none", "-o", "wide"}, `-o "wide": want json or yaml`},
		{[]string{"explain"}, "requires at least 1 arg"},
	}
	for _, tt := range tests {
		_, _, err := glean(t, append([]string{"--kubeconfig", e.Kubeconfig}, tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: want an error containing %q, got %v", tt.args, tt.want, err)
		}
	}
}
