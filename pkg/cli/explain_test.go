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
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

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
		Conditions: []metav1.Condition{{
			Type: slov1alpha1.NodeMetricUsable, Status: metav1.ConditionTrue, Reason: slov1alpha1.ReasonNodeMetricFresh,
			LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)),
			Message:            "NodeMetric n was last updated 30s ago, within degradeTimeMinutes (15m0s)",
		}},
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
		"NodeMetric when published: Fresh since 2026-11-22 10:00:00 UTC: NodeMetric n was last updated 30s ago, within degradeTimeMinutes (15m0s)",
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
		{[]string{"explain", "explain-none", "-o", "wide"}, `-o "wide": want json, yaml, jsonpath=TEMPLATE`},
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

// sloTime is the clock of the NodeSLO status tests: the conditions' transitions are minutes and hours before it.
var sloTime = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// notApplied is a NodeSLO status as gleaner-agent writes it on a node without resctrl: CPU idle applied, resctrl
// turned on but unsupported, and Applied False naming it.
func notApplied() slov1alpha1.NodeSLOStatus {
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(sloTime.Add(-ago)) }
	return slov1alpha1.NodeSLOStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{
		{Type: slov1alpha1.NodeSLOApplied, Status: metav1.ConditionFalse, Reason: slov1alpha1.NodeSLOReasonNotApplied, ObservedGeneration: 1,
			Message: "not applied on this node: Resctrl (Unsupported); each condition says why", LastTransitionTime: at(5 * time.Minute)},
		{Type: slov1alpha1.NodeSLOCPUIdle, Status: metav1.ConditionTrue, Reason: slov1alpha1.NodeSLOReasonApplied, ObservedGeneration: 1,
			Message: "QoS plugin cpuqos applies it", LastTransitionTime: at(3 * time.Hour)},
		{Type: slov1alpha1.NodeSLOResctrl, Status: metav1.ConditionFalse, Reason: slov1alpha1.NodeSLOReasonUnsupported, ObservedGeneration: 1,
			Message: "resctrl is not mounted at /sys/fs/resctrl (no info directory): not supported on this host", LastTransitionTime: at(5 * time.Minute)},
	}}
}

// createNodeSLO creates the NodeSLO of node name and writes status into it, as gleaner-manager (the object) and
// gleaner-agent (the status) do; an empty status is not written. It is deleted when the test ends.
func createNodeSLO(t *testing.T, e *testenv.Env, name string, status slov1alpha1.NodeSLOStatus) {
	t.Helper()
	ctx := context.Background()
	slo := &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.Client.Create(ctx, slo); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), slo) })
	if status.ObservedGeneration == 0 && len(status.Conditions) == 0 {
		return
	}
	slo.Status = status
	if err := e.Client.Status().Update(ctx, slo); err != nil {
		t.Fatal(err)
	}
}

// TestExplainShowsTheNodeSLOStatus: after the derivation, explain prints every condition of the node's NodeSLO
// status with its reason, message and the time since it changed, a feature the node does not apply among them.
func TestExplainShowsTheNodeSLOStatus(t *testing.T) {
	e := env.Start(t)
	createExplained(t, e, "explain-slo", "1200")
	createNodeSLO(t, e, "explain-slo", notApplied())
	out, errOut, err := gleanAt(t, sloTime, "--kubeconfig", e.Kubeconfig, "explain", "explain-slo")
	if err != nil {
		t.Fatal(err)
	}
	want := "\n\nNodeSLO (generation 1, observed 1):\n" +
		"  TYPE     STATUS  REASON       CHANGED  MESSAGE\n" +
		"  Applied  False   NotApplied   5m ago   not applied on this node: Resctrl (Unsupported); each condition says why\n" +
		"  CPUIdle  True    Applied      3h ago   QoS plugin cpuqos applies it\n" +
		"  Resctrl  False   Unsupported  5m ago   resctrl is not mounted at /sys/fs/resctrl (no info directory): not supported on this host\n"
	if !strings.HasSuffix(out, want) {
		t.Errorf("output does not end with the NodeSLO status\n%s\ngot:\n%s", want, out)
	}
	if errOut != "" {
		t.Errorf("stderr: %s", errOut)
	}
}

// TestExplainSaysWhenTheNodeSLOHasNoStatus: a NodeSLO the agent has not written a status into, and a node without
// a NodeSLO, are both told in one line.
func TestExplainSaysWhenTheNodeSLOHasNoStatus(t *testing.T) {
	e := env.Start(t)
	createExplained(t, e, "explain-slo-empty", "1200")
	createNodeSLO(t, e, "explain-slo-empty", slov1alpha1.NodeSLOStatus{})
	createExplained(t, e, "explain-slo-none", "1200")
	for _, node := range []string{"explain-slo-empty", "explain-slo-none"} {
		out, _, err := gleanAt(t, sloTime, "--kubeconfig", e.Kubeconfig, "explain", node)
		if err != nil {
			t.Fatal(err)
		}
		want := "\n\nno NodeSLO status: the agent has not written it (an agent older than this release, or not running on the node)\n"
		if !strings.HasSuffix(out, want) || strings.Contains(out, "NodeSLO (") {
			t.Errorf("node %s: want the output to end with %q:\n%s", node, want, out)
		}
	}
}

// TestExplainNodeSLOStructured: -o json and -o yaml carry the NodeSLO's generation and status under nodeSLO, and
// leave it out for a node whose NodeSLO has no status.
func TestExplainNodeSLOStructured(t *testing.T) {
	e := env.Start(t)
	createExplained(t, e, "explain-slo-json", "1200")
	createNodeSLO(t, e, "explain-slo-json", notApplied())
	createExplained(t, e, "explain-slo-json-empty", "1200")
	createNodeSLO(t, e, "explain-slo-json-empty", slov1alpha1.NodeSLOStatus{})
	want := &SLOStatus{Generation: 1, NodeSLOStatus: notApplied()}
	for _, format := range []string{"json", "yaml"} {
		out, _, err := gleanAt(t, sloTime, "--kubeconfig", e.Kubeconfig, "explain", "explain-slo-json", "explain-slo-json-empty", "-o", format)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{`"nodeSLO": {`, `"generation": 1,`, `"observedGeneration": 1,`, `"reason": "Unsupported",`} {
			if format == "yaml" {
				key = strings.NewReplacer(`"`, "", " {", "", ",", "").Replace(key)
			}
			if !strings.Contains(out, key) {
				t.Errorf("-o %s lacks %q:\n%s", format, key, out)
			}
		}
		var got []Explanation
		if err := yaml.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("-o %s: %v\n%s", format, err, out)
		}
		if len(got) != 2 {
			t.Fatalf("-o %s: %d nodes, want 2:\n%s", format, len(got), out)
		}
		if d := cmp.Diff(want, got[0].NodeSLO); d != "" {
			t.Errorf("-o %s nodeSLO (-want +got):\n%s", format, d)
		}
		if got[1].NodeSLO != nil {
			t.Errorf("-o %s: a NodeSLO without status shows as %+v, want none", format, got[1].NodeSLO)
		}
	}
}

// TestPrintSLOStatus: what the NodeSLO block says of a status the agent is still working on, of a message that
// would break the table, and of a condition without a transition time.
func TestPrintSLOStatus(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(sloTime)
	tests := []struct {
		name string
		st   *SLOStatus
		want string
	}{
		{
			name: "none",
			want: "no NodeSLO status: the agent has not written it (an agent older than this release, or not running on the node)\n",
		},
		{
			name: "behind the spec, pending",
			st: &SLOStatus{Generation: 2, NodeSLOStatus: slov1alpha1.NodeSLOStatus{Conditions: []metav1.Condition{
				{Type: slov1alpha1.NodeSLOApplied, Status: metav1.ConditionUnknown, Reason: slov1alpha1.NodeSLOReasonPending,
					Message: "the agent has not run yet: CPUIdle", LastTransitionTime: metav1.NewTime(sloTime.Add(-10 * time.Second))},
			}}},
			want: "NodeSLO (generation 2, observed 0):\n" +
				"  not every QoS plugin of the agent has run with generation 2 yet: a condition may describe an older spec\n" +
				"  TYPE     STATUS   REASON   CHANGED  MESSAGE\n" +
				"  Applied  Unknown  Pending  10s ago  the agent has not run yet: CPUIdle\n",
		},
		{
			name: "a joined error, no time",
			st: &SLOStatus{Generation: 3, NodeSLOStatus: slov1alpha1.NodeSLOStatus{ObservedGeneration: 3, Conditions: []metav1.Condition{
				{Type: slov1alpha1.NodeSLOBlkIO, Status: metav1.ConditionFalse, Reason: slov1alpha1.NodeSLOReasonFailed,
					Message: "pod a: write io.max:\tno device\npod b: write io.max: no device"},
			}}},
			want: "NodeSLO (generation 3, observed 3):\n" +
				"  TYPE   STATUS  REASON  CHANGED  MESSAGE\n" +
				"  BlkIO  False   Failed  -        pod a: write io.max: no device pod b: write io.max: no device\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			if err := printSLOStatus(&out, tt.st, clk); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, out.String()); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
