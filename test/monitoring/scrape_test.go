package monitoring

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/gleaner-sh/gleaner/pkg/serving"
	"github.com/gleaner-sh/gleaner/test/testenv"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// A real Prometheus, configured as docs/operations.md#monitoring says (HTTPS, the service account's token, the
// gleaner-metrics-reader binding), scrapes metrics endpoints served the way gleaner-manager and gleaner-agent serve
// theirs by default (--metrics-secure: a self-signed certificate, TokenReview and SubjectAccessReview through a real
// API server). Its targets are up and their series queryable; a scraper without the binding is refused (403). The
// e2e suite's Prometheus cannot show this: the local cluster serves its metrics as plain HTTP on loopback.
func TestPrometheusScrapesTheSecureEndpoints(t *testing.T) {
	bin := BuildPrometheus(t, root)
	e := env.Start(t)
	ctx := context.Background()
	files := []string{"-f", root + "/config/rbac/metrics_auth_role.yaml", "-f", root + "/config/rbac/metrics_reader_role.yaml"}
	if out, err := e.Kubectl(append([]string{"apply"}, files...)...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply %v: %v\n%s", files, err, out)
	}
	// The endpoints run as gleaner-agent's service account, with only the review rights metrics_auth_role grants.
	server, err := e.UserConfig("system:serviceaccount:gleaner-system:gleaner-agent", "system:serviceaccounts",
		"system:serviceaccounts:gleaner-system", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]string{}
	for _, job := range []string{ManagerJob, AgentJob} {
		targets[job] = serveSecureMetrics(t, server, job)
	}

	prom, stranger := scraperTokenFiles(t, e)
	config := scrapeConfigFor(t, documentedScrapeConfig(t), targets, prom, stranger)
	p := StartPrometheus(t, bin, config)

	checkTargets(t, waitScraped(t, p))
	for _, job := range []string{ManagerJob, AgentJob} {
		expr := fmt.Sprintf(`gleaner_scrape_test_info{job=%q}`, job)
		if n, err := p.Query(ctx, expr); err != nil || n != 1 {
			t.Errorf("%s: %d series (error %v), want 1", expr, n, err)
		}
	}
}

// scraperTokenFiles writes, into files of the test, the tokens of two service accounts of namespace monitoring:
// prometheus, bound to gleaner-metrics-reader, and stranger, bound to nothing; it returns their paths.
func scraperTokenFiles(t *testing.T, e *testenv.Env) (prom, stranger string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-gleaner-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gleaner-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "monitoring", Name: "prometheus"}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(context.Background(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	dir := t.TempDir()
	prom, stranger = filepath.Join(dir, "prometheus"), filepath.Join(dir, "stranger")
	for path, sa := range map[string]string{prom: "prometheus", stranger: "stranger"} {
		if err := os.WriteFile(path, []byte(e.ServiceAccountToken(t, "monitoring", sa, nil)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return prom, stranger
}

// waitScraped waits (a minute at most) until Prometheus has scraped each of its three targets once, and returns them.
func waitScraped(t *testing.T, p *Prometheus) []ScrapeTarget {
	t.Helper()
	var last []ScrapeTarget
	deadline := time.Now().Add(time.Minute)
	for !scraped(last) {
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus's targets after a minute: %+v", last)
		}
		time.Sleep(500 * time.Millisecond)
		var err error
		if last, err = p.Targets(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return last
}

// checkTargets fails the test unless the manager's and the agent's jobs are up and the stranger's is refused (403).
func checkTargets(t *testing.T, targets []ScrapeTarget) {
	t.Helper()
	for _, tg := range targets {
		job := tg.Labels["job"]
		switch {
		case job == "stranger" && (tg.Health != "down" || !strings.Contains(tg.LastError, "403")):
			t.Errorf("the scraper without the reader binding: health %s, error %q; want down with 403", tg.Health, tg.LastError)
		case job != "stranger" && tg.Health != "up":
			t.Errorf("job %s: health %s, error %q; want up", job, tg.Health, tg.LastError)
		}
	}
}

// scraped says whether every target of the scrape has been scraped at least once.
func scraped(targets []ScrapeTarget) bool {
	if len(targets) != 3 {
		return false
	}
	for _, tg := range targets {
		if tg.Health == "unknown" || tg.Health == "" {
			return false
		}
	}
	return true
}

// serveSecureMetrics serves a registry with one series, gleaner_scrape_test_info{served_as=JOB}, as the binaries
// serve /metrics by default (serving.DefaultOptions: HTTPS with a self-signed certificate; serving.Protect with
// identity cfg), on a loopback port until the test ends, and returns host:port.
func serveSecureMetrics(t *testing.T, cfg *rest.Config, job string) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "gleaner_scrape_test_info", Help: "1", ConstLabels: prometheus.Labels{"served_as": job}})
	info.Set(1)
	reg.MustRegister(info)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	h, err := serving.Protect(cfg, clock.RealClock{}, klog.Background(), mux)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l, err := serving.DefaultOptions().Listener(ctx, klog.Background(), "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { cancel(); _ = srv.Close() })
	return l.Addr().String()
}

// scrapeConfigFor turns the documented configuration into one for this test: each job's Kubernetes discovery and
// relabelling give way to a static target (the agent's labelled with a node, as the relabelling does), the token
// file is token's, the scrape interval one second; a third job, "stranger", is the manager's job with the token of
// a service account without the reader binding.
func scrapeConfigFor(t *testing.T, documented string, targets map[string]string, token, strangerToken string) string {
	t.Helper()
	var cfg struct {
		ScrapeConfigs []map[string]any `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(documented), &cfg); err != nil {
		t.Fatalf("parsing the documented scrape configuration: %v", err)
	}
	var jobs []map[string]any
	for _, job := range cfg.ScrapeConfigs {
		name, _ := job["job_name"].(string)
		target, ok := targets[name]
		if !ok {
			t.Fatalf("the documented configuration has a job %q this test does not serve", name)
		}
		auth, _ := job["authorization"].(map[string]any)
		if auth["credentials_file"] != inClusterTokenFile || job["scheme"] != "https" {
			t.Fatalf("job %s no longer scrapes HTTPS with the pod's token: %v", name, job)
		}
		delete(job, "kubernetes_sd_configs")
		delete(job, "relabel_configs")
		static := map[string]any{"targets": []string{target}}
		if name == AgentJob {
			static["labels"] = map[string]string{"node": "node-1"}
		}
		job["static_configs"] = []any{static}
		job["authorization"] = map[string]any{"credentials_file": token}
		jobs = append(jobs, job)
		if name == ManagerJob {
			stranger := map[string]any{}
			for k, v := range job {
				stranger[k] = v
			}
			stranger["job_name"] = "stranger"
			stranger["authorization"] = map[string]any{"credentials_file": strangerToken}
			jobs = append(jobs, stranger)
		}
	}
	out, err := yaml.Marshal(map[string]any{
		"global":         map[string]any{"scrape_interval": "1s", "scrape_timeout": "1s"},
		"scrape_configs": jobs,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
