package colocationprofile

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
	"github.com/prometheus/client_golang/prometheus"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
)

// fullPod is a pod as an API server newer than this library sends it, with every member the profile changes already
// there, and members the library's Pod type does not know (unknownPodFields) at the pod's metadata, spec and status,
// in a container, an init container and a container's resources.
const fullPod = `{"apiVersion":"v1","kind":"Pod",
 "metadata":{"name":"etl-1","namespace":"team","futureMeta":{"since":"v1.40"},
   "labels":{"app":"etl","koordinator.sh/qosClass":"LS","gleaner.sh/priority-class":"prod"},
   "annotations":{"example.com/kept":"yes"}},
 "spec":{"futurePodField":{"x":["y",1]},
   "priorityClassName":"gleaner-prod","priority":9000,"preemptionPolicy":"PreemptLowerPriority","schedulerName":"default-scheduler",
   "initContainers":[{"name":"setup","image":"busybox","futureContainerField":"i",
     "resources":{"requests":{"cpu":"250m","memory":"64Mi"}}}],
   "containers":[
     {"name":"main","image":"busybox","futureContainerField":{"k":"v"},
      "resources":{"requests":{"cpu":"1500m","memory":"1Gi","nvidia.com/gpu":"1"},"limits":{"cpu":"2","memory":"1536Mi","nvidia.com/gpu":"1"},"futureResourcesField":true}},
     {"name":"log","image":"busybox","resources":{"requests":{"memory":"10M"}}}]},
 "status":{"futureStatus":"s"}}`

// minimalPod has none of the members the profile sets: no annotations, priority, preemption policy or scheduler
// name, one container with a cpu request only.
const minimalPod = `{"apiVersion":"v1","kind":"Pod",
 "metadata":{"name":"etl-2","namespace":"team","labels":{"app":"etl"},"futureMeta":"m"},
 "spec":{"futurePodField":1,"containers":[{"name":"main","image":"busybox","futureContainerField":true,"resources":{"requests":{"cpu":"100m"}}}]}}`

// TestHandlePatchesOnlyWhatItChanges: the webhook's patch touches the members Translate sets only, so a pod created
// through a newer API server keeps the fields this library does not know, and the known fields come out as
// Translate makes them.
func TestHandlePatchesOnlyWhatItChanges(t *testing.T) {
	profile := &configv1alpha1.ColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: "etl"}, Spec: configv1alpha1.ColocationProfileSpec{
		Selector:      &metav1.LabelSelector{MatchLabels: map[string]string{"app": "etl"}},
		SchedulerName: "batch-scheduler",
		Labels:        map[string]string{"gleaner.sh/profile": "etl"},
		Annotations:   map[string]string{"example.com/owner": "data team"},
	}}
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: configv1alpha1.DefaultPriorityClassName}, Value: 5000, PreemptionPolicy: ptr.To(corev1.PreemptNever)}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, configv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	m, err := New(fake.NewClientBuilder().WithScheme(scheme).WithObjects(profile, pc).Build(), nil, events.NewFakeRecorder(10), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}

	resources := func(container string, names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, "/spec/"+container+"/resources/"+n)
		}
		return out
	}
	const (
		batchCPU = "kubernetes.io~1batch-cpu"
		batchMem = "kubernetes.io~1batch-memory"
	)
	tests := []struct {
		name   string
		pod    string
		want   []string // "op path"
		fields [][]string
	}{
		{name: "every member there", pod: fullPod,
			want: slices.Concat([]string{
				"replace /metadata/labels/koordinator.sh~1qosClass",
				"replace /metadata/labels/gleaner.sh~1priority-class",
				"add /metadata/labels/gleaner.sh~1qos-class",
				"add /metadata/labels/gleaner.sh~1profile",
				"add /metadata/labels/gleaner.sh~1colocation-profile",
				"add /metadata/annotations/example.com~1owner",
				"replace /spec/priorityClassName",
				"replace /spec/priority",
				"replace /spec/preemptionPolicy",
				"replace /spec/schedulerName",
			},
				prefixed("remove ", resources("initContainers/0", "requests/cpu", "requests/memory")),
				prefixed("add ", resources("initContainers/0", "requests/"+batchCPU, "requests/"+batchMem)),
				prefixed("remove ", resources("containers/0", "requests/cpu", "requests/memory", "limits/cpu", "limits/memory")),
				prefixed("add ", resources("containers/0", "requests/"+batchCPU, "requests/"+batchMem, "limits/"+batchCPU, "limits/"+batchMem)),
				prefixed("remove ", resources("containers/1", "requests/memory")),
				prefixed("add ", resources("containers/1", "requests/"+batchMem)),
			),
			fields: [][]string{
				{"metadata", "futureMeta"}, {"spec", "futurePodField"}, {"status", "futureStatus"},
				{"spec", "initContainers", "0", "futureContainerField"},
				{"spec", "containers", "0", "futureContainerField"}, {"spec", "containers", "0", "resources", "futureResourcesField"},
				{"spec", "containers", "0", "resources", "requests", "nvidia.com/gpu"},
			}},
		{name: "no member there", pod: minimalPod,
			want: []string{
				"add /metadata/labels/gleaner.sh~1qos-class",
				"add /metadata/labels/gleaner.sh~1profile",
				"add /metadata/labels/gleaner.sh~1colocation-profile",
				"add /metadata/annotations",
				"add /spec/priorityClassName",
				"add /spec/priority",
				"add /spec/preemptionPolicy",
				"add /spec/schedulerName",
				"remove /spec/containers/0/resources/requests/cpu",
				"add /spec/containers/0/resources/requests/" + batchCPU,
			},
			fields: [][]string{{"metadata", "futureMeta"}, {"spec", "futurePodField"}, {"spec", "containers", "0", "futureContainerField"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := m.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "u", Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "team",
				Object: runtime.RawExtension{Raw: []byte(tt.pod)},
			}})
			if !resp.Allowed || len(resp.Warnings) != 0 {
				t.Fatalf("allowed %v, warnings %v; want allowed without warnings", resp.Allowed, resp.Warnings)
			}
			if d := cmp.Diff(sorted(tt.want), operations(resp.Patches)); d != "" {
				t.Errorf("patch operations (-want +got):\n%s", d)
			}
			patched := applyPatch(t, []byte(tt.pod), resp.Patches)
			for _, path := range tt.fields {
				expectKept(t, []byte(tt.pod), patched, path)
			}
			want, got := &corev1.Pod{}, &corev1.Pod{}
			decode(t, []byte(tt.pod), want)
			decode(t, patched, got)
			if err := Translate(want, profile, pc); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(want, got) {
				t.Errorf("the patched pod's known fields\n%s\nwant (Translate of the decoded pod)\n%s", encode(t, got), encode(t, want))
			}
		})
	}
}

func prefixed(prefix string, s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = prefix + v
	}
	return out
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
