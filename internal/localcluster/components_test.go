package localcluster

import (
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHTTPReady(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer secret" {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		_, _ = w.Write([]byte(`{"health":"true"}`))
	}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	if err := httpReady(srv.URL, pool, "secret", `"health":"true"`)(t.Context()); err != nil {
		t.Errorf("ready server: %v", err)
	}
	if err := httpReady(srv.URL, pool, "wrong", "true")(t.Context()); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("wrong token: %v, want the 403", err)
	}
	if err := httpReady(srv.URL, pool, "secret", "ok")(t.Context()); err == nil {
		t.Error("a body without the wanted text counts as ready")
	}
	if err := httpReady(srv.URL, x509.NewCertPool(), "secret", "true")(t.Context()); err == nil {
		t.Error("a server whose certificate the pool does not trust counts as ready")
	}
}

func TestSocketReady(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ready := socketReady(path)
	if err := ready(t.Context()); err == nil {
		t.Error("a missing socket counts as ready")
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := ready(t.Context()); err != nil {
		t.Errorf("listening socket: %v", err)
	}
	_ = l.Close()
	_ = os.Remove(path)
	if err := ready(t.Context()); err == nil {
		t.Error("a closed socket counts as ready")
	}
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("1\n2\n3\n4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := tail(path, 2); !strings.HasSuffix(got, "\n3\n4") {
		t.Errorf("tail = %q, want the last two lines", got)
	}
	if got := tail(filepath.Join(t.TempDir(), "missing"), 2); got != "" {
		t.Errorf("tail of a missing file = %q, want empty", got)
	}
}
