package manager

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/sloconfigmap"
	"github.com/gleaner-sh/gleaner/pkg/version"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var env = testenv.New()

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(managerArgsEnv); ok {
		os.Exit(runManagerProcess(args))
	}
	os.Exit(env.Run(m))
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr []string
	}{
		{name: "defaults are valid", mutate: func(*Options) {}},
		{name: "probes off", mutate: func(o *Options) { o.MetricsAddr, o.HealthAddr = "0", "0" }},
		{name: "empty namespace", mutate: func(o *Options) { o.Namespace = "" }, wantErr: []string{"--namespace"}},
		{
			name:    "leader election without a lease name",
			mutate:  func(o *Options) { o.LeaderElectionID = "" },
			wantErr: []string{"--leader-election-id"},
		},
		{name: "leader election off needs no lease name", mutate: func(o *Options) { o.LeaderElect, o.LeaderElectionID = false, "" }},
		{
			name:    "every bad option is reported at once",
			mutate:  func(o *Options) { o.MetricsAddr, o.HealthAddr, o.ConnectTimeout = "8080", "localhost", 0 },
			wantErr: []string{"--metrics-bind-address", "--health-probe-bind-address", "--connect-timeout"},
		},
		{
			name:    "plain HTTP metrics only on loopback",
			mutate:  func(o *Options) { o.Serving.SecureMetrics = false },
			wantErr: []string{"--metrics-secure=false serves the metrics endpoint to anyone who can connect"},
		},
		{name: "plain HTTP metrics on 127.0.0.1", mutate: func(o *Options) { o.Serving.SecureMetrics, o.MetricsAddr = false, "127.0.0.1:10280" }},
		{name: "unknown controller", mutate: func(o *Options) { o.Controllers = []string{"*", "-nosuch"} }, wantErr: []string{`--controllers: unknown name "nosuch"`}},
		{name: "controllers of this manager", mutate: func(o *Options) { o.Controllers = []string{"nodeallocation", "nodeslo", "-nodemetric"} }},
		{
			// Leaving the loader out used to leave nodeslo, nodemetric and noderesource on an empty config.
			name:    "the SLO config loader cannot be switched off",
			mutate:  func(o *Options) { o.Controllers = []string{"*", "-sloconfig"} },
			wantErr: []string{`--controllers: "-sloconfig": the SLO config loader (sloconfig) is part of gleaner-manager and always runs`},
		},
		{
			name:    "nor named as a controller",
			mutate:  func(o *Options) { o.Controllers = []string{"sloconfig", "noderesource"} },
			wantErr: []string{`--controllers: "sloconfig": the SLO config loader (sloconfig) is part of gleaner-manager`, "cannot be switched on or off"},
		},
		{name: "unknown node-resource plugin", mutate: func(o *Options) { o.NodeResource.Plugins = []string{"*", "-gpu"} }, wantErr: []string{`--noderesource-plugins: unknown name "gpu"`}},
		{name: "no noderesource workers", mutate: func(o *Options) { o.NodeResource.Workers = 0 }, wantErr: []string{"--noderesource-workers"}},
		{name: "no explanation rate", mutate: func(o *Options) { o.NodeResource.ExplanationQPS = 0 }, wantErr: []string{"--noderesource-explanation-qps"}},
		{name: "no wait for the first lists", mutate: func(o *Options) { o.CacheSyncTimeout = 0 }, wantErr: []string{"--cache-sync-timeout must be positive"}},
		{name: "client rate", mutate: func(o *Options) { o.KubeAPIQPS = 0 }, wantErr: []string{"--kube-api-qps"}},
		{name: "no SLO ConfigMap name", mutate: func(o *Options) { o.SLOConfigName = "" }, wantErr: []string{"--slo-config-name"}},
		{name: "webhook port out of range", mutate: func(o *Options) { o.Webhook.Port = 70000 }, wantErr: []string{"--webhook-port"}},
		{name: "webhook off needs nothing", mutate: func(o *Options) { o.Webhook = WebhookOptions{} }},
		{
			name:    "external certificates need their directory",
			mutate:  func(o *Options) { o.Webhook.CertSecret, o.Webhook.CertDir = "", "" },
			wantErr: []string{"--webhook-cert-dir"},
		},
		{
			name:    "managed certificates need the service and configuration names",
			mutate:  func(o *Options) { o.Webhook.ServiceName = "" },
			wantErr: []string{"--webhook-service-name"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			tt.mutate(o)
			err := o.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want errors %q, got none", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestConfigLoaderIsNotAController: the loader is not among the controllers --controllers chooses from (New sets it
// up before them), so no selection leaves a controller reading a config that nothing loads.
func TestConfigLoaderIsNotAController(t *testing.T) {
	if names := controllerNames(); slices.Contains(names, sloconfigmap.Name) {
		t.Fatalf("controllers %q include the config loader %q, which --controllers could then switch off", names, sloconfigmap.Name)
	}
}

func TestRunFailsClearlyWithoutACluster(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// Port 1 on loopback refuses connections: a cluster that is configured but not there.
	writeFile(t, kubeconfig, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	o := NewOptions()
	o.Kubeconfig = kubeconfig
	o.ConnectTimeout = 2 * time.Second
	err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "cannot reach the Kubernetes API server at https://127.0.0.1:1") {
		t.Fatalf("want a clear unreachable-cluster error, got %v", err)
	}

	o.Kubeconfig = filepath.Join(t.TempDir(), "missing")
	if err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "loading the kubeconfig") {
		t.Fatalf("want a kubeconfig error, got %v", err)
	}
}

// TestManagerExitsWhenAFirstListNeverCompletes: --cache-sync-timeout bounds the wait for the first lists, and the
// manager exits with an error that names the cache, rather than waiting forever or at controller-runtime's fixed 2
// minutes. The manager's identity here may list nothing, so the pod cache never fills.
func TestManagerExitsWhenAFirstListNeverCompletes(t *testing.T) {
	e := env.Start(t)
	token := e.ServiceAccountToken(t, "gleaner-system", "no-rights", nil)
	m := spawnManagerProcess(t, "--kubeconfig="+e.TokenKubeconfig(t, token), "--leader-elect=false", "--cache-sync-timeout=5s")
	select {
	case <-m.exited:
	case <-time.After(90 * time.Second):
		t.Fatalf("gleaner-manager still runs 90 s into a 5 s --cache-sync-timeout; log:\n%s", m.log())
	}
	if m.err == nil {
		t.Fatalf("gleaner-manager exited cleanly; log:\n%s", m.log())
	}
	if log := m.log(); !strings.Contains(log, "failed to wait for nodeallocation caches to sync") {
		t.Errorf("the exit does not say which caches did not sync; log:\n%s", log)
	}
}

// TestManagerServesAndStops runs gleaner-manager against a real API server as config/default installs it: with a
// token of its service account, only the RBAC of config/rbac, the webhook configurations, and config/policy holding
// it to the webhooks' caBundle. It must take the leader lease, keep its webhook certificate and both caBundles (the
// colocation profile webhook's informers also need their RBAC before readyz passes), create a
// node's NodeAllocation, NodeSLO and NodeMetric, answer its probes and serve metrics to an authorized scraper (with
// HTTP/2 off), then stop cleanly on cancel and hand the lease back. (One manager per test process: the metrics
// registry is the process's.)
func TestManagerServesAndStops(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	vwc, mwc := installAsDefault(t, e)
	e.CreateNode(t, testutil.Node("rbac-node").Allocatable("cpu", "4", "memory", "8Gi").Obj())

	o := NewOptions()
	o.Kubeconfig = e.TokenKubeconfig(t, e.ServiceAccountToken(t, "gleaner-system", "gleaner-manager", nil))
	o.MetricsAddr, o.HealthAddr = freeAddr(t), freeAddr(t)
	// The webhook serves with the certificate the manager generates itself and puts into the webhook
	// configuration's caBundle; readyz only passes once it serves TLS.
	_, port, _ := net.SplitHostPort(freeAddr(t))
	o.Webhook.Port, _ = strconv.Atoi(port)
	o.ShutdownTimeout = 5 * time.Second
	// A selection without a word about the config: the loader runs anyway (its metric below), since noderesource
	// reads what it loads.
	o.Controllers = []string{"nodeallocation", "noderesource", "nodeslo", "nodemetric", "colocationprofile"}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(runCtx, o) }()
	t.Cleanup(cancel)

	waitHTTP(t, done, "http://"+o.HealthAddr+"/healthz", "", "ok")
	waitHTTP(t, done, "http://"+o.HealthAddr+"/readyz", "", "ok")
	// Metrics over HTTPS (the default), for a scraper the API server authenticates and authorizes.
	scraper := scraperToken(t, e)
	metrics := "https://" + o.MetricsAddr + "/metrics"
	waitHTTP(t, done, metrics, scraper, "leader_election_master_status")
	waitHTTP(t, done, metrics, scraper, `gleaner_slo_config_key_valid{key="colocation-config"} 1`)
	// The controllers' metrics go to the registry the manager serves.
	waitHTTP(t, done, metrics, scraper, "gleaner_noderesource_node_writes_total 0")
	waitHTTP(t, done, metrics, scraper, "gleaner_nodeallocation_status_writes_total")
	build := version.Get()
	waitHTTP(t, done, metrics, scraper, fmt.Sprintf("gleaner_build_info{commit=%q,goversion=%q,version=%q} 1", build.Commit, build.GoVersion, build.Version))
	// Both webhook configurations were installed without a caBundle: the manager found them so and set it.
	waitHTTP(t, done, metrics, scraper, `gleaner_webhook_cabundle_repairs_total{configuration="`+vwc.Name+`",reason="missing"} 1`)
	waitHTTP(t, done, metrics, scraper, `gleaner_webhook_cabundle_repairs_total{configuration="`+mwc.Name+`",reason="missing"} 1`)
	if status := statusOf(t, metrics, ""); status != http.StatusUnauthorized {
		t.Errorf("GET /metrics without a token: %d, want 401", status)
	}
	// HTTP/2 is off on the metrics and webhook servers (--enable-http2=false).
	for _, addr := range []string{o.MetricsAddr, net.JoinHostPort("127.0.0.1", strconv.Itoa(o.Webhook.Port))} {
		if p := negotiatedProtocol(t, addr); p != "http/1.1" {
			t.Errorf("%s negotiated %q with a client offering h2, want http/1.1", addr, p)
		}
	}
	secret := &corev1.Secret{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Webhook.CertSecret}, secret); err != nil || len(secret.Data["tls.crt"]) == 0 {
		t.Errorf("the manager did not keep its webhook certificate in Secret %s: %v", o.Webhook.CertSecret, err)
	}
	eventually(t, func() error {
		got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(vwc), got); err != nil {
			return err
		}
		if len(got.Webhooks[0].ClientConfig.CABundle) == 0 {
			return errors.New("the webhook configuration has no caBundle yet")
		}
		return nil
	})
	eventually(t, func() error {
		got := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(mwc), got); err != nil {
			return err
		}
		if len(got.Webhooks[0].ClientConfig.CABundle) == 0 {
			return errors.New("the mutating webhook configuration (colocation profiles) has no caBundle yet")
		}
		return nil
	})
	for _, obj := range []client.Object{&slov1alpha1.NodeAllocation{}, &slov1alpha1.NodeSLO{}, &slov1alpha1.NodeMetric{}} {
		eventually(t, func() error { return e.Client.Get(ctx, client.ObjectKey{Name: "rbac-node"}, obj) })
	}
	expectProfileCounted(t, e)

	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: o.Namespace, Name: o.LeaderElectionID}
	eventually(t, func() error {
		if err := e.Client.Get(ctx, key, lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Errorf("lease %s has no holder", key)
		}
		return nil
	})

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("manager stopped with an error: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("manager did not stop within 15s of cancel")
	}
	if err := e.Client.Get(ctx, key, lease); err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("lease still held by %q after shutdown; the next replica would wait for it to expire", *h)
	}
}

// expectProfileCounted checks the colocationprofile controller of a running manager: it counts a profile's pods, one
// bound to a node (the pod cache) and one waiting for a node (its own cache of those), and writes the profile's
// status.
func expectProfileCounted(t *testing.T, e *testenv.Env) {
	t.Helper()
	ctx := context.Background()
	profile := &configv1alpha1.ColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: "rbac-profile"}, Spec: configv1alpha1.ColocationProfileSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rbac-profile"}}}}
	if err := e.Client.Create(ctx, profile); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), profile) })
	e.CreatePod(t, testutil.Pod("rbac-bound").Node("rbac-node").Label(configv1alpha1.LabelColocationProfile, profile.Name).Container("app").Obj())
	e.CreatePod(t, testutil.Pod("rbac-waiting").Label(configv1alpha1.LabelColocationProfile, profile.Name).Container("app").Obj())
	eventually(t, func() error {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(profile), profile); err != nil {
			return err
		}
		if st := profile.Status; st.ObservedGeneration != 1 || st.MatchedPods != 2 {
			return fmt.Errorf("profile %s: observedGeneration %d, matchedPods %d; want 1 and 2", profile.Name, st.ObservedGeneration, st.MatchedPods)
		}
		return nil
	})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// waitHTTP polls url, with token as bearer token when not empty, until it answers 200 with a body containing
// want, failing early if the manager exits. HTTPS certificates are not verified: the metrics server's is
// self-signed, as in production.
func waitHTTP(t *testing.T, done <-chan error, url, token, want string) {
	t.Helper()
	var last string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("manager exited while waiting for %s: %v", url, err)
		default:
		}
		resp, err := scrape(url, token)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(body), want) {
				return
			}
			last = fmt.Sprintf("status %d, body %.200q", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s never answered 200 with %q; last: %s", url, want, last)
}

func scrape(url, token string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed
	return c.Do(req)
}

func statusOf(t *testing.T, url, token string) int {
	t.Helper()
	resp, err := scrape(url, token)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// scraperToken applies config/rbac/metrics_reader_role.yaml and returns the token of a service account bound to
// its ClusterRole gleaner-metrics-reader, as Prometheus's would be.
func scraperToken(t *testing.T, e *testenv.Env) string {
	t.Helper()
	const reader = "../../config/rbac/metrics_reader_role.yaml"
	if out, err := e.Kubectl("apply", "-f", reader).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -f %s: %v\n%s", reader, err, out)
	}
	token := e.ServiceAccountToken(t, "monitoring", "prometheus", nil)
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-gleaner-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gleaner-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "monitoring", Name: "prometheus"}},
	}
	if err := e.Client.Create(context.Background(), binding); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), binding) })
	return token
}

// negotiatedProtocol connects to the TLS server at addr offering HTTP/2 and HTTP/1.1 and returns its choice.
func negotiatedProtocol(t *testing.T, addr string) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}}) //nolint:gosec // self-signed
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().NegotiatedProtocol
}

func eventually(t *testing.T, f func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err = f(); err == nil {
			return
		}
	}
	t.Fatalf("condition not met within 30s: %v", err)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
