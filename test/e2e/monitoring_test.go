package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/test/ci"
	"github.com/gleaner-sh/gleaner/test/monitoring"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// Where config/local serves the manager's and the agent's metrics on the node: plain HTTP on loopback (see
// config/local/manager.yaml), so the Prometheus here scrapes them without the token real clusters use.
const (
	managerMetricsTarget = "127.0.0.1:10280"
	agentMetricsTarget   = "127.0.0.1:10282"
)

// A real Prometheus (hack/tool.sh prometheus) scrapes the local cluster's manager and agent every second with the
// rules of config/monitoring loaded, and every query of the dashboard and the rules is evaluated there: each must
// parse and return data, except the ones monitoring.EmptyOnHealthyCluster lists; every rule must evaluate with
// health ok, and no alert may be pending or firing on this healthy cluster.
func TestDashboardAndAlertQueries(t *testing.T) {
	e := suite.Env(t)
	promBin := buildPrometheus(t, e.Suite.RepoRoot)

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
		// An alert: its condition holds nowhere on a healthy cluster; what it compares has data there.
		if n, err := api.query(e.Ctx, q.Expr); err != nil || n != 0 {
			t.Errorf("%s: %d series (error %v) on a healthy cluster: %s", q.ID, n, err, q.Expr)
		}
		checkHasData(e, api, q.ID, q.Base)
	}
}

// checkHasData fails the test when expr (the query id, or what the alert id compares) does not evaluate or returns
// no data, unless monitoring.EmptyOnHealthyCluster lists id.
func checkHasData(e *Env, api *promAPI, id, expr string) {
	e.t.Helper()
	why, listed := monitoring.EmptyOnHealthyCluster[id]
	n, err := api.query(e.Ctx, expr)
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
func waitTargetsUp(e *Env, api *promAPI) {
	e.t.Helper()
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		var targets struct {
			ActiveTargets []struct {
				Labels    map[string]string `json:"labels"`
				Health    string            `json:"health"`
				LastError string            `json:"lastError"`
			} `json:"activeTargets"`
		}
		if err := api.get(ctx, "/api/v1/targets", nil, &targets); err != nil {
			return false, err.Error()
		}
		up := 0
		for _, tg := range targets.ActiveTargets {
			if tg.Health == "up" {
				up++
			}
		}
		return up == 2 && len(targets.ActiveTargets) == 2, fmt.Sprintf("targets: %+v", targets.ActiveTargets)
	})
}

// waitRulesEvaluated waits until every rule was evaluated with health ok, and no alert is pending or firing.
func waitRulesEvaluated(e *Env, api *promAPI) {
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
		if err := api.get(ctx, "/api/v1/rules", nil, &rules); err != nil {
			return false, err.Error()
		}
		var notOK []string
		n := 0
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				n++
				if r.Health != "ok" || r.State != "inactive" {
					notOK = append(notOK, fmt.Sprintf("%s: health %s, state %s %s", r.Name, r.Health, r.State, r.LastError))
				}
			}
		}
		return n > 0 && len(notOK) == 0, fmt.Sprintf("%d rules loaded; not ok or not inactive: %v", n, notOK)
	})
}

// buildPrometheus builds Prometheus with hack/tool.sh (once; minutes); where it cannot, the test skips, and fails
// under CI.
func buildPrometheus(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "hack", "tool.sh"), "prometheus")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		ci.Skipf(t, "building Prometheus with hack/tool.sh prometheus: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// promAPI is a Prometheus's HTTP API.
type promAPI struct{ base string }

// startPrometheus runs Prometheus on a free loopback port, scraping the manager and the agent every second with the
// rules loaded, until the test ends; its log goes to the test's log when the test fails.
func startPrometheus(t *testing.T, bin, root string) *promAPI {
	t.Helper()
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
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
	configPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "prometheus.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+configPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		ci.Skipf(t, "starting Prometheus %s: %v", bin, err)
	}
	exited := make(chan struct{})
	var waitErr error // Wait's error, read once exited is closed
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("Prometheus's log:\n%s", tail(string(b), 4000))
		}
	})
	api := &promAPI{base: "http://" + addr}
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			ci.Skipf(t, "Prometheus exited at start (%v):\n%s", waitErr, tail(string(b), 4000))
		default:
		}
		if _, err := api.raw(context.Background(), "/-/ready", nil); err == nil {
			return api
		} else if time.Now().After(deadline) {
			t.Fatalf("Prometheus not ready after a minute: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// raw GETs path with query parameters and returns the body of a 200 answer.
func (p *promAPI) raw(ctx context.Context, path string, params url.Values) ([]byte, error) {
	u := p.base + path
	if params != nil {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return b, fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	return b, nil
}

// get decodes the data of a successful API answer into data.
func (p *promAPI) get(ctx context.Context, path string, params url.Values, data any) error {
	b, err := p.raw(ctx, path, params)
	if err != nil {
		return err
	}
	var answer struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &answer); err != nil {
		return fmt.Errorf("decoding the answer of %s: %w", path, err)
	}
	if answer.Status != "success" {
		return fmt.Errorf("%s: %s", path, answer.Error)
	}
	return json.Unmarshal(answer.Data, data)
}

// query evaluates expr now and returns how many series (or 1 for a scalar) it gives.
func (p *promAPI) query(ctx context.Context, expr string) (int, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return 0, err
	}
	if data.ResultType == "scalar" || data.ResultType == "string" {
		return 1, nil
	}
	var series []json.RawMessage
	if err := json.Unmarshal(data.Result, &series); err != nil {
		return 0, fmt.Errorf("decoding the result of %q: %w", expr, err)
	}
	return len(series), nil
}
