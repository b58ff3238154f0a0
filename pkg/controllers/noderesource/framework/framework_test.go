package framework

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gleaner-sh/gleaner/test/testutil"
)

// fakePlugin is a plugin whose results the test chooses; it records what ran.
type fakePlugin struct {
	name  string
	item  ResourceItem
	err   error
	calls *[]string
}

func (p *fakePlugin) Name() string { return p.name }
func (p *fakePlugin) Calculate(*Input) ([]ResourceItem, error) {
	*p.calls = append(*p.calls, p.name+".Calculate")
	return []ResourceItem{p.item}, p.err
}
func (p *fakePlugin) Reset(_ *corev1.Node, msg string) []ResourceItem {
	*p.calls = append(*p.calls, p.name+".Reset")
	return []ResourceItem{{Name: p.item.Name, Reset: true, Message: msg}}
}

var _ CalculatePlugin = &fakePlugin{}

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

func TestRegistryRejectsDuplicateNames(t *testing.T) {
	var calls []string
	_, err := NewRegistry(&fakePlugin{name: "a", calls: &calls}, &fakePlugin{name: "b", calls: &calls}, &fakePlugin{name: "a", calls: &calls})
	if err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("want a duplicate-name error naming a, got %v", err)
	}
	if _, err := NewRegistry(&fakePlugin{name: "", calls: &calls}); err == nil {
		t.Fatal("want an error for an empty name")
	}
}

func TestRegistryOrderAndFilter(t *testing.T) {
	var calls []string
	r, err := NewRegistry(
		&fakePlugin{name: "b", item: ResourceItem{Name: "x/b", Quantity: q("1")}, calls: &calls},
		&fakePlugin{name: "a", item: ResourceItem{Name: "x/a", Quantity: q("2")}, calls: &calls},
		&fakePlugin{name: "c", item: ResourceItem{Name: "x/c", Quantity: q("3")}, calls: &calls},
	)
	if err != nil {
		t.Fatal(err)
	}
	r = r.Filter(func(n string) bool { return n != "c" })
	if diff := cmp.Diff([]string{"b", "a"}, r.Names()); diff != "" {
		t.Fatalf("names after filter (-want +got):\n%s", diff)
	}
	in := &Input{Node: testutil.Node("n").Obj()}
	if _, err := r.Calculate(in, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Calculate(in, "colocation is disabled"); err != nil {
		t.Fatal(err)
	}
	want := []string{"b.Calculate", "a.Calculate", "b.Reset", "a.Reset"}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestCalculateFailureResetsOnlyThatPlugin(t *testing.T) {
	var calls []string
	r, _ := NewRegistry(
		&fakePlugin{name: "bad", item: ResourceItem{Name: "x/bad", Quantity: q("1")}, err: errors.New("boom"), calls: &calls},
		&fakePlugin{name: "good", item: ResourceItem{Name: "x/good", Quantity: q("5")}, calls: &calls},
	)
	nr, err := r.Calculate(&Input{Node: testutil.Node("n").Obj()}, "")
	if err == nil || !strings.Contains(err.Error(), "bad: boom") {
		t.Fatalf("want the plugin's error, got %v", err)
	}
	if v, ok := nr.Get("x/bad"); !ok || v != nil || nr.Messages["x/bad"] != "calculation failed: boom" {
		t.Errorf("failed plugin not reset: %v %v %q", v, ok, nr.Messages["x/bad"])
	}
	if v, _ := nr.Get("x/good"); v == nil || v.Cmp(resource.MustParse("5")) != 0 {
		t.Errorf("healthy plugin's value lost: %v", v)
	}
}

func TestPrepareResources(t *testing.T) {
	node := testutil.Node("n").Capacity("cpu", "4", "x/old", "3").Allocatable("cpu", "4", "x/old", "3").Obj()
	nr := NewNodeResource(
		ResourceItem{Name: "x/new", Quantity: q("1200")},
		ResourceItem{Name: "x/old", Reset: true},
	)
	PrepareResources(node, nr, "x/new", "x/old", "x/untouched")
	want := corev1.ResourceList{"cpu": resource.MustParse("4"), "x/new": resource.MustParse("1200")}
	for _, got := range []corev1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
			t.Errorf("resources (-want +got):\n%s", diff)
		}
	}
	// Idempotent: preparing again changes nothing.
	before := node.DeepCopy()
	PrepareResources(node, nr, "x/new", "x/old")
	if !cmp.Equal(before, node) {
		t.Error("PrepareResources is not idempotent")
	}
}

// TestUrgentChange: an urgent resource is written on any change, however small; a later item without Urgent for
// the same resource makes it ordinary again, and the first change after that is written at once as well
// (UrgencyOver), so that the value urgency held does not linger.
func TestUrgentChange(t *testing.T) {
	node := func(mem string) *corev1.Node {
		b := testutil.Node("n").Capacity("cpu", "4")
		if mem != "" {
			b.Allocatable("x/mem", mem)
		}
		return b.Obj()
	}
	nr := NewNodeResource(ResourceItem{Name: "x/mem", Quantity: q("1000"), Urgent: "memory pressure"}, ResourceItem{Name: "x/cpu", Quantity: q("5")})
	tests := []struct {
		name     string
		old, new string
		want     string
	}{
		{"unchanged", "1000", "1000", ""},
		{"one unit less", "1000", "999", "x/mem changed from 1k to 999, at once: memory pressure"},
		{"appears", "", "1000", "x/mem changed from none to 1k, at once: memory pressure"},
		{"disappears", "1000", "", "x/mem changed from 1k to none, at once: memory pressure"},
	}
	for _, tt := range tests {
		if got := nr.UrgentChange(node(tt.old), node(tt.new)); got != tt.want {
			t.Errorf("%s: UrgentChange = %q, want %q", tt.name, got, tt.want)
		}
	}
	nr.Set(ResourceItem{Name: "x/mem", Quantity: q("999")})
	if got := nr.UrgentChange(node("1000"), node("999")); got != "" {
		t.Errorf("after an ordinary item: UrgentChange = %q, want none", got)
	}

	// The node was last written with x/mem urgent, and it no longer is: its change is written at once too.
	before := map[corev1.ResourceName]string{"x/mem": "memory pressure"}
	if got, want := nr.UrgencyOver(before, node("1000"), node("999")), "x/mem changed from 1k to 999, at once: over (memory pressure)"; got != want {
		t.Errorf("UrgencyOver = %q, want %q", got, want)
	}
	for name, tt := range map[string]struct {
		before map[corev1.ResourceName]string
		nr     *NodeResource
		old    string
	}{
		"not urgent before":             {before: nil, nr: nr, old: "1000"},
		"unchanged":                     {before: before, nr: nr, old: "999"},
		"urgent still (UrgentChange's)": {before: before, nr: NewNodeResource(ResourceItem{Name: "x/mem", Quantity: q("999"), Urgent: "memory pressure"}), old: "1000"},
	} {
		if got := tt.nr.UrgencyOver(tt.before, node(tt.old), node("999")); got != "" {
			t.Errorf("%s: UrgencyOver = %q, want none", name, got)
		}
	}
}

func TestTopologyFrom(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
		"metadata": map[string]any{"name": "n"},
		"zones": []any{
			map[string]any{"name": "node-1", "type": "Node", "resources": []any{
				map[string]any{"name": "cpu", "capacity": "8", "allocatable": "7", "available": "7"},
			}},
			map[string]any{"name": "socket-0", "type": "Socket"},
			map[string]any{"name": "node-0", "type": "Node", "resources": []any{
				map[string]any{"name": "cpu", "capacity": "8", "allocatable": "8", "available": "8"},
			}},
		},
	}}
	topo, err := TopologyFrom(u)
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Zones) != 2 || topo.Zones[0].Name != "node-0" || topo.Zones[1].Name != "node-1" {
		t.Fatalf("want the two Node zones sorted, got %+v", topo.Zones)
	}
	if topo.Zones[1].Allocatable.Cpu().Value() != 7 {
		t.Errorf("zone allocatable = %v", topo.Zones[1].Allocatable)
	}
	if _, err := TopologyFrom(&unstructured.Unstructured{Object: map[string]any{"zones": "not a list"}}); err == nil {
		t.Error("a malformed NodeResourceTopology must be an error")
	}
}
