package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// predictionCheckpoints is where the local cluster's agent keeps its models (config/local/agent.yaml --state-dir).
const predictionCheckpoints = "/var/lib/gleaner-agent/prediction"

// TestMidTierFromPrediction: a prod service that requests far more than it uses. Once the agent's models are past
// their cold start (shortened on the local cluster, config/local/agent.yaml), the agent reports what the prod pods
// will not use, gleaner-manager offers it as mid-cpu with the prediction's terms in its explanation, and pods
// asking for mid-cpu run. When the prod band then grows past its prediction, the offer is withdrawn and a mid pod is
// evicted, while one under a PodDisruptionBudget stays.
func TestMidTierFromPrediction(t *testing.T) {
	e := suite.Env(t)
	e.RunPod(testutil.Pod("idle-service").PriorityClass("gleaner-prod").Container("c").Image(PauseImage).
		Requests("cpu", "1500m", "memory", "512Mi").Obj())
	// The models learn from the node as it is now. The cluster's start-up (images built and imported on this very
	// machine, counted as the node's system part) would otherwise hold the system model's p95 near the node's
	// whole CPU for the models' first minutes, and rightly leave nothing reclaimable; the agent starts again
	// without its checkpoints.
	restore := stopAgent(e)
	if err := os.RemoveAll(predictionCheckpoints); err != nil {
		t.Fatal(err)
	}
	restore()
	const ask = 300 // millicores of mid-cpu
	var explained string
	e.Eventually(6*time.Minute, func(ctx context.Context) (bool, string) {
		node, err := e.Clientset.CoreV1().Nodes().Get(ctx, localcluster.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		q := node.Status.Allocatable[slov1alpha1.MidCPU]
		explained = e.derivation(ctx, node, slov1alpha1.MidCPU)
		return q.Value() >= ask, fmt.Sprintf("mid-cpu %s, want at least %d: %s", q.String(), ask, explained)
	})
	for _, term := range []string{"prodReclaimable", "prodPeak", "systemPeak", "predictedProdRequest"} {
		if !strings.Contains(explained, term+" ") {
			t.Errorf("the mid-cpu explanation has no %s term: %s", term, explained)
		}
	}

	// Two mid pods take the 300m offered, one of them under a PodDisruptionBudget that allows no disruption. Then
	// the prod band grows past its prediction (a prod pod that requests 100m and burns 1.5 cores): the next report
	// withdraws the mid capacity, and allocatable eviction (on for the rest of the test) evicts the unguarded mid pod
	// through the Eviction API while the guarded one, asked first (the larger request), stays.
	ns := e.Namespace()
	mid := func(name string, cpu int) *corev1.Pod {
		return testutil.Pod(name).PriorityClass("gleaner-mid").Label("app", name).Container("c").Image(PauseImage).
			Requests(string(slov1alpha1.MidCPU), fmt.Sprint(cpu)).Obj()
	}
	unguarded := e.RunPodIn(ns, mid("mid-job", ask/3))
	guarded := e.RunPodIn(ns, mid("mid-guarded", ask-ask/3))
	guard(e, ns, guarded.Name)
	setThresholds(e, `{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 100, "cpuSuppressPolicy": "cfsQuota", `+
		`"memoryEvictThresholdPercent": 95, "cpuAllocatableEvictThresholdPercent": 100, "cpuAllocatableEvictLowerPercent": 100}}`)
	gone := watchEviction(e, ns, unguarded.Name)
	grew := time.Now()
	e.RunPodIn(ns, testutil.Pod("busy-service").PriorityClass("gleaner-prod").Container("c").
		Image(BurnerImage, "--load=1500m", "--report=0").Requests("cpu", "100m").Obj())
	e.Eventually(4*time.Minute, func(ctx context.Context) (bool, string) {
		node, err := e.Clientset.CoreV1().Nodes().Get(ctx, localcluster.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		q := node.Status.Allocatable[slov1alpha1.MidCPU]
		if q.Value() < ask {
			t.Logf("mid-cpu withdrawn to %s %s after the prod pod started", q.String(), time.Since(grew).Round(time.Second))
			return true, ""
		}
		return false, fmt.Sprintf("mid-cpu %s, want it under the %d the mid pods request: %s", q.String(), ask, e.derivation(ctx, node, slov1alpha1.MidCPU))
	})
	e.Eventually(2*time.Minute, func(context.Context) (bool, string) {
		return !gone().IsZero(), fmt.Sprintf("mid pod %s not evicted yet", unguarded.Name)
	})
	t.Logf("mid pod %s evicted %s after the prod pod started", unguarded.Name, gone().Sub(grew).Round(time.Second))
	expectGuardedStays(e, ns, guarded.Name)
	if m := agentMetrics(e); !strings.Contains(m, `gleaner_agent_evictions_total{action="evict",reason="TierAllocatable",result="evicted"}`) {
		t.Error("the agent's metrics count no allocatable eviction")
	}
}
