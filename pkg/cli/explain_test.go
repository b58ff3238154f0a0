package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// explained returns a node carrying batch-cpu published and the NodeResourceExplanation the noderesource
// controller would write for batch-cpu 1200.
func explained(name string, published string) (*corev1.Node, *slov1alpha1.NodeResourceExplanation) {
	v, mem := resource.MustParse("1200"), resource.MustParse("5905580032")
	metricTime := metav1.NewTime(time.Date(2026, 11, 22, 11, 59, 30, 0, time.UTC))
	exp := slov1alpha1.NodeResourceExplanationStatus{
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
	n := testutil.Node(name).Allocatable("cpu", "4", string(slov1alpha1.BatchCPU), published, string(slov1alpha1.BatchMemory), "5905580032").Obj()
	return n, &slov1alpha1.NodeResourceExplanation{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: exp}
}

// createExplained creates the node and its NodeResourceExplanation of explained.
func createExplained(t *testing.T, e *testenv.Env, name, published string) {
	t.Helper()
	node, exp := explained(name, published)
	e.CreateNode(t, node)
	createExplanation(t, e, exp)
}

// createExplanation creates exp with its status, as gleaner-manager does (the status subresource ignores the status
// of a create).
func createExplanation(t *testing.T, e *testenv.Env, exp *slov1alpha1.NodeResourceExplanation) {
	t.Helper()
	ctx := context.Background()
	status := exp.Status
	if err := e.Client.Create(ctx, exp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), exp) })
	exp.Status = status
	if err := e.Client.Status().Update(ctx, exp); err != nil {
		t.Fatal(err)
	}
}

func TestExplainPrintsTheDerivation(t *testing.T) {
	e := env.Start(t)
	createExplained(t, e, "explain-a", "1200")
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
	createExplained(t, e, "explain-edited", "9999")
	out, _, err := glean(t, "--kubeconfig", e.Kubeconfig, "explain", "explain-edited")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"warning: the node does not carry the values explained here (kubernetes.io/batch-cpu: the node carries 9999, explained as 1200). " +
			"gleaner-manager writes the explanation after the node: it lags behind a newer write, or writing it failed",
		"warning: the node carries 9999, not this value (see above)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = glean(t, "--kubeconfig", e.Kubeconfig, "explain", "explain-edited", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got []Explanation
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if want := []string{"kubernetes.io/batch-cpu: the node carries 9999, explained as 1200"}; len(got) != 1 || !cmp.Equal(got[0].Disagreements, want) {
		t.Errorf("-o json disagreements = %+v, want %q", got, want)
	}
}

func TestExplainJSON(t *testing.T) {
	e := env.Start(t)
	createExplained(t, e, "explain-json", "1200")
	out, _, err := glean(t, "--kubeconfig", e.Kubeconfig, "explain", "explain-json", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got []Explanation
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("-o json is not JSON: %v\n%s", err, out)
	}
	if len(got) != 1 || got[0].Node != "explain-json" || len(got[0].Explanation.Resources) != 3 || got[0].Disagreements != nil {
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
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"explain", "explain-none"}, "node explain-none has no NodeResourceExplanation: gleaner-manager's noderesource controller has not published"},
		{[]string{"explain", "explain-nosuch"}, `node "explain-nosuch" not found`},
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

// TestExplainAnnotations: the ratios are printed with how they were found and where they came from, and a node
// whose annotation is not the explained one is told apart, except for an annotation its plugin left as it was.
func TestExplainAnnotations(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{
		slov1alpha1.AnnotationCPUNormalizationRatio:      "1.20",
		slov1alpha1.AnnotationResourceAmplificationRatio: `{"cpu":1.20}`,
	}}}
	ratio := "1.25"
	exp := &slov1alpha1.NodeResourceExplanationStatus{Annotations: []slov1alpha1.AnnotationDerivation{
		{Annotation: slov1alpha1.AnnotationCPUNormalizationRatio, Plugin: "cpunormalization", Value: &ratio,
			Source: "cpu-normalization-config: nodeConfigs fast", Reason: "ratioModel[X].baseRatio (hyper-threading off, turbo off)"},
		{Annotation: slov1alpha1.AnnotationResourceAmplificationRatio, Plugin: "resourceamplification", Reason: slov1alpha1.AnnotationKeptPrefix + "boom"},
	}}
	e := explanationOf(node, exp)
	want := []string{"node.koordinator.sh/cpu-normalization-ratio: the node carries 1.20, explained as 1.25"}
	if d := cmp.Diff(want, e.Disagreements); d != "" {
		t.Errorf("disagreements (-want +got):\n%s", d)
	}
	var out strings.Builder
	printAnnotations(&out, exp.Annotations)
	for _, line := range []string{
		"node.koordinator.sh/cpu-normalization-ratio = 1.25  (plugin cpunormalization)",
		"  ratioModel[X].baseRatio (hyper-threading off, turbo off)",
		"  from cpu-normalization-config: nodeConfigs fast",
		"node.koordinator.sh/resource-amplification-ratio: not set (plugin resourceamplification)",
		"  left as it is: boom",
	} {
		if !strings.Contains(out.String(), line+"\n") {
			t.Errorf("output does not have the line %q:\n%s", line, out.String())
		}
	}
}
