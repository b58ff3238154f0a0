package colocationprofile

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// Quantities that are not whole millicores or bytes round up, as the API server rounds a request it stores.
func TestToBatchRoundsUp(t *testing.T) {
	tests := []struct {
		name string
		in   corev1.ResourceList
		want corev1.ResourceList
	}{
		{"whole", corev1.ResourceList{"cpu": resource.MustParse("1.5"), "memory": resource.MustParse("1Gi")},
			corev1.ResourceList{slov1alpha1.BatchCPU: resource.MustParse("1500"), slov1alpha1.BatchMemory: resource.MustParse("1073741824")}},
		{"a fraction of a millicore", corev1.ResourceList{"cpu": resource.MustParse("100.5m")},
			corev1.ResourceList{slov1alpha1.BatchCPU: resource.MustParse("101")}},
		{"a fraction of a byte", corev1.ResourceList{"memory": resource.MustParse("1.5")},
			corev1.ResourceList{slov1alpha1.BatchMemory: resource.MustParse("2")}},
		{"other resources stay", corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "ephemeral-storage": resource.MustParse("1Gi")},
			corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "ephemeral-storage": resource.MustParse("1Gi")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := toBatch(tt.in); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, tt.in, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The answer for a name is fixed (these values pin the hash: changing it would move running workloads between
// batch and not), 0 and 100 are never and always.
func TestSampled(t *testing.T) {
	var got []bool
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		got = append(got, Sampled("p", "ns", name, 50))
	}
	want := []bool{pinned("p", "ns", "a"), pinned("p", "ns", "b"), pinned("p", "ns", "c"), pinned("p", "ns", "d"), pinned("p", "ns", "e"), pinned("p", "ns", "f")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for i := range 100 {
		name := strings.Repeat("x", i)
		if Sampled("p", "ns", name, 0) || !Sampled("p", "ns", name, 100) {
			t.Fatalf("probability 0 or 100 not honoured for %q", name)
		}
	}
}

// pinned is FNV-1a 64 of profile NUL namespace NUL name, modulo 100, below 50: written out here so that the test
// fails when Sampled's hash changes.
func pinned(profile, ns, name string) bool {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, c := range []byte(profile + "\x00" + ns + "\x00" + name) {
		h ^= uint64(c)
		h *= prime
	}
	return h%100 < 50
}

// A translation that fails leaves the pod exactly as it was, even when some containers were already translated.
func TestTranslateFailsWithoutChanging(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "x"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "ok", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("1")}}},
		{Name: "both", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"memory": resource.MustParse("1Gi"), slov1alpha1.BatchMemory: resource.MustParse("1")}}},
	}}}
	before := pod.DeepCopy()
	p := &configv1alpha1.ColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "gleaner-batch"}, Value: 5000}
	err := Translate(pod, p, pc)
	if err == nil || !strings.Contains(err.Error(), `container "both": requests: it asks for both memory and kubernetes.io/batch-memory`) {
		t.Fatalf("error %v", err)
	}
	if diff := cmp.Diff(before, pod); diff != "" {
		t.Errorf("the pod changed (-before +after):\n%s", diff)
	}

	// Labels the API server would refuse are refused here, before they could stop the pod from being created.
	p.Spec.Labels = map[string]string{"bad key!": "v"}
	if err := Translate(pod, p, pc); err == nil || !strings.Contains(err.Error(), `label key "bad key!"`) {
		t.Errorf("error %v, want the bad label key named", err)
	}
}

// TestTranslateOfALongNamedProfile: a profile whose name cannot be a label value (created before the CRD bounded
// names) still makes batch pods; they go without the mark its status counts by. A name that can carries it.
func TestTranslateOfALongNamedProfile(t *testing.T) {
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "gleaner-batch"}, Value: 5000}
	for _, tt := range []struct {
		name   string
		marked bool
	}{{strings.Repeat("p", 64), false}, {strings.Repeat("p", 63), true}} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("1")}}},
		}}}
		if err := Translate(pod, &configv1alpha1.ColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: tt.name}}, pc); err != nil {
			t.Fatalf("a profile named with %d characters: %v", len(tt.name), err)
		}
		if _, ok := pod.Spec.Containers[0].Resources.Requests[slov1alpha1.BatchCPU]; !ok {
			t.Errorf("a profile named with %d characters: the pod asks for no batch-cpu: %+v", len(tt.name), pod.Spec.Containers[0].Resources)
		}
		if got, ok := pod.Labels[configv1alpha1.LabelColocationProfile]; ok != tt.marked || (ok && got != tt.name) {
			t.Errorf("a profile named with %d characters: label %q (present %v), want present %v", len(tt.name), got, ok, tt.marked)
		}
	}
}
