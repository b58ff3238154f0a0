package framework

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/gleaner-sh/gleaner/test/testutil"
)

// TestPodRequestsMatchTheScheduler: the shortcut for one-container pods gives what resourcehelper.PodRequests
// gives, for the pods it takes and the ones it leaves to resourcehelper (init containers, sidecars, overhead,
// pod-level requests, a resize in the status, several containers, no requests).
func TestPodRequestsMatchTheScheduler(t *testing.T) {
	pods := []*corev1.Pod{
		testutil.Pod("plain").Requests("cpu", "250m", "memory", "64Mi").Limits("cpu", "500m").Obj(),
		testutil.Pod("mid").Requests("kubernetes.io/mid-cpu", "200", "kubernetes.io/mid-memory", "256Mi").Obj(),
		testutil.Pod("none").Obj(),
		testutil.Pod("two").Requests("cpu", "1").Container("side").Requests("cpu", "100m", "memory", "1Gi").Obj(),
		testutil.Pod("init").InitContainer("big", false).Requests("cpu", "2").Container("app").Requests("cpu", "1").Obj(),
		testutil.Pod("sidecar").InitContainer("side", true).Requests("cpu", "100m").Container("app").Requests("cpu", "1").Obj(),
		testutil.Pod("overhead").Requests("cpu", "1").Overhead("cpu", "100m").Obj(),
		testutil.Pod("podlevel").PodRequests("cpu", "600m", "memory", "1Gi").Container("a").Requests("cpu", "100m").Obj(),
		testutil.Pod("resized").Requests("cpu", "1").Running("c1").StatusRequests("c0", "cpu", "2").Obj(),
		testutil.Pod("running").Requests("cpu", "1").Running("c1").Obj(),
	}
	for _, pod := range pods {
		want := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true})
		if got := podRequests(pod); !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s: requests differ from resourcehelper.PodRequests (-want +got):\n%s", pod.Name, cmp.Diff(want, got))
		}
	}
}
