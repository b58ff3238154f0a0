package testenv

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Test managers get managerShutdown to stop their runnables (ctrl.Options.GracefulShutdownTimeout) and the test
// waits managerStopWait for Start to return. The wait is the longer, so that a runnable that does not stop shows as
// the manager's own error after the shutdown period, with what did not stop (StopReport), rather than as the
// wait running out first: with both at controller-runtime's default of 30s the wait always lost that race.
const (
	managerShutdown = 15 * time.Second
	managerStopWait = 45 * time.Second
)

// StartManager starts a controller-runtime manager against the API server, with metrics, probes and leader
// election off, after setup has registered its controllers on it; it stops when the test ends. Each customize
// function may change the manager's options first (a client that fails on purpose, say).
func (e *Env) StartManager(t testing.TB, setup func(ctrl.Manager) error, customize ...func(*ctrl.Options)) ctrl.Manager {
	t.Helper()
	return e.StartManagerAs(t, e.Config, setup, customize...)
}

// StartManagerAs is StartManager with the manager talking to the API server through cfg: UserConfig's, say, to run
// controllers as a service account with only the permissions its RBAC manifests grant.
//
// When the test ends the manager is stopped and must stop within its shutdown period; if it does not, the test
// fails with a StopReport.
func (e *Env) StartManagerAs(t testing.TB, cfg *rest.Config, setup func(ctrl.Manager) error, customize ...func(*ctrl.Options)) ctrl.Manager {
	t.Helper()
	opts := ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}
	report := PrepareManager(&opts)
	for _, c := range customize {
		c(&opts)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatalf("creating a manager: %v", err)
	}
	if err := setup(mgr); err != nil {
		t.Fatalf("setting up the manager: %v", err)
	}
	stop := start(mgr, report)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return mgr
}

// PrepareManager sets on opts what every test manager has: controller names that may repeat (each test starts
// its own manager with the same controllers), gleaner-manager's workqueue (manager.ControllerConfig, which this
// package cannot import: controller-runtime's priority queue can deadlock on shutdown), a shutdown period
// (managerShutdown) shorter than the wait for it, and a logger that records what the returned report needs. A test
// that builds its own manager calls it before ctrl.NewManager, and starts the manager with StartShared.
func PrepareManager(opts *ctrl.Options) *StopReport {
	r := &StopReport{}
	opts.Controller.SkipNameValidation = ptr.To(true)
	opts.Controller.UsePriorityQueue = ptr.To(false)
	opts.GracefulShutdownTimeout = ptr.To(managerShutdown)
	opts.Logger = r.logger()
	return r
}

// StartShared starts mgr, prepared with PrepareManager, for the rest of the package's tests. Run stops it after
// them, before the control plane, and fails the package with report when it does not stop within its shutdown
// period.
func (e *Env) StartShared(mgr ctrl.Manager, report *StopReport) {
	e.StopWith(start(mgr, report))
}

// start runs mgr until the returned stop is called; stop returns an error, with report, when the manager stops
// with one (a runnable outlived the shutdown period) or has not stopped after managerStopWait.
func start(mgr ctrl.Manager, report *StopReport) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("manager stopped with an error: %w\n%s", err, report)
			}
			return nil
		case <-time.After(managerStopWait):
			return fmt.Errorf("manager did not stop within %s, its shutdown period %s notwithstanding\n%s", managerStopWait, managerShutdown, report)
		}
	}
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
