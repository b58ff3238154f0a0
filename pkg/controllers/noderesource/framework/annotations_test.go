package framework

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// annotatePlugin returns the items the test chooses and records the annotations it saw from earlier plugins.
type annotatePlugin struct {
	name  string
	items []AnnotationItem
	err   error
	saw   map[string]*string
}

func (p *annotatePlugin) Name() string { return p.name }
func (p *annotatePlugin) Annotate(_ *Input, nr *NodeResource) ([]AnnotationItem, error) {
	p.saw = map[string]*string{}
	for k, v := range nr.Annotations {
		p.saw[k] = v
	}
	return p.items, p.err
}

var _ AnnotatePlugin = &annotatePlugin{}

func TestAnnotateStage(t *testing.T) {
	first := &annotatePlugin{name: "first", items: []AnnotationItem{
		{Key: "a", Value: ptr.To("1"), Source: "cfg", Reason: "why"},
		{Key: "gone", Reason: "off"},
	}}
	failing := &annotatePlugin{name: "failing", items: []AnnotationItem{{Key: "kept"}}, err: errors.New("boom")}
	second := &annotatePlugin{name: "second", items: []AnnotationItem{{Key: "b", Value: ptr.To("2")}}}
	r, err := NewRegistry(first, failing, second)
	if err != nil {
		t.Fatal(err)
	}
	node := testutil.Node("n").Obj()
	node.Annotations = map[string]string{"gone": "x", "kept": "old", "other": "y"}
	nr := NewNodeResource()
	if err := r.Annotate(&Input{Node: node}, nr); err == nil || err.Error() != "node-resource plugin failing: boom" {
		t.Errorf("error = %v, want the failing plugin's", err)
	}
	if d := cmp.Diff(map[string]*string{"a": ptr.To("1"), "gone": nil}, second.saw); d != "" {
		t.Errorf("a later plugin sees the earlier ones' annotations (-want +got):\n%s", d)
	}
	want := []slov1alpha1.AnnotationDerivation{
		{Annotation: "a", Plugin: "first", Value: ptr.To("1"), Source: "cfg", Reason: "why"},
		{Annotation: "gone", Plugin: "first", Reason: "off"},
		{Annotation: "kept", Plugin: "failing", Reason: "left as it is: boom"},
		{Annotation: "b", Plugin: "second", Value: ptr.To("2")},
	}
	if d := cmp.Diff(want, nr.AnnotationDerivations); d != "" {
		t.Errorf("derivations (-want +got):\n%s", d)
	}

	updated := node.DeepCopy()
	PrepareAnnotations(updated, nr)
	if d := cmp.Diff(map[string]string{"a": "1", "b": "2", "kept": "old", "other": "y"}, updated.Annotations); d != "" {
		t.Errorf("prepared annotations (-want +got):\n%s", d)
	}
	if got, want := AnnotationsDiffer(node, updated, nr), "annotation a set to 1"; got != want {
		t.Errorf("AnnotationsDiffer = %q, want %q", got, want)
	}
	if got := AnnotationsDiffer(updated, updated.DeepCopy(), nr); got != "" {
		t.Errorf("AnnotationsDiffer of equal nodes = %q", got)
	}
	if v, ok := nr.Annotation(node, "other"); !ok || v != "y" {
		t.Errorf("Annotation falls back on the node's: %q, %v", v, ok)
	}
	if _, ok := nr.Annotation(node, "gone"); ok {
		t.Error("Annotation of an annotation removed in this reconcile is still there")
	}
}

// TestKubeletReservedOfAnAmplifiedNode: the kubelet's reservation is capacity - raw allocatable, not capacity -
// amplified allocatable (which would be negative, so zero, and hand the reservation to batch pods).
func TestKubeletReservedOfAnAmplifiedNode(t *testing.T) {
	node := testutil.Node("n").Capacity("cpu", "10").Allocatable("cpu", "15").Obj()
	node.Annotations = map[string]string{
		slov1alpha1.AnnotationResourceAmplificationRatio: `{"cpu":1.67}`,
		slov1alpha1.AnnotationRawAllocatable:             `{"cpu":"9"}`,
	}
	if got := (&Input{Node: node}).KubeletReserved("cpu"); got != 1000 {
		t.Errorf("KubeletReserved = %d, want 1000 (10 - raw 9)", got)
	}
	delete(node.Annotations, slov1alpha1.AnnotationResourceAmplificationRatio)
	if got := (&Input{Node: node}).KubeletReserved("cpu"); got != 0 {
		t.Errorf("without amplification KubeletReserved = %d, want 0 (allocatable as it is)", got)
	}
}
