package allocation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gleaner-sh/gleaner/test/testutil"
)

// quantityEqual compares quantities by value: 1000m and 1 are the same CPU.
var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func list(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

func TestPodRequestsAndLimits(t *testing.T) {
	tests := []struct {
		name                string
		pod                 *corev1.Pod
		wantReqs, wantLimit corev1.ResourceList
	}{
		{
			name:      "no resources",
			pod:       testutil.Pod("p").Container("c").Obj(),
			wantReqs:  list(),
			wantLimit: list(),
		},
		{
			name:      "containers add up",
			pod:       testutil.Pod("p").Container("a").Requests("cpu", "250m", "memory", "64Mi").Limits("cpu", "500m").Container("b").Requests("cpu", "100m").Limits("memory", "128Mi").Obj(),
			wantReqs:  list("cpu", "350m", "memory", "64Mi"),
			wantLimit: list("cpu", "500m", "memory", "128Mi"),
		},
		{
			name:      "an init container bigger than the containers sets the request",
			pod:       testutil.Pod("p").InitContainer("i", false).Requests("cpu", "2").Limits("cpu", "3").Container("c").Requests("cpu", "500m", "memory", "1Gi").Limits("cpu", "1").Obj(),
			wantReqs:  list("cpu", "2", "memory", "1Gi"),
			wantLimit: list("cpu", "3"),
		},
		{
			name:      "an init container smaller than the containers changes nothing",
			pod:       testutil.Pod("p").InitContainer("i", false).Requests("cpu", "100m").Container("c").Requests("cpu", "500m").Obj(),
			wantReqs:  list("cpu", "500m"),
			wantLimit: list(),
		},
		{
			// The sidecar runs next to the containers (500m+200m) and next to the later init container (1+200m).
			name:      "a sidecar before a large init container",
			pod:       testutil.Pod("p").InitContainer("side", true).Requests("cpu", "200m").InitContainer("i", false).Requests("cpu", "1").Container("c").Requests("cpu", "500m").Obj(),
			wantReqs:  list("cpu", "1200m"),
			wantLimit: list(),
		},
		{
			// A sidecar after the init container does not run next to it: max(1, 500m+200m).
			name:      "a sidecar after a large init container",
			pod:       testutil.Pod("p").InitContainer("i", false).Requests("cpu", "1").InitContainer("side", true).Requests("cpu", "200m").Container("c").Requests("cpu", "500m").Obj(),
			wantReqs:  list("cpu", "1"),
			wantLimit: list(),
		},
		{
			name:      "overhead is added to requests and to non-zero limits only",
			pod:       testutil.Pod("p").Container("c").Requests("cpu", "100m", "memory", "100Mi").Limits("cpu", "200m").Overhead("cpu", "10m", "memory", "10Mi").Obj(),
			wantReqs:  list("cpu", "110m", "memory", "110Mi"),
			wantLimit: list("cpu", "210m"),
		},
		{
			name:      "pod-level resources replace the containers' sum",
			pod:       testutil.Pod("p").PodRequests("cpu", "1", "memory", "1Gi").PodLimits("cpu", "2").Container("c").Requests("cpu", "100m", "memory", "100Mi").Obj(),
			wantReqs:  list("cpu", "1", "memory", "1Gi"),
			wantLimit: list("cpu", "2"),
		},
		{
			name:      "extended resources and hugepages",
			pod:       testutil.Pod("p").Container("c").Requests("example.com/gpu", "2", "hugepages-2Mi", "64Mi", "kubernetes.io/batch-cpu", "1500").Limits("example.com/gpu", "2", "hugepages-2Mi", "64Mi").Obj(),
			wantReqs:  list("example.com/gpu", "2", "hugepages-2Mi", "64Mi", "kubernetes.io/batch-cpu", "1500"),
			wantLimit: list("example.com/gpu", "2", "hugepages-2Mi", "64Mi"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reqs, limits := PodRequestsAndLimits(tt.pod)
			if d := cmp.Diff(tt.wantReqs, reqs, quantityEqual); d != "" {
				t.Errorf("requests (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantLimit, limits, quantityEqual); d != "" {
				t.Errorf("limits (-want +got):\n%s", d)
			}
		})
	}
}

func TestEffectivePodRequestsAndLimitsFollowAResize(t *testing.T) {
	// The spec asks for 500m; the kubelet still runs the container with the 1 CPU it had before the resize.
	pod := testutil.Pod("p").Container("c").Requests("cpu", "500m").StatusRequests("c", "cpu", "1").Obj()
	specReqs, _ := PodRequestsAndLimits(pod)
	effReqs, _ := EffectivePodRequestsAndLimits(pod)
	if got := specReqs.Cpu().MilliValue(); got != 500 {
		t.Errorf("spec view cpu = %dm, want 500m", got)
	}
	if got := effReqs.Cpu().MilliValue(); got != 1000 {
		t.Errorf("effective view cpu = %dm, want the 1000m still allocated", got)
	}
}

func TestCountedAndQoSClass(t *testing.T) {
	tests := []struct {
		pod     *corev1.Pod
		counted bool
		qos     corev1.PodQOSClass
	}{
		{testutil.Pod("pending").Phase(corev1.PodPending).Obj(), true, corev1.PodQOSBestEffort},
		{testutil.Pod("running").Requests("cpu", "1").Obj(), true, corev1.PodQOSBurstable},
		{testutil.Pod("unknown").Phase(corev1.PodUnknown).Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Obj(), true, corev1.PodQOSGuaranteed},
		{testutil.Pod("terminating").Terminating().Obj(), true, corev1.PodQOSBestEffort},
		{testutil.Pod("succeeded").Phase(corev1.PodSucceeded).Obj(), false, corev1.PodQOSBestEffort},
		{testutil.Pod("failed").Phase(corev1.PodFailed).Terminating().Obj(), false, corev1.PodQOSBestEffort},
	}
	for _, tt := range tests {
		if got := Counted(tt.pod); got != tt.counted {
			t.Errorf("Counted(%s) = %v, want %v", tt.pod.Name, got, tt.counted)
		}
		if got := QoSClass(tt.pod); got != tt.qos {
			t.Errorf("QoSClass(%s) = %s, want %s", tt.pod.Name, got, tt.qos)
		}
	}
	// status.qosClass, once the API server set it, wins over the spec.
	pod := testutil.Pod("p").Requests("cpu", "1").Obj()
	pod.Status.QOSClass = corev1.PodQOSGuaranteed
	if got := QoSClass(pod); got != corev1.PodQOSGuaranteed {
		t.Errorf("QoSClass with status.qosClass = %s, want Guaranteed", got)
	}
}
