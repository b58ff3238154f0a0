package noderesource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource"
	"github.com/gleaner-sh/gleaner/test/testenv"
)

// publishedBefore makes node name as an earlier gleaner-manager left it before this one started: batch-cpu 2900
// published a minute ago (the calculation gives 3000, within resourceDiffThreshold of it), the other values as the
// calculation gives them, and its explanation, owned by a node of that name that has been deleted since, whose
// NodeMetric has been usable for an hour.
func (h *harness) publishedBefore(t *testing.T, name string) {
	ctx := context.Background()
	h.makeNode(t, name, nil)
	n := h.node(t, name)
	batchMemory := int64(16<<30) - int64(16<<30)*35/100 - (1 << 30) - (3 << 30)
	for r, q := range map[corev1.ResourceName]resource.Quantity{
		slov1alpha1.BatchCPU: resource.MustParse("2900"), slov1alpha1.BatchMemory: *resource.NewQuantity(batchMemory, resource.BinarySI),
		slov1alpha1.MidCPU: resource.MustParse("500"), slov1alpha1.MidMemory: resource.MustParse("1Gi"),
	} {
		n.Status.Allocatable[r], n.Status.Capacity[r] = q, q
	}
	must(t, h.c.Status().Update(ctx, n))
	v := resource.MustParse("2900")
	exp := &slov1alpha1.NodeResourceExplanation{ObjectMeta: metav1.ObjectMeta{
		Name:            name,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: "0f0f-a-deleted-node", Controller: ptr.To(true)}},
	}}
	must(t, h.c.Create(ctx, exp))
	exp.Status = slov1alpha1.NodeResourceExplanationStatus{
		UpdateTime: metav1.NewTime(h.clock.Now().Add(-time.Minute)), Strategy: "cluster",
		Resources: []slov1alpha1.ResourceDerivation{{Resource: slov1alpha1.BatchCPU, Plugin: "batch", Value: &v}},
		Conditions: []metav1.Condition{{
			Type: slov1alpha1.NodeMetricUsable, Status: metav1.ConditionTrue, Reason: slov1alpha1.ReasonNodeMetricFresh,
			LastTransitionTime: metav1.NewTime(h.clock.Now().Add(-time.Hour)),
		}},
	}
	must(t, h.c.Status().Update(ctx, exp))
}

// TestLegacyExplanationAnnotationRemoved: an upgrade finds the annotation an earlier manager wrote on the node; the
// next reconcile removes it, even one that would otherwise not write (a NodeMetric report that moves the values by
// less than resourceDiffThreshold).
func TestLegacyExplanationAnnotationRemoved(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	prod := h.makeNode(t, "upgraded", nil)
	explanationObject(t, h.waitBatchCPU(t, "upgraded", "3000"))

	n := h.node(t, "upgraded")
	orig := n.DeepCopy()
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[slov1alpha1.LegacyAnnotationResourceExplanation] = `{"updateTime":"2026-11-01T00:00:00Z","strategy":"cluster","resources":[` +
		strings.Repeat(`{"resource":"kubernetes.io/batch-cpu","plugin":"batch","value":"3k"},`, 40) + `{}]}`
	n.Annotations["example.com/kept"] = "yes"
	must(t, h.c.Patch(ctx, n, client.MergeFrom(orig)))

	// 850m of system usage: 2950, 1.7% below the 3000 published, which alone would not be written (TestDiffThreshold).
	h.writeMetric(t, "upgraded", prod, "850m")
	testenv.Eventually(t, "the legacy annotation removed from node upgraded", func() error {
		if v, ok := h.node(t, "upgraded").Annotations[slov1alpha1.LegacyAnnotationResourceExplanation]; ok {
			return fmt.Errorf("still there (%d bytes)", len(v))
		}
		return nil
	})
	n = h.node(t, "upgraded")
	if n.Annotations["example.com/kept"] != "yes" {
		t.Errorf("an annotation not Gleaner's was removed: %v", n.Annotations)
	}
	if q := n.Status.Allocatable[slov1alpha1.BatchCPU]; q.Value() != 2950 {
		t.Errorf("batch-cpu = %s, want 2950, calculated when the annotation was removed", q.String())
	}
	explanationObject(t, n)
}

// TestExplanationWriteFailureHoldsUpNothing: while the API server refuses the explanation (an admission policy
// here), the node's resources are published all the same, the failures are counted, and once the refusal ends the
// retry writes the explanation.
func TestExplanationWriteFailureHoldsUpNothing(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "test-refuse-explanation"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{slov1alpha1.GroupVersion.Group}, APIVersions: []string{"*"},
						Resources: []string{"noderesourceexplanations"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.metadata.name != 'refused'", Message: "refused by the test"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	must(t, h.c.Create(ctx, policy))
	must(t, h.c.Create(ctx, binding))
	lift := func() {
		_ = h.c.Delete(context.Background(), binding)
		_ = h.c.Delete(context.Background(), policy)
	}
	t.Cleanup(lift)
	testenv.Eventually(t, "the policy in force", func() error {
		probe := &slov1alpha1.NodeResourceExplanation{ObjectMeta: metav1.ObjectMeta{Name: "refused"}}
		err := h.c.Create(ctx, probe)
		if err == nil {
			_ = h.c.Delete(ctx, probe)
			return fmt.Errorf("a create was let through")
		}
		if !strings.Contains(err.Error(), "refused by the test") {
			return err
		}
		return nil
	})
	errorsBefore := counter(t, ctrlmetrics.Registry, "controller_runtime_reconcile_errors_total", map[string]string{"controller": noderesource.ExplanationWriterName})

	h.makeNode(t, "refused", nil)
	n := h.waitBatchCPU(t, "refused", "3000")
	testenv.Eventually(t, "the refused explanation writes counted", func() error {
		if c := counter(t, ctrlmetrics.Registry, "controller_runtime_reconcile_errors_total", map[string]string{"controller": noderesource.ExplanationWriterName}); c <= errorsBefore {
			return fmt.Errorf("errors %v, as before", c)
		}
		return nil
	})
	if err := h.c.Get(ctx, client.ObjectKey{Name: "refused"}, &slov1alpha1.NodeResourceExplanation{}); !apierrors.IsNotFound(err) {
		t.Fatalf("explanation of node refused: %v, want not found", err)
	}
	lift()
	explanationObject(t, n)
}

// TestNodeStaysSmall: a node like the benchmark's (hack/bench/noderesource: 32 cores, 128Gi, 30 pods: 18 prod,
// 3 without a priority class, 3 mid, 6 batch) carries no explanation. It logs the node's JSON size, as the API
// server sends it to every node watcher, and the size of the same node with the annotation in which an earlier
// manager kept the explanation (docs/benchmarks.md, "The Node stays small"):
//
//	go test ./pkg/controllers/noderesource -run TestNodeStaysSmall -v
func TestNodeStaysSmall(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	const name = "small"
	q := resource.MustParse
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": "zone-1"}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{"cpu": q("32"), "memory": q("128Gi"), "pods": q("110")},
			Allocatable: corev1.ResourceList{"cpu": q("31500m"), "memory": q("125Gi"), "pods": q("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
		},
	}
	status := node.Status
	must(t, h.c.Create(ctx, node))
	node.Status = status
	must(t, h.c.Status().Update(ctx, node))
	nm := &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: name}}
	must(t, h.c.Create(ctx, nm))
	now := metav1.NewTime(h.clock.Now())
	nm.Status = slov1alpha1.NodeMetricStatus{
		UpdateTime: &now,
		NodeMetric: &slov1alpha1.NodeMetricInfo{
			NodeUsage:   corev1.ResourceList{"cpu": q("12"), "memory": q("60Gi")},
			SystemUsage: corev1.ResourceList{"cpu": q("1500m"), "memory": q("4Gi")},
		},
		ProdReclaimableMetric: &slov1alpha1.ReclaimableMetric{Resource: corev1.ResourceList{"cpu": q("4"), "memory": q("16Gi")}},
	}
	for i := range 30 {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("small-%02d", i), Namespace: "default", Labels: map[string]string{"app": fmt.Sprintf("app-%d", i%5)}},
			Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q(fmt.Sprintf("%dm", 100+i%9*50)), "memory": q(fmt.Sprintf("%dMi", 128+i%7*64))}}}}},
		}
		priority := slov1alpha1.PriorityProd
		switch k := i % 10; {
		case k < 6:
			p.Spec.PriorityClassName = "gleaner-prod"
		case k == 7:
			p.Spec.PriorityClassName, priority = "gleaner-mid", slov1alpha1.PriorityMid
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{slov1alpha1.MidCPU: q("200"), slov1alpha1.MidMemory: q("256Mi")}
		case k >= 8:
			p.Spec.PriorityClassName, priority = "gleaner-batch", slov1alpha1.PriorityBatch
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{slov1alpha1.BatchCPU: q("500"), slov1alpha1.BatchMemory: q("1Gi")}
		}
		must(t, h.c.Create(ctx, p))
		nm.Status.PodsMetric = append(nm.Status.PodsMetric, slov1alpha1.PodMetricInfo{
			Name: p.Name, Namespace: p.Namespace, UID: string(p.UID), Priority: priority, QoS: slov1alpha1.QoSLS,
			Usage: corev1.ResourceList{"cpu": *resource.NewMilliQuantity(int64(50+i%7*20), resource.DecimalSI),
				"memory": *resource.NewQuantity(int64(96+i%5*32)<<20, resource.BinarySI)},
		})
	}
	must(t, h.c.Status().Update(ctx, nm))

	var n *corev1.Node
	testenv.Eventually(t, "node small publishes batch-cpu", func() error {
		n = h.node(t, name)
		if _, ok := n.Status.Allocatable[slov1alpha1.BatchCPU]; !ok {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	exp := expectExplanationBesideNode(t, n)
	after := jsonSize(t, n)

	// The same node as an earlier manager left it: the explanation in an annotation (what the manager removes).
	raw, err := json.Marshal(exp.Status)
	must(t, err)
	orig := n.DeepCopy()
	n.Annotations = map[string]string{slov1alpha1.LegacyAnnotationResourceExplanation: string(raw)}
	must(t, h.c.Patch(ctx, n, client.MergeFrom(orig)))
	before := jsonSize(t, n)
	t.Logf("node small as every node watcher receives it: %d bytes; with the explanation annotation: %d bytes (the explanation alone: %d bytes)",
		after, before, len(raw))
	if after >= before-len(raw) {
		t.Errorf("the node without the annotation (%d bytes) is not %d bytes smaller than with it (%d)", after, len(raw), before)
	}
}

// jsonSize is the length of the node's JSON as the API server encodes it, apiVersion and kind included.
func jsonSize(t *testing.T, n *corev1.Node) int {
	t.Helper()
	c := n.DeepCopy()
	c.APIVersion, c.Kind = "v1", "Node"
	b, err := json.Marshal(c)
	must(t, err)
	return len(b)
}
