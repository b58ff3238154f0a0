package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/test/monitoring"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// Where config/local serves the manager's and the agent's metrics on the node: plain HTTP on loopback (see
// config/local/manager.yaml), so the Prometheus here scrapes them without the token real clusters use
// (test/monitoring's TestPrometheusScrapesTheSecureEndpoints scrapes HTTPS with a token as docs/operations.md says).
const (
	managerMetricsTarget = "127.0.0.1:10280"
	agentMetricsTarget   = "127.0.0.1:10282"
)

// A real Prometheus (hack/tool.sh prometheus) scrapes the local cluster's manager and agent every second with the
// rules of config/monitoring loaded, and every query of the dashboard and the rules is evaluated there: each must
// parse and return data, except the ones monitoring.EmptyOnHealthyCluster lists; every rule must evaluate with
// health ok, and no alert may be pending or firing but those monitoring.ActiveOnLocalCluster lists, whose condition
// must hold.
func TestDashboardAndAlertQueries(t *testing.T) {
	e := suite.Env(t)
	promBin := monitoring.BuildPrometheus(t, e.Suite.RepoRoot)

	// What the queries look at: batch capacity and a batch pod requesting and using it (batch requested, BE usage,
	// cgroup writes of the executor).
	e.MakeRoomForBatch(100)
	e.RunPod(testutil.Pod("monitored-batch").PriorityClass("gleaner-batch").Label(slov1alpha1.LabelQoSClass, "BE").
		Container("c").Image(PauseImage).
		Requests(string(slov1alpha1.BatchCPU), "100", string(slov1alpha1.BatchMemory), "64Mi").
		Limits(string(slov1alpha1.BatchCPU), "100", string(slov1alpha1.BatchMemory), "64Mi").Obj())

	api := startPrometheus(t, promBin, e.Suite.RepoRoot)
	waitTargetsUp(e, api)
	// rate() over monitoring.RateInterval needs two samples of each counter; the rules need their first evaluations.
	time.Sleep(10 * time.Second)
	waitRulesEvaluated(e, api)

	qs, err := monitoring.All(e.Suite.RepoRoot, localcluster.NodeName)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Base == "" {
			checkHasData(e, api, q.ID, q.Expr)
			continue
		}
		// An alert: its condition holds nowhere on a healthy cluster, but where the local cluster really has what
		// it watches for; what it compares has data there.
		n, err := api.Query(e.Ctx, q.Expr)
		why, active := monitoring.ActiveOnLocalCluster[q.ID]
		switch {
		case err != nil:
			t.Errorf("%s: %v", q.ID, err)
		case active && n == 0:
			t.Errorf("%s: no series, but its condition holds on the local cluster (%s): %s", q.ID, why, q.Expr)
		case active:
			t.Logf("%s: %d series, as listed: %s", q.ID, n, why)
		case n != 0:
			t.Errorf("%s: %d series on a healthy cluster: %s", q.ID, n, q.Expr)
		}
		checkHasData(e, api, q.ID, q.Base)
	}
}

// checkHasData fails the test when expr (the query id, or what the alert id compares) does not evaluate or returns
// no data, unless monitoring.EmptyOnHealthyCluster lists id.
func checkHasData(e *Env, api *monitoring.Prometheus, id, expr string) {
	e.t.Helper()
	why, listed := monitoring.EmptyOnHealthyCluster[id]
	n, err := api.Query(e.Ctx, expr)
	switch {
	case err != nil:
		e.t.Errorf("%s: %v", id, err)
	case n == 0 && !listed:
		e.t.Errorf("%s returns no data on the local cluster: %s", id, expr)
	case n == 0:
		e.t.Logf("%s: empty, as listed: %s", id, why)
	default:
		e.t.Logf("%s: %d series", id, n)
	}
}

// waitTargetsUp waits until Prometheus scrapes both the manager and the agent.
func waitTargetsUp(e *Env, api *monitoring.Prometheus) {
	e.t.Helper()
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		targets, err := api.Targets(ctx)
		if err != nil {
			return false, err.Error()
		}
		up := 0
		for _, tg := range targets {
			if tg.Health == "up" {
				up++
			}
		}
		return up == 2 && len(targets) == 2, fmt.Sprintf("targets: %+v", targets)
	})
}

// waitRulesEvaluated waits until every rule was evaluated with health ok, and no alert is pending or firing.
func waitRulesEvaluated(e *Env, api *monitoring.Prometheus) {
	e.t.Helper()
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		var rules struct {
			Groups []struct {
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
					State     string `json:"state"`
				} `json:"rules"`
			} `json:"groups"`
		}
		if err := api.Get(ctx, "/api/v1/rules", nil, &rules); err != nil {
			return false, err.Error()
		}
		var notOK []string
		n := 0
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				n++
				_, active := monitoring.ActiveOnLocalCluster["alert "+r.Name]
				if r.Health != "ok" || (r.State != "inactive" && !active) {
					notOK = append(notOK, fmt.Sprintf("%s: health %s, state %s %s", r.Name, r.Health, r.State, r.LastError))
				}
			}
		}
		return n > 0 && len(notOK) == 0, fmt.Sprintf("%d rules loaded; not ok or not inactive: %v", n, notOK)
	})
}

// startPrometheus runs Prometheus scraping the manager and the agent every second with the rules loaded, until the
// test ends.
func startPrometheus(t *testing.T, bin, root string) *monitoring.Prometheus {
	t.Helper()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: %s
    static_configs: [{targets: [%q]}]
  - job_name: %s
    static_configs: [{targets: [%q], labels: {node: %q}}]
`, filepath.Join(root, monitoring.RulesPath), monitoring.ManagerJob, managerMetricsTarget,
		monitoring.AgentJob, agentMetricsTarget, localcluster.NodeName)
	return monitoring.StartPrometheus(t, bin, config)
}
