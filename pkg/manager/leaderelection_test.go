package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testenv"
)

// TestLeaderElectionOptionsValidate: the lease timings are checked at start-up, with the flags' names, in the
// relations client-go's leader elector needs.
func TestLeaderElectionOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		l       LeaderElectionOptions
		wantErr []string
	}{
		{name: "the defaults", l: DefaultLeaderElection()},
		{name: "controller-runtime's defaults", l: LeaderElectionOptions{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}},
		{
			name:    "renew deadline not below the lease",
			l:       LeaderElectionOptions{LeaseDuration: 30 * time.Second, RenewDeadline: 30 * time.Second, RetryPeriod: 5 * time.Second},
			wantErr: []string{"--leader-elect-renew-deadline (30s) must be below --leader-elect-lease-duration (30s)"},
		},
		{
			name:    "retry period not below the renew deadline",
			l:       LeaderElectionOptions{LeaseDuration: 60 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 10 * time.Second},
			wantErr: []string{"--leader-elect-retry-period (10s) must be below --leader-elect-renew-deadline (10s) / 1.2"},
		},
		{
			// 1.2 x 9s = 10.8s: client-go would refuse this at start, after the manager had connected.
			name:    "retry period within the jitter of the renew deadline",
			l:       LeaderElectionOptions{LeaseDuration: 60 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 9 * time.Second},
			wantErr: []string{"--leader-elect-retry-period (9s)", "jittered up to 10.8s"},
		},
		{
			name:    "every timing must be positive",
			l:       LeaderElectionOptions{LeaseDuration: 0, RenewDeadline: -time.Second, RetryPeriod: 0},
			wantErr: []string{"--leader-elect-lease-duration must be positive, got 0s", "--leader-elect-renew-deadline must be positive, got -1s", "--leader-elect-retry-period must be positive, got 0s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			o.LeaderElection = tt.l
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
			// Without leader election the timings do not matter.
			o.LeaderElect = false
			if err := o.Validate(); err != nil {
				t.Errorf("with --leader-elect=false: %v", err)
			}
		})
	}
}

// TestLeaderRidesOutAnAPIServerOutage stops the real kube-apiserver for 30 s under a leading gleaner-manager process
// (etcd keeps running, as in a control-plane restart). With the default lease timings the manager keeps running,
// renews its lease once the API server is back and goes on reconciling; with controller-runtime's defaults
// (15 s/10 s/2 s, gleaner-manager's at first) it gives up leading about 10 s into the outage and exits, which
// the first subtest shows this test would catch.
func TestLeaderRidesOutAnAPIServerOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("stops the API server for 30 s")
	}
	e := env.Start(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gleaner-system"}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	const outage = 30 * time.Second

	t.Run("controller-runtime's defaults exit", func(t *testing.T) {
		m := startManagerProcess(t, e, "gleaner-manager-outage-old",
			"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=2s")
		stopped := time.Now()
		stopAPIServer(t, e)
		select {
		case <-m.exited:
			if m.err == nil || !strings.Contains(m.log(), "leader election lost") {
				t.Errorf("the manager exited with %v, want leader election lost; its log:\n%s", m.err, m.log())
			}
			t.Logf("the manager exited %s into the outage: %v", time.Since(stopped).Round(time.Second), m.err)
		case <-time.After(outage):
			t.Errorf("the manager with a 10s renew deadline was still running %s into the outage", outage)
		}
	})

	t.Run("the defaults ride it out", func(t *testing.T) {
		m := startManagerProcess(t, e, "gleaner-manager-outage")
		key := client.ObjectKey{Namespace: "gleaner-system", Name: "gleaner-manager-outage"}
		holder := leaseHolder(t, e, key)

		restart := stopAPIServer(t, e)
		select {
		case <-m.exited:
			t.Fatalf("the manager exited during a %s API-server outage: %v; its log:\n%s", outage, m.err, m.log())
		case <-time.After(outage):
		}
		if err := restart(); err != nil {
			t.Fatal(err)
		}
		restarted := time.Now()

		// The same manager leads: it renews the lease it held, after the outage, and nobody else took it.
		testenv.Eventually(t, "the lease renewed after the outage", func() error {
			lease := &coordinationv1.Lease{}
			if err := e.Client.Get(ctx, key, lease); err != nil {
				return err
			}
			if h := lease.Spec.HolderIdentity; h == nil || *h != holder {
				return fmt.Errorf("lease held by %v, want %q", lease.Spec.HolderIdentity, holder)
			}
			if r := lease.Spec.RenewTime; r == nil || r.Before(&metav1.MicroTime{Time: restarted.Truncate(time.Second)}) {
				return fmt.Errorf("lease last renewed at %v, before the API server came back at %s", r, restarted.Format(time.RFC3339Nano))
			}
			return nil
		})
		// And it reconciles: a node created after the outage gets its NodeAllocation. Not at once: each informer's
		// reflector retried its watch through the outage with client-go's backoff, which doubles up to 30 s and is
		// jittered up to twice that, so the next try can come a minute after the API server is back (40 s on an idle
		// machine here, more beside the rest of the unit suite).
		node := e.CreateNode(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "after-the-outage"}})
		created := time.Now()
		for err := errors.New("not yet"); err != nil; time.Sleep(100 * time.Millisecond) {
			err = e.Client.Get(ctx, client.ObjectKey{Name: node.Name}, &slov1alpha1.NodeAllocation{})
			if time.Since(created) > 3*time.Minute {
				t.Fatalf("no NodeAllocation for the node created after the outage: %v; the manager's log:\n%s", err, m.log())
			}
		}
		t.Logf("the lease was renewed %s after the API server came back; a node created then was reconciled %s later",
			created.Sub(restarted).Round(100*time.Millisecond), time.Since(created).Round(100*time.Millisecond))
		select {
		case <-m.exited:
			t.Fatalf("the manager exited after the outage: %v; its log:\n%s", m.err, m.log())
		default:
		}
	})
}

// managerArgsEnv, set, makes this package's test binary run gleaner-manager with the flags it holds (one per line)
// instead of the tests: TestLeaderRidesOutAnAPIServerOutage runs the manager as a process of its own, as a cluster
// does, with the flags parsed as cmd/gleaner-manager parses them. (One process can run the manager once: its
// metrics go to controller-runtime's global registry.)
const managerArgsEnv = "GLEANER_TEST_MANAGER_ARGS"

// runManagerProcess runs gleaner-manager until SIGTERM and returns the process's exit code.
func runManagerProcess(args string) int {
	opts := NewOptions()
	fs := pflag.NewFlagSet("gleaner-manager", pflag.ContinueOnError)
	opts.AddFlags(fs)
	if err := fs.Parse(strings.Split(args, "\n")); err != nil {
		return 2
	}
	logger := zap.New()
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := Run(ctx, opts); err != nil {
		fmt.Fprintf(os.Stderr, "gleaner-manager: %v\n", err)
		return 1
	}
	return 0
}

// managerProcess is a gleaner-manager running in a process of its own.
type managerProcess struct {
	logPath string
	// exited is closed when the process has exited, with err its exit status.
	exited chan struct{}
	err    error
}

func (m *managerProcess) log() string {
	b, _ := os.ReadFile(m.logPath)
	return string(b)
}

// startManagerProcess runs gleaner-manager against e, leading with the lease leaseName (its servers off, the
// nodeallocation controller on) with extra flags, until the test ends; it returns once the manager holds its lease.
func startManagerProcess(t *testing.T, e *testenv.Env, leaseName string, flags ...string) *managerProcess {
	t.Helper()
	m := spawnManagerProcess(t, append([]string{"--kubeconfig=" + e.Kubeconfig, "--leader-election-id=" + leaseName}, flags...)...)
	leaseHolder(t, e, client.ObjectKey{Namespace: "gleaner-system", Name: leaseName})
	return m
}

// spawnManagerProcess runs gleaner-manager with its servers off, the nodeallocation controller on and flags (which
// name the cluster), until the test ends or it exits.
func spawnManagerProcess(t *testing.T, flags ...string) *managerProcess {
	t.Helper()
	args := append([]string{
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--webhook-port=0",
		"--controllers=nodeallocation", "--shutdown-timeout=5s",
	}, flags...)
	m := &managerProcess{logPath: filepath.Join(t.TempDir(), "gleaner-manager.log"), exited: make(chan struct{})}
	out, err := os.Create(m.logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), managerArgsEnv+"="+strings.Join(args, "\n"))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting gleaner-manager: %v", err)
	}
	go func() {
		m.err = cmd.Wait()
		_ = out.Close()
		close(m.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("gleaner-manager did not stop within 30s of SIGTERM")
		}
	})
	return m
}

// leaseHolder waits until the lease has a holder and returns it.
func leaseHolder(t *testing.T, e *testenv.Env, key client.ObjectKey) string {
	t.Helper()
	var holder string
	testenv.Eventually(t, "lease "+key.String()+" held", func() error {
		lease := &coordinationv1.Lease{}
		if err := e.Client.Get(context.Background(), key, lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return errors.New("no holder")
		}
		holder = *lease.Spec.HolderIdentity
		return nil
	})
	return holder
}

// stopAPIServer stops kube-apiserver and returns the function that starts it again; unless the test called it,
// it runs when the test ends (the package's other tests share the API server).
func stopAPIServer(t *testing.T, e *testenv.Env) (restart func() error) {
	t.Helper()
	stopErr := e.StopAPIServer()
	var once sync.Once
	var err error
	restart = func() error {
		once.Do(func() { err = e.StartAPIServer() })
		return err
	}
	t.Cleanup(func() {
		if err := restart(); err != nil {
			t.Errorf("starting the API server again for the package's other tests: %v", err)
		}
	})
	if stopErr != nil {
		t.Fatal(stopErr)
	}
	return restart
}
