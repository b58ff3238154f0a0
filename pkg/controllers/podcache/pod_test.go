package podcache

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/allocation"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// readPods are pods with everything that decides requests, limits, counting and class: init containers,
// sidecars, overhead, pod-level resources, extended and mid resources, every phase, a resize in progress and an
// infeasible one, a static pod's mirror, the class labels of both projects and one nobody knows.
func readPods() []*corev1.Pod {
	pods := []*corev1.Pod{
		testutil.Pod("plain").Requests("cpu", "250m", "memory", "64Mi").Limits("cpu", "500m", "memory", "128Mi").Obj(),
		testutil.Pod("none").Obj(),
		testutil.Pod("two").Requests("cpu", "1").Container("side").Requests("cpu", "100m", "memory", "1Gi").Obj(),
		testutil.Pod("init").InitContainer("big", false).Requests("cpu", "2").Container("app").Requests("cpu", "1").Obj(),
		testutil.Pod("sidecar").InitContainer("side", true).Requests("cpu", "100m").Limits("cpu", "200m").
			InitContainer("big", false).Requests("cpu", "3").Container("app").Requests("cpu", "1").Obj(),
		testutil.Pod("overhead").Requests("cpu", "1").Limits("cpu", "2").Overhead("cpu", "100m", "memory", "10Mi").Obj(),
		testutil.Pod("podlevel").PodRequests("cpu", "600m", "memory", "1Gi").PodLimits("cpu", "1").Container("a").Obj(),
		testutil.Pod("ext").Requests("example.com/gpu", "1", "hugepages-2Mi", "20Mi", "kubernetes.io/batch-cpu", "500").Obj(),
		testutil.Pod("mid").Priority(7500).Requests("kubernetes.io/mid-cpu", "300", "kubernetes.io/mid-memory", "1Gi").Obj(),
		testutil.Pod("pending").Phase(corev1.PodPending).Requests("cpu", "1").Obj(),
		testutil.Pod("succeeded").Phase(corev1.PodSucceeded).Requests("cpu", "4").Obj(),
		testutil.Pod("failed").Phase(corev1.PodFailed).Requests("cpu", "4").Obj(),
		testutil.Pod("unknown").Phase(corev1.PodUnknown).Requests("cpu", "4").Obj(),
		testutil.Pod("terminating").Terminating().Phase(corev1.PodRunning).Requests("cpu", "1").Obj(),
		// A static pod's mirror in the batch band: the mirror annotation protects it from being best-effort.
		testutil.Pod("mirror").Priority(5500).Annotation(corev1.MirrorPodAnnotationKey, "hash").Requests("cpu", "1").Obj(),
		testutil.Pod("critical").Priority(2000001000).Label(slov1alpha1.LabelQoSClass, "BE").Obj(),
		testutil.Pod("batch-label").Label(slov1alpha1.LabelPriorityClass, "batch").Label(slov1alpha1.LabelQoSClass, "BE").Obj(),
		testutil.Pod("koord-labels").Label(slov1alpha1.LabelPriorityClassAlias, "koord-mid").Label(slov1alpha1.LabelQoSClassAlias, "LSR").Obj(),
		testutil.Pod("unknown-class").Label(slov1alpha1.LabelPriorityClass, "gold").Obj(),
		testutil.Pod("profiled").Label(configv1alpha1.LabelColocationProfile, "etl").Label(slov1alpha1.LabelQoSClass, "BE").Requests("kubernetes.io/batch-cpu", "500").Obj(),
		testutil.Pod("resize-status").Requests("cpu", "1").Running("c1").StatusRequests("c0", "cpu", "2").Obj(),
	}
	resized := testutil.Pod("resized").Requests("cpu", "1").Obj()
	resized.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "c0", Image: "registry/app:1", ImageID: "sha256:abc", Ready: true,
		AllocatedResources: corev1.ResourceList{"cpu": resource.MustParse("2")},
		Resources:          &corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("2")}},
	}}
	resized.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}}
	infeasible := testutil.Pod("infeasible").Requests("cpu", "8").Limits("cpu", "8").StatusRequests("c0", "cpu", "1").Obj()
	infeasible.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible}}
	pods = append(pods, resized, infeasible)
	for _, p := range pods {
		decorate(p)
	}
	return pods
}

// TestPodKeepsWhatIsRead: what the controllers read of a cached Pod is what the functions they read a full pod with
// give: allocation's requests, limits and counting (`kubectl describe node`'s rules), the scheduler's requests with
// a resize, the class, and the pod's identity; and a node's summary from Pods is the one from the full pods.
func TestPodKeepsWhatIsRead(t *testing.T) {
	pods := readPods()
	var fulls []corev1.Pod
	var totals allocation.Totals
	for _, full := range pods {
		p := FromPod(full)
		reqs, limits := allocation.PodRequestsAndLimits(full)
		type reads struct {
			Namespace, Name, Node string
			UID                   string
			Phase                 corev1.PodPhase
			Counted, Active       bool
			Class                 slov1alpha1.PodClass
			Requests, Limits, Eff corev1.ResourceList
			Profile               string
		}
		want := reads{full.Namespace, full.Name, full.Spec.NodeName, string(full.UID), full.Status.Phase,
			allocation.Counted(full), slices.Contains([]corev1.PodPhase{corev1.PodRunning, corev1.PodPending, ""}, full.Status.Phase),
			slov1alpha1.ClassOf(full), reqs, limits,
			resourcehelper.PodRequests(full, resourcehelper.PodResourcesOptions{UseStatusResources: true}), full.Labels[configv1alpha1.LabelColocationProfile]}
		got := reads{p.Namespace, p.Name, p.NodeName, string(p.UID), p.Phase, p.Counted(), p.Active(), p.Class, p.Requests, p.Limits, p.Effective, p.Profile}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: what the controllers read differs (-full pod +cached):\n%s", full.Name, diff)
		}
		fulls = append(fulls, *full)
		if p.Counted() {
			totals.AddCounted(p.Requests, p.Limits)
		}
	}
	node := testutil.Node("n1").Allocatable("cpu", "32", "memory", "128Gi", "pods", "110").Obj()
	if diff := cmp.Diff(allocation.Summarize(node, fulls), allocation.NewSummary(node, totals)); diff != "" {
		t.Errorf("node summary differs (-full pods +cached):\n%s", diff)
	}
}
