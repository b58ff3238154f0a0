package nodeamplification

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

func node(annotations map[string]string, allocatable ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: annotations}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{}}}
	for i := 0; i+1 < len(allocatable); i += 2 {
		n.Status.Allocatable[corev1.ResourceName(allocatable[i])] = resource.MustParse(allocatable[i+1])
	}
	return n
}

const (
	ratioKey = slov1alpha1.AnnotationResourceAmplificationRatio
	rawKey   = slov1alpha1.AnnotationRawAllocatable
)

// TestAmplify ports Koordinator's TestNodeResourceAmplificationPlugin_handleNormalization (the first six cases, by
// their names) and adds the kubelet's round trip.
func TestAmplify(t *testing.T) {
	tests := []struct {
		name            string
		old, node       *corev1.Node
		wantChanged     bool
		wantAllocatable corev1.ResourceList
		wantRaw         string // "" = no raw annotation
	}{
		{name: "normal", node: node(map[string]string{ratioKey: `{"cpu": 1.5}`}, "cpu", "1"),
			wantChanged: true, wantAllocatable: corev1.ResourceList{"cpu": resource.MustParse("1500m")}, wantRaw: `{"cpu":"1"}`},
		{name: "disable1", node: node(map[string]string{ratioKey: `{"cpu": 0.5}`}, "cpu", "1"),
			wantChanged: true, wantAllocatable: corev1.ResourceList{"cpu": resource.MustParse("1")}, wantRaw: `{"cpu":"1"}`},
		{name: "disable2", node: node(map[string]string{ratioKey: `{"cpu": 1}`}, "cpu", "1"),
			wantChanged: true, wantAllocatable: corev1.ResourceList{"cpu": resource.MustParse("1")}, wantRaw: `{"cpu":"1"}`},
		{name: "disable amplication will remove original allocatable", node: node(map[string]string{rawKey: "{}"}, "cpu", "1"),
			wantChanged: true, wantAllocatable: corev1.ResourceList{"cpu": resource.MustParse("1")}},
		{name: "unsupported ratio will be ignored", node: node(map[string]string{ratioKey: `{"eni": 2}`}, "eni", "1"),
			wantChanged: false, wantAllocatable: corev1.ResourceList{"eni": resource.MustParse("1")}},
		{name: "get original resource from annotation and amplify", node: node(map[string]string{ratioKey: `{"cpu": 2}`, rawKey: `{"cpu":"1"}`}, "cpu", "1"),
			wantChanged: true, wantAllocatable: corev1.ResourceList{"cpu": resource.MustParse("2")}, wantRaw: `{"cpu":"1"}`},
		{name: "nothing amplified, nothing saved", node: node(nil, "cpu", "8"), wantAllocatable: corev1.ResourceList{"cpu": resource.MustParse("8")}},
		{name: "the manager's write keeps the saved raw values",
			old:             node(map[string]string{ratioKey: `{"cpu":1.50,"memory":1.20}`, rawKey: `{"cpu":"8","memory":"10Gi"}`}, "cpu", "12", "memory", "12Gi"),
			node:            node(map[string]string{ratioKey: `{"cpu":1.50,"memory":1.20}`, rawKey: `{"cpu":"8","memory":"10Gi"}`}, "cpu", "12", "memory", "12Gi", "kubernetes.io/batch-cpu", "3000"),
			wantAllocatable: corev1.ResourceList{"cpu": resource.MustParse("12"), "memory": resource.MustParse("12Gi"), "kubernetes.io/batch-cpu": resource.MustParse("3000")},
			wantRaw:         `{"cpu":"8","memory":"10Gi"}`},
		{name: "a new ratio applies to the saved raw values",
			old:         node(map[string]string{ratioKey: `{"cpu":1.50}`, rawKey: `{"cpu":"8"}`}, "cpu", "12"),
			node:        node(map[string]string{ratioKey: `{"cpu":1.25}`, rawKey: `{"cpu":"8"}`}, "cpu", "12"),
			wantChanged: true, wantAllocatable: corev1.ResourceList{"cpu": resource.MustParse("10")}, wantRaw: `{"cpu":"8"}`},
		{name: "the kubelet writes its own value back: it becomes the raw value",
			old:         node(map[string]string{ratioKey: `{"cpu":1.50}`, rawKey: `{"cpu":"8"}`}, "cpu", "12"),
			node:        node(map[string]string{ratioKey: `{"cpu":1.50}`, rawKey: `{"cpu":"8"}`}, "cpu", "7"),
			wantChanged: true, wantAllocatable: corev1.ResourceList{"cpu": resource.MustParse("10500m")}, wantRaw: `{"cpu":"7"}`},
		{name: "an update of cpu alone keeps memory's saved raw value",
			old:         node(map[string]string{ratioKey: `{"cpu":1.50,"memory":1.25}`, rawKey: `{"cpu":"8","memory":"16Gi"}`}, "cpu", "12", "memory", "20Gi"),
			node:        node(map[string]string{ratioKey: `{"cpu":1.50,"memory":1.25}`, rawKey: `{"cpu":"8","memory":"16Gi"}`}, "cpu", "7", "memory", "20Gi"),
			wantChanged: true, wantAllocatable: corev1.ResourceList{"cpu": resource.MustParse("10500m"), "memory": resource.MustParse("20Gi")}, wantRaw: `{"cpu":"7","memory":"16Gi"}`},
		{name: "memory rounds up to a byte", node: node(map[string]string{ratioKey: `{"memory":1.33}`}, "memory", "1Gi"),
			wantChanged: true, wantAllocatable: corev1.ResourceList{"memory": *resource.NewQuantity(1428076626, resource.BinarySI)}, wantRaw: `{"memory":"1Gi"}`},
		{name: "amplification removed: the saved raw values go", old: node(map[string]string{ratioKey: `{"cpu":1.50}`, rawKey: `{"cpu":"8"}`}, "cpu", "12"),
			node: node(map[string]string{rawKey: `{"cpu":"8"}`}, "cpu", "8"), wantChanged: true, wantAllocatable: corev1.ResourceList{"cpu": resource.MustParse("8")}},
		{name: "amplification removed by the manager's write: allocatable goes back to the saved raw values",
			old:         node(map[string]string{ratioKey: `{"cpu":1.50,"memory":1.25}`, rawKey: `{"cpu":"8","memory":"16Gi"}`}, "cpu", "12", "memory", "20Gi"),
			node:        node(map[string]string{rawKey: `{"cpu":"8","memory":"16Gi"}`}, "cpu", "12", "memory", "20Gi", "kubernetes.io/batch-cpu", "3000"),
			wantChanged: true, wantAllocatable: corev1.ResourceList{"cpu": resource.MustParse("8"), "memory": resource.MustParse("16Gi"), "kubernetes.io/batch-cpu": resource.MustParse("3000")}},
		{name: "amplification removed in the kubelet's write: its new value stands, the other goes back",
			old:         node(map[string]string{ratioKey: `{"cpu":1.50,"memory":1.25}`, rawKey: `{"cpu":"8","memory":"16Gi"}`}, "cpu", "12", "memory", "20Gi"),
			node:        node(map[string]string{rawKey: `{"cpu":"8","memory":"16Gi"}`}, "cpu", "7", "memory", "20Gi"),
			wantChanged: true, wantAllocatable: corev1.ResourceList{"cpu": resource.MustParse("7"), "memory": resource.MustParse("16Gi")}},
		{name: "amplification removed with raw values that do not parse: they go, allocatable stays",
			old:         node(map[string]string{ratioKey: `{"cpu":1.50}`, rawKey: `{"cpu":`}, "cpu", "12"),
			node:        node(map[string]string{rawKey: `{"cpu":`}, "cpu", "12"),
			wantChanged: true, wantAllocatable: corev1.ResourceList{"cpu": resource.MustParse("12")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed, err := Amplify(tt.old, tt.node)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if d := cmp.Diff(tt.wantAllocatable, tt.node.Status.Allocatable, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); d != "" {
				t.Errorf("allocatable (-want +got):\n%s", d)
			}
			if got := tt.node.Annotations[rawKey]; got != tt.wantRaw {
				t.Errorf("raw allocatable = %q, want %q", got, tt.wantRaw)
			}
		})
	}
}

// TestAllocatableChanged ports Koordinator's TestNodeResourceAmplificationPlugin_isSupportedResourceChanged, asked
// per resource: Gleaner takes a new raw value only for the resource the update changed.
func TestAllocatableChanged(t *testing.T) {
	tests := []struct {
		name      string
		old, node *corev1.Node
		want      map[corev1.ResourceName]bool
	}{
		{"oldNode is nil", nil, node(nil), map[corev1.ResourceName]bool{"cpu": false, "memory": false}},
		{"resource is unchanged", node(nil, "cpu", "4", "memory", "8Gi"), node(nil, "cpu", "4", "memory", "8Gi"), map[corev1.ResourceName]bool{"cpu": false, "memory": false}},
		{"add resource", node(nil, "cpu", "4"), node(nil, "cpu", "4", "memory", "8Gi"), map[corev1.ResourceName]bool{"cpu": false, "memory": true}},
		{"remove resource", node(nil, "cpu", "4", "memory", "8Gi"), node(nil, "cpu", "4"), map[corev1.ResourceName]bool{"cpu": false, "memory": true}},
		{"resource changed", node(nil, "cpu", "4", "memory", "8Gi"), node(nil, "cpu", "5", "memory", "8Gi"), map[corev1.ResourceName]bool{"cpu": true, "memory": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[corev1.ResourceName]bool{}
			for r := range tt.want {
				got[r] = allocatableChanged(tt.old, tt.node, r)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("allocatableChanged (-want +got):\n%s", d)
			}
		})
	}
}

func TestHandle(t *testing.T) {
	request := func(op admissionv1.Operation, old, n *corev1.Node) admission.Request {
		oldRaw, _ := json.Marshal(old)
		newRaw, _ := json.Marshal(n)
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: op, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Node"}, SubResource: "status",
			Object: runtime.RawExtension{Raw: newRaw}, OldObject: runtime.RawExtension{Raw: oldRaw},
		}}
	}
	m := &Mutator{}
	old := node(map[string]string{ratioKey: `{"cpu":1.50}`, rawKey: `{"cpu":"8"}`}, "cpu", "12")
	resp := m.Handle(context.Background(), request(admissionv1.Update, old, node(map[string]string{ratioKey: `{"cpu":1.50}`, rawKey: `{"cpu":"8"}`}, "cpu", "7")))
	if !resp.Allowed || len(resp.Patches) == 0 {
		t.Fatalf("the kubelet's write: allowed %v, patches %v; want allowed with patches", resp.Allowed, resp.Patches)
	}
	got := map[string]any{}
	for _, p := range resp.Patches {
		got[p.Path] = p.Value
	}
	want := map[string]any{"/status/allocatable/cpu": "10500m", "/metadata/annotations/node.koordinator.sh~1raw-allocatable": `{"cpu":"7"}`}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("patches (-want +got):\n%s", d)
	}

	resp = m.Handle(context.Background(), request(admissionv1.Update, old, node(map[string]string{ratioKey: `{"cpu":`}, "cpu", "7")))
	if !resp.Allowed || len(resp.Patches) != 0 || len(resp.Warnings) != 1 {
		t.Errorf("an annotation that does not parse: allowed %v, patches %v, warnings %v; want allowed unchanged with a warning", resp.Allowed, resp.Patches, resp.Warnings)
	}
	if resp = m.Handle(context.Background(), request(admissionv1.Create, nil, node(map[string]string{ratioKey: `{"cpu":2}`}, "cpu", "7"))); len(resp.Patches) != 0 {
		t.Errorf("a node's creation is not amplified (the ratio comes later): patches %v", resp.Patches)
	}
}

// rawNode is a Node as an API server newer than this library sends it: with members the library's Node type does
// not know (unknownNodeFields) next to the annotations and allocatable given as JSON object members.
func rawNode(annotations, allocatable string) []byte {
	return []byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n","futureMeta":{"since":"v1.40"},"annotations":{` + annotations + `}},` +
		`"spec":{"futureSpec":true},"status":{"futureField":{"a":["b",1]},"capacity":{"cpu":"8","memory":"16Gi"},` +
		`"allocatable":{` + allocatable + `},"conditions":[{"type":"Ready","status":"True","futureCondition":"x"}]}}`)
}

var unknownNodeFields = [][]string{
	{"metadata", "futureMeta"}, {"spec", "futureSpec"}, {"status", "futureField"}, {"status", "conditions", "0", "futureCondition"},
}

// TestHandlePatchesOnlyWhatItChanges: the webhook's patch touches the raw allocatable annotation and the amplified
// allocatable only, so a status update from a newer API server keeps the fields this library does not know, and the
// known fields come out as Amplify makes them.
func TestHandlePatchesOnlyWhatItChanges(t *testing.T) {
	const (
		ratio   = `"node.koordinator.sh/resource-amplification-ratio":"{\"cpu\":1.50,\"memory\":1.25}"`
		saved   = `"node.koordinator.sh/raw-allocatable":"{\"cpu\":\"8\",\"memory\":\"16Gi\"}"`
		rawPath = "/metadata/annotations/node.koordinator.sh~1raw-allocatable"
	)
	tests := []struct {
		name      string
		old, node []byte
		want      []string // "op path"
	}{
		{"the kubelet's write",
			rawNode(ratio+","+saved, `"cpu":"12","memory":"20Gi","kubernetes.io/batch-cpu":"3000"`),
			rawNode(ratio+","+saved, `"cpu":"7","memory":"20Gi","kubernetes.io/batch-cpu":"3000"`),
			[]string{"replace " + rawPath, "replace /status/allocatable/cpu"}},
		{"the first amplification",
			rawNode(`"example.com/kept":"yes"`, `"cpu":"8","memory":"16Gi"`),
			rawNode(`"example.com/kept":"yes",`+ratio, `"cpu":"8","memory":"16Gi"`),
			[]string{"add " + rawPath, "replace /status/allocatable/cpu", "replace /status/allocatable/memory"}},
		{"amplification removed",
			rawNode(ratio+","+saved, `"cpu":"12","memory":"20Gi"`),
			rawNode(saved, `"cpu":"12","memory":"20Gi"`),
			[]string{"remove " + rawPath, "replace /status/allocatable/cpu", "replace /status/allocatable/memory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := (&Mutator{}).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Update, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Node"}, SubResource: "status",
				Object: runtime.RawExtension{Raw: tt.node}, OldObject: runtime.RawExtension{Raw: tt.old},
			}})
			if !resp.Allowed || len(resp.Warnings) != 0 {
				t.Fatalf("allowed %v, warnings %v; want allowed without warnings", resp.Allowed, resp.Warnings)
			}
			if d := cmp.Diff(sorted(tt.want), operations(resp.Patches)); d != "" {
				t.Errorf("patch operations (-want +got):\n%s", d)
			}
			patched := applyPatch(t, tt.node, resp.Patches)
			for _, path := range unknownNodeFields {
				expectKept(t, tt.node, patched, path)
			}
			old, want, got := &corev1.Node{}, &corev1.Node{}, &corev1.Node{}
			decode(t, tt.old, old)
			decode(t, tt.node, want)
			decode(t, patched, got)
			if _, err := Amplify(old, want); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(want, got) {
				t.Errorf("the patched node's known fields\n%s\nwant (Amplify of the decoded node)\n%s", encode(t, got), encode(t, want))
			}
		})
	}
}

// operations lists ops as sorted "op path" strings.
func operations(ops []jsonpatch.JsonPatchOperation) []string {
	out := make([]string, 0, len(ops))
	for _, op := range ops {
		out = append(out, op.Operation+" "+op.Path)
	}
	return sorted(out)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// applyPatch applies ops, encoded as the webhook server sends them, to doc, as the API server does.
func applyPatch(t *testing.T, doc []byte, ops []jsonpatch.JsonPatchOperation) []byte {
	t.Helper()
	b, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatchapply.DecodePatch(b)
	if err != nil {
		t.Fatalf("decoding the patch %s: %v", b, err)
	}
	out, err := p.Apply(doc)
	if err != nil {
		t.Fatalf("applying the patch %s: %v", b, err)
	}
	return out
}

// expectKept fails t when the member at path (object keys and array indexes) of patched is not the one of doc.
func expectKept(t *testing.T, doc, patched []byte, path []string) {
	t.Helper()
	want, ok := lookup(t, doc, path)
	if !ok {
		t.Fatalf("the test's document has nothing at %v", path)
	}
	if got, ok := lookup(t, patched, path); !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("%s: %v (present %v) after the patch, want %v", strings.Join(path, "."), got, ok, want)
	}
}

func lookup(t *testing.T, doc []byte, path []string) (any, bool) {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range path {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[k]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func decode(t *testing.T, b []byte, obj any) {
	t.Helper()
	if err := json.Unmarshal(b, obj); err != nil {
		t.Fatal(err)
	}
}

func encode(t *testing.T, obj any) string {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
