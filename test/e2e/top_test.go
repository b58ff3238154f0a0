package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/pkg/cli"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// On the real node, a batch pod that burns CPU shows up in `kubectl glean top pods` and `kubectl glean top nodes`
// (kubectl-glean on PATH, run as a kubectl plugin) with the usage gleaner-agent measured: nonzero, counted as batch
// use next to the batch-cpu gleaner-manager publishes and the pod's batch-cpu request.
func TestGleanTopOnTheRealNode(t *testing.T) {
	e := suite.Env(t)
	gleanOnPath(e)

	const ask = 100 // millicores of batch-cpu
	_ = e.MakeRoomForBatch(ask)
	batch := testutil.Pod("top-batch").PriorityClass("gleaner-batch").Label(slov1alpha1.LabelQoSClass, "BE").
		Image(BurnerImage, "--load=0.1").Obj()
	batchResources := corev1.ResourceList{
		slov1alpha1.BatchCPU: *resource.NewQuantity(ask, resource.DecimalSI), slov1alpha1.BatchMemory: resource.MustParse("64Mi"),
	}
	batch.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: batchResources, Limits: batchResources}
	batch = e.RunPod(batch)

	// The agent reports a pod once the aggregate window (30 s on the local cluster) is half its own.
	e.Eventually(4*time.Minute, func(ctx context.Context) (bool, string) { return topPodsShows(ctx, e, batch, ask) })
	table, err := e.Cluster.Kubectl(e.Ctx, "glean", "top", "pods", "-n", batch.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(table), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], batch.Name+" ") ||
		!strings.Contains(lines[1], " BE ") || !strings.HasSuffix(lines[1], " batch") || strings.Contains(lines[1], " - ") {
		t.Errorf("kubectl glean top pods -n %s:\n%s", batch.Namespace, table)
	}

	e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) { return topNodesShows(ctx, e, ask) })
	table, err = e.Cluster.Kubectl(e.Ctx, "glean", "top", "nodes")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "BATCH CPU USED/REQ/CAP") || !strings.Contains(table, localcluster.NodeName+" ") {
		t.Errorf("kubectl glean top nodes:\n%s", table)
	}
}

// gleanOnPath builds kubectl-glean into a directory of its own and puts that first on PATH for the rest of the test,
// so that `kubectl glean` runs this tree's plugin.
func gleanOnPath(e *Env) {
	e.t.Helper()
	plugins := e.t.TempDir()
	build := exec.CommandContext(e.Ctx, "go", "build", "-o", plugins, "./cmd/kubectl-glean")
	build.Dir = e.Suite.RepoRoot
	if out, err := build.CombinedOutput(); err != nil {
		e.t.Fatalf("building kubectl-glean: %v\n%s", err, out)
	}
	e.t.Setenv("PATH", plugins+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// topPodsShows says whether `kubectl glean top pods -o json` in the batch pod's namespace shows it alone, as a batch
// pod requesting ask millicores of batch-cpu, with a current NodeMetric that measured it using CPU and memory.
func topPodsShows(ctx context.Context, e *Env, batch *corev1.Pod, ask int64) (bool, string) {
	out, err := e.Cluster.Kubectl(ctx, "glean", "top", "pods", "-n", batch.Namespace, "-o", "json")
	if err != nil {
		return false, err.Error()
	}
	var r cli.TopPodsReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return false, fmt.Sprintf("kubectl glean top pods -o json: %v\n%s", err, out)
	}
	if len(r.Pods) != 1 {
		return false, "want the batch pod only:\n" + out
	}
	p := r.Pods[0]
	ok := p.Name == batch.Name && p.Node == localcluster.NodeName && p.Priority == slov1alpha1.PriorityBatch &&
		p.QoS == slov1alpha1.QoSBE && p.CPU.Requests == ask && p.Metric.State == cli.MetricCurrent &&
		positive(p.CPU.Used) && positive(p.Memory.Used)
	return ok, "kubectl glean top pods -o json:\n" + out
}

// topNodesShows says whether `kubectl glean top nodes NODE -o json` shows the node's usage from a current NodeMetric,
// and batch capacity, at least ask millicores of batch-cpu requested, and batch pods using CPU and memory.
func topNodesShows(ctx context.Context, e *Env, ask int64) (bool, string) {
	out, err := e.Cluster.Kubectl(ctx, "glean", "top", "nodes", localcluster.NodeName, "-o", "json")
	if err != nil {
		return false, err.Error()
	}
	var r cli.TopNodesReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Nodes) != 1 {
		return false, fmt.Sprintf("kubectl glean top nodes -o json: %v\n%s", err, out)
	}
	n := r.Nodes[0]
	ok := n.Metric.State == cli.MetricCurrent && positive(n.CPU.Used) && positive(n.Memory.Used) && n.CPU.Allocatable > 0 &&
		n.Batch.CPU.Capacity != nil && n.Batch.CPU.Requests >= ask && positive(n.Batch.CPU.Used) && positive(n.Batch.Memory.Used)
	return ok, "kubectl glean top nodes -o json:\n" + out
}

func positive(v *int64) bool { return v != nil && *v > 0 }
