package testenv

import (
	"context"
	"net"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gleaner-sh/gleaner/pkg/controllers/index"
)

// StartManager starts a controller-runtime manager against the API server, with metrics, probes and leader
// election off and, like gleaner-manager, the shared cache indexes (index.Register), after setup has registered its
// controllers on it; it stops when the test ends. Each customize
// function may change the manager's options first (a client that fails on purpose, say).
func (e *Env) StartManager(t testing.TB, setup func(ctrl.Manager) error, customize ...func(*ctrl.Options)) ctrl.Manager {
	t.Helper()
	return e.StartManagerAs(t, e.Config, setup, customize...)
}

// StartManagerAs is StartManager with the manager talking to the API server through cfg: UserConfig's, say, to run
// controllers as a service account with only the permissions its RBAC manifests grant.
func (e *Env) StartManagerAs(t testing.TB, cfg *rest.Config, setup func(ctrl.Manager) error, customize ...func(*ctrl.Options)) ctrl.Manager {
	t.Helper()
	opts := ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Controller names are global to the process; each test starts its own manager with the same ones.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	for _, c := range customize {
		c(&opts)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatalf("creating a manager: %v", err)
	}
	if err := index.Register(context.Background(), mgr.GetFieldIndexer()); err != nil {
		t.Fatalf("registering the shared indexes: %v", err)
	}
	if err := setup(mgr); err != nil {
		t.Fatalf("setting up the manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("manager stopped with an error: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("manager did not stop within 30s")
		}
	})
	return mgr
}

// Eventually polls f every 50ms until it returns nil, and fails the test with f's last error after 30s.
func Eventually(t testing.TB, what string, f func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = f(); err == nil {
			return
		}
	}
	t.Fatalf("%s: not reached within 30s: %v", what, err)
}

// FreeAddr returns a 127.0.0.1 address with a port that was free a moment ago, for a server a test starts.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}
