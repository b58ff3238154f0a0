package serving

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gleaner-sh/gleaner/test/testenv"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		addr    string
		wantErr string
	}{
		{name: "secure on every interface", opts: DefaultOptions(), addr: ":8080"},
		{name: "plain on 127.0.0.1", opts: Options{}, addr: "127.0.0.1:10280"},
		{name: "plain on localhost", opts: Options{}, addr: "localhost:10280"},
		{name: "plain on ::1", opts: Options{}, addr: "[::1]:10280"},
		{name: "plain with metrics off", opts: Options{}, addr: "0"},
		{name: "plain on every interface", opts: Options{}, addr: ":8080", wantErr: `--metrics-secure=false serves the metrics endpoint to anyone who can connect: bind it to a loopback address such as 127.0.0.1:PORT, or keep --metrics-secure (got --metrics-bind-address ":8080")`},
		{name: "plain on 0.0.0.0", opts: Options{}, addr: "0.0.0.0:8080", wantErr: "bind it to a loopback address"},
		{name: "plain on a node's address", opts: Options{}, addr: "10.0.0.5:8080", wantErr: "bind it to a loopback address"},
		{name: "plain on a name", opts: Options{}, addr: "node-1:8080", wantErr: "bind it to a loopback address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate(tt.addr)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("want an error containing %q, got %v", tt.wantErr, err)
			}
		})
	}
}

// serve serves h on a loopback listener made by o until the test ends and returns its base URL.
func serve(t *testing.T, o Options, h http.Handler) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l, err := o.Listener(ctx, klog.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { cancel(); _ = srv.Close() })
	scheme := "http"
	if o.SecureMetrics {
		scheme = "https"
	}
	return scheme + "://" + l.Addr().String()
}

// get fetches url with token (none when empty), skipping certificate verification as a scraper of a self-signed
// endpoint does, and returns the status and body.
func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed, as in production
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// pages is what a metrics server serves: /metrics for scrapers, /debug/executor for people.
func pages() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("gleaner_up 1")) })
	mux.HandleFunc("/debug/executor", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("audit")) })
	return mux
}

// TestMetricsNeedATokenTheAPIServerAuthorizes serves as gleaner-agent's service account with only the RBAC of
// config/rbac/metrics_auth_role.yaml, and lets in only a scraper bound to gleaner-metrics-reader
// (config/rbac/metrics_reader_role.yaml), and only on /metrics. A scraper whose binding is removed is let in until
// the cached decision expires.
func TestMetricsNeedATokenTheAPIServerAuthorizes(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	files := []string{"-f", "../../config/rbac/metrics_auth_role.yaml", "-f", "../../config/rbac/metrics_reader_role.yaml"}
	if out, err := e.Kubectl(append([]string{"apply"}, files...)...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply %v: %v\n%s", files, err, out)
	}
	t.Cleanup(func() { _ = e.Kubectl(append([]string{"delete", "--wait=false"}, files...)...).Run() })
	agent, err := e.UserConfig("system:serviceaccount:gleaner-system:gleaner-agent", "system:serviceaccounts", "system:serviceaccounts:gleaner-system", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	h, err := Protect(agent, clk, klog.Background(), pages())
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, DefaultOptions(), h)

	scraper := e.ServiceAccountToken(t, "monitoring", "prometheus", nil)
	stranger := e.ServiceAccountToken(t, "monitoring", "stranger", nil)
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-gleaner-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gleaner-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "monitoring", Name: "prometheus"}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})

	for _, c := range []struct {
		name, path, token string
		want              int
	}{
		{"no token", "/metrics", "", http.StatusUnauthorized},
		{"a token the API server does not know", "/metrics", "made-up", http.StatusUnauthorized},
		{"a service account without the reader role", "/metrics", stranger, http.StatusForbidden},
		{"the scraper", "/metrics", scraper, http.StatusOK},
		{"the scraper on a debug page", "/debug/executor", scraper, http.StatusForbidden},
	} {
		if status, body := get(t, url+c.path, c.token); status != c.want {
			t.Errorf("%s: GET %s = %d %q, want %d", c.name, c.path, status, body, c.want)
		}
	}
	if status, body := get(t, url+"/metrics", stranger); !strings.Contains(body, `user "system:serviceaccount:monitoring:stranger" may not get /metrics`) {
		t.Errorf("the refusal does not say who and what: %d %q", status, body)
	}

	// The decision is cached for allowedTTL: the API server is not asked on every scrape.
	if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the API server forgets the binding", func() error {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:monitoring:prometheus", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if r.Status.Allowed {
			return errAllowed
		}
		return nil
	})
	if status, _ := get(t, url+"/metrics", scraper); status != http.StatusOK {
		t.Errorf("within the cache's time the scraper got %d, want 200", status)
	}
	clk.Step(allowedTTL)
	if status, _ := get(t, url+"/metrics", scraper); status != http.StatusForbidden {
		t.Errorf("after the cache's time the scraper without a binding got %d, want 403", status)
	}
}

var errAllowed = errors.New("the SubjectAccessReview still allows it")

// A server whose identity may not ask the API server refuses every request rather than serving it.
func TestMetricsFailClosedWithoutReviewRights(t *testing.T) {
	e := env.Start(t)
	nobody, err := e.UserConfig("gleaner-test-no-review-rights")
	if err != nil {
		t.Fatal(err)
	}
	h, err := Protect(nobody, clocktesting.NewFakeClock(time.Now()), klog.Background(), pages())
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, DefaultOptions(), h)
	token := e.ServiceAccountToken(t, "monitoring", "prometheus", nil)
	if status, body := get(t, url+"/metrics", token); status != http.StatusInternalServerError || strings.Contains(body, "gleaner_up") {
		t.Errorf("GET /metrics = %d %q, want 500 without the page", status, body)
	}
	if _, err := Protect(nil, clocktesting.NewFakeClock(time.Now()), klog.Background(), pages()); err == nil {
		t.Error("Protect without an API server configuration: want an error")
	}
}

// negotiated connects to addr offering HTTP/2 and HTTP/1.1 and returns the protocol the server chose.
func negotiated(t *testing.T, url string) string {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}}) //nolint:gosec // self-signed
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().NegotiatedProtocol
}

func TestHTTP2OnlyWhenAsked(t *testing.T) {
	if got := negotiated(t, serve(t, DefaultOptions(), pages())); got != "http/1.1" {
		t.Errorf("by default the server negotiated %q, want http/1.1", got)
	}
	o := DefaultOptions()
	o.EnableHTTP2 = true
	if got := negotiated(t, serve(t, o, pages())); got != "h2" {
		t.Errorf("with --enable-http2 the server negotiated %q, want h2", got)
	}
}

// servedCertificate returns the DER of the certificate the server at url presents.
func servedCertificate(t *testing.T, url string) []byte {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test compares the certificate itself
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0].Raw
}

func TestListenerServesTheCertDirsCertificate(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("metrics.example", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.MetricsCertDir = dir
	// Without the files: a self-signed certificate of its own.
	if got := servedCertificate(t, serve(t, o, pages())); len(got) == 0 {
		t.Fatal("no certificate served")
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	if got := servedCertificate(t, serve(t, o, pages())); !bytes.Equal(got, block.Bytes) {
		t.Error("the server does not present the certificate of --metrics-cert-dir")
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Listener(context.Background(), klog.Background(), "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "loading the metrics certificate") {
		t.Errorf("a bad key: want a clear error, got %v", err)
	}
}

func TestBearerToken(t *testing.T) {
	for header, want := range map[string]string{
		"Bearer abc": "abc", "bearer abc": "abc", "Bearer  abc ": "abc", "Basic abc": "", "Bearer": "", "Bearer ": "", "": "",
	} {
		req := &http.Request{Header: http.Header{}}
		req.Header.Set("Authorization", header)
		if got, ok := bearerToken(req); got != want || ok != (want != "") {
			t.Errorf("bearerToken(%q) = %q, %v; want %q", header, got, ok, want)
		}
	}
}
