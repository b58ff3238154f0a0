package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/pkg/cli"
	"github.com/gleaner-sh/gleaner/test/describe"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// On the real node, gleaner-manager (deployed from the manifests, with the ClusterRole generated from its RBAC
// markers) keeps a NodeAllocation owned by the node that agrees with `kubectl describe node` v1.36.3, and so does
// `kubectl glean nodes` run as a real kubectl plugin (kubectl-glean on PATH), before and after a pod with requests
// starts.
func TestNodeAllocationOnTheRealNode(t *testing.T) {
	e := suite.Env(t)
	gleanOnPath(e)

	// The node runs other pods (the demo, system pods) that may come and go: compare snapshots until one agrees.
	agree := func(pod string) {
		t.Helper()
		e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) {
			out, err := e.Cluster.Kubectl(ctx, "describe", "node", localcluster.NodeName)
			if err != nil {
				return false, err.Error()
			}
			want, err := describe.Parse(strings.NewReader(out))
			if err != nil {
				return false, err.Error()
			}
			if _, ok := want.PodRows[pod]; pod != "" && !ok {
				return false, "kubectl does not list pod " + pod + " yet"
			}
			na := &slov1alpha1.NodeAllocation{}
			if err := e.Client.Get(ctx, client.ObjectKey{Name: localcluster.NodeName}, na); err != nil {
				return false, err.Error()
			}
			diffs := want.DiffStatus(na.Status)
			out, err = e.Cluster.Kubectl(ctx, "glean", "nodes", localcluster.NodeName, "-o", "json")
			if err != nil {
				return false, err.Error()
			}
			var r cli.Report
			if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Nodes) != 1 {
				return false, fmt.Sprintf("kubectl glean nodes -o json: %v\n%s", err, out)
			}
			if r.Source != cli.SourceNodeAllocation {
				diffs = append(diffs, "kubectl glean nodes computed live instead of reading the NodeAllocation")
			}
			diffs = append(diffs, want.DiffReport("kubectl glean nodes", r.Nodes[0])...)
			return len(diffs) == 0, strings.Join(diffs, "; ")
		})
	}
	agree("")

	node, err := e.Clientset.CoreV1().Nodes().Get(e.Ctx, localcluster.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	na := &slov1alpha1.NodeAllocation{}
	if err := e.Client.Get(e.Ctx, client.ObjectKey{Name: node.Name}, na); err != nil {
		t.Fatal(err)
	}
	if owners := na.OwnerReferences; len(owners) != 1 || owners[0].UID != node.UID || owners[0].Kind != "Node" {
		t.Errorf("NodeAllocation owners %+v, want the node %s", owners, node.UID)
	}

	pod := e.RunPod(testutil.Pod("alloc").Image(PauseImage).Requests("cpu", "150m", "memory", "64Mi").Limits("cpu", "300m", "memory", "128Mi").Obj())
	agree(pod.Namespace + "/" + pod.Name)

	table, err := e.Cluster.Kubectl(e.Ctx, "glean", "nodes", "--pods", "-n", pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "alloc") || !strings.Contains(table, string(corev1.ResourceEphemeralStorage)) {
		t.Errorf("kubectl glean nodes --pods -n %s:\n%s", pod.Namespace, table)
	}
}
