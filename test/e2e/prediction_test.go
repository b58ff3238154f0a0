package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// predictionCheckpoints is where the local cluster's agent keeps its models (config/local/agent.yaml --state-dir).
const predictionCheckpoints = "/var/lib/gleaner-agent/prediction"

// TestMidTierFromPrediction: a prod service that requests far more than it uses. Once the agent's models are past
// their cold start (shortened on the local cluster, config/local/agent.yaml), the agent reports what the prod pods
// will not use, gleaner-manager offers it as mid-cpu with the prediction's terms in its explanation, and a pod
// asking for mid-cpu runs.
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
	e.RunPod(testutil.Pod("mid-job").PriorityClass("gleaner-mid").Container("c").Image(PauseImage).
		Requests(string(slov1alpha1.MidCPU), fmt.Sprint(ask)).Obj())
}
