package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
)

// TestInstallFromChart: the local cluster installs Gleaner from charts/gleaner with helm, as `gleaner-local
// --from-chart deploy` does: helm records the release as deployed, the namespace helm creates carries the chart's
// Pod Security labels, gleaner-manager and gleaner-agent become ready, and they do their work: the agent reports
// the node's NodeMetric and the manager turns it into batch resources on the node; a second `helm upgrade
// --install` leaves the webhook's caBundle, which the manager injected, to the manager. Afterwards the cluster
// starts again from config/local for the tests that follow.
func TestInstallFromChart(t *testing.T) {
	e := suite.Env(t)
	helm, err := localcluster.Helm(e.Ctx, e.Suite.RepoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Suite.StopCluster(context.Background()); err != nil {
		t.Fatalf("down before installing from the chart: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if err := e.Suite.StopCluster(ctx); err != nil {
			t.Errorf("down after the chart's install: %v", err)
		}
		if err := e.Suite.StartCluster(ctx); err != nil {
			t.Errorf("starting the cluster again from config/local: %v", err)
		}
	})
	start := time.Now()
	if err := e.Suite.StartClusterFromChart(context.Background(), helm); err != nil {
		t.Fatalf("installing from the chart: %v", err)
	}
	t.Logf("cluster up, Gleaner installed from the chart and ready in %s", time.Since(start).Round(time.Second))
	e = suite.Env(t) // clients for the new cluster
	dumpOnFailure(t, e)
	expectChartRelease(t, e, helm)
	expectBatchResources(t, e)
	expectUpgradeKeepsCABundle(t, e, helm)
}

// expectChartRelease: helm recorded the release as deployed, the namespace carries the chart's Pod Security labels
// and the workloads are the chart's.
func expectChartRelease(t *testing.T, e *Env, helm string) {
	t.Helper()
	out, err := e.Cluster.HelmCommand(e.Ctx, helm, "status", ChartRelease, "--namespace", GleanerNamespace, "--output", "json").Output()
	if err != nil {
		t.Fatalf("helm status %s: %v", ChartRelease, err)
	}
	var status struct {
		Info struct {
			Status string `json:"status"`
		} `json:"info"`
	}
	if err := json.Unmarshal(out, &status); err != nil || status.Info.Status != "deployed" {
		t.Errorf("helm status %s: %q (%v)\n%s", ChartRelease, status.Info.Status, err, out)
	}

	ns, err := e.Clientset.CoreV1().Namespaces().Get(e.Ctx, GleanerNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" || ns.Labels["pod-security.kubernetes.io/audit"] != "restricted" {
		t.Errorf("namespace %s from helm --create-namespace and the chart: labels %v, want the chart's Pod Security levels", GleanerNamespace, ns.Labels)
	}
	for _, kind := range []string{"deployment/gleaner-manager", "daemonset/gleaner-agent"} {
		managedBy := e.Kubectl("-n", GleanerNamespace, "get", kind, "-o", "jsonpath={.metadata.labels.app\\.kubernetes\\.io/managed-by}")
		if managedBy != "Helm" {
			t.Errorf("%s is not the chart's: managed-by %q", kind, managedBy)
		}
	}

}

// dumpOnFailure logs, when t has failed, what the chart's Gleaner did (before the cleanup restarts the cluster).
func dumpOnFailure(t *testing.T, e *Env) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, args := range [][]string{
			{"-n", GleanerNamespace, "get", "pods", "-o", "wide"},
			{"-n", GleanerNamespace, "logs", "deployment/gleaner-manager", "--tail=40"},
			{"-n", GleanerNamespace, "logs", "daemonset/gleaner-agent", "--tail=40"},
			{"get", "nodemetric", "-o", "yaml"},
			{"get", "node", localcluster.NodeName, "-o", "jsonpath={.status.allocatable}"},
		} {
			out, err := e.Cluster.Kubectl(context.Background(), args...)
			t.Logf("kubectl %v (%v):\n%s", args, err, out)
		}
	})
}

// expectBatchResources: the agent reports the node's NodeMetric and the manager publishes batch resources.
func expectBatchResources(t *testing.T, e *Env) {
	t.Helper()
	// The agent reports once its metric cache covers enough of the aggregation window, then the manager publishes.
	last := "nothing read yet"
	e.Eventually(5*time.Minute, func(ctx context.Context) (bool, string) {
		node, err := e.Clientset.CoreV1().Nodes().Get(ctx, localcluster.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, last + " (then: " + err.Error() + ")"
		}
		nm := &slov1alpha1.NodeMetric{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: localcluster.NodeName}, nm); err != nil {
			return false, last + " (then NodeMetric: " + err.Error() + ")"
		}
		c := node.Status.Allocatable[slov1alpha1.BatchCPU]
		m := node.Status.Allocatable[slov1alpha1.BatchMemory]
		last = fmt.Sprintf("NodeMetric updated %v; allocatable batch-cpu %s, batch-memory %s", nm.Status.UpdateTime, c.String(), m.String())
		return nm.Status.UpdateTime != nil && m.Value() > 0 && !c.IsZero(), last
	})
}

// expectUpgradeKeepsCABundle: an upgrade leaves the caBundle the manager injected; helm's server-side apply
// claims every field of the webhook configuration but that one.
func expectUpgradeKeepsCABundle(t *testing.T, e *Env, helm string) {
	t.Helper()
	if err := e.Cluster.InstallChart(e.Ctx, helm, filepath.Join(e.Suite.RepoRoot, "charts", "gleaner"),
		filepath.Join(e.Suite.RepoRoot, "config", "local", "helm-values.yaml"), ChartRelease, GleanerNamespace); err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	vwc, err := e.Clientset.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(e.Ctx, "gleaner-validating-webhook-configuration", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range vwc.Webhooks {
		if len(w.ClientConfig.CABundle) == 0 {
			t.Errorf("webhook %s has no caBundle after helm upgrade", w.Name)
		}
	}
	for _, mf := range vwc.ManagedFields {
		if mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), `"f:caBundle"`) && strings.HasPrefix(mf.Manager, "helm") {
			t.Errorf("helm (field manager %s, %s) owns a webhook's caBundle: an upgrade would reset it", mf.Manager, mf.Operation)
		}
	}
}
