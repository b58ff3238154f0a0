package monitoring

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

	"github.com/gleaner-sh/gleaner/test/ci"
)

// BuildPrometheus builds Prometheus with hack/tool.sh under root (once; minutes) and returns its path; where it
// cannot, the test skips, and fails under CI.
func BuildPrometheus(t testing.TB, root string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "hack", "tool.sh"), "prometheus")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		ci.Skipf(t, "building Prometheus with hack/tool.sh prometheus: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// Prometheus is a running Prometheus's HTTP API.
type Prometheus struct{ base string }

// StartPrometheus runs the Prometheus binary bin with config (prometheus.yml's text) on a free loopback port until
// the test ends, and returns once it is ready; its log goes to the test's log when the test fails.
func StartPrometheus(t testing.TB, bin, config string) *Prometheus {
	t.Helper()
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
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
	p := &Prometheus{base: "http://" + addr}
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			ci.Skipf(t, "Prometheus exited at start (%v):\n%s", waitErr, tail(string(b), 4000))
		default:
		}
		if _, err := p.Raw(context.Background(), "/-/ready", nil); err == nil {
			return p
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

// Raw GETs path with query parameters and returns the body of a 200 answer.
func (p *Prometheus) Raw(ctx context.Context, path string, params url.Values) ([]byte, error) {
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

// Get decodes the data of a successful API answer into data.
func (p *Prometheus) Get(ctx context.Context, path string, params url.Values, data any) error {
	b, err := p.Raw(ctx, path, params)
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

// Query evaluates expr now and returns how many series (or 1 for a scalar) it gives.
func (p *Prometheus) Query(ctx context.Context, expr string) (int, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.Get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
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

// ScrapeTarget is one of Prometheus's active scrape targets.
type ScrapeTarget struct {
	// Labels are the target's labels after relabelling (job, instance, ...).
	Labels map[string]string `json:"labels"`
	// Health is "up", "down" or "unknown" (not scraped yet).
	Health string `json:"health"`
	// LastError is why the last scrape failed.
	LastError string `json:"lastError"`
}

// Targets returns the active scrape targets.
func (p *Prometheus) Targets(ctx context.Context) ([]ScrapeTarget, error) {
	var targets struct {
		ActiveTargets []ScrapeTarget `json:"activeTargets"`
	}
	err := p.Get(ctx, "/api/v1/targets", nil, &targets)
	return targets.ActiveTargets, err
}
