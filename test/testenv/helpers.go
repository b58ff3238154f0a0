package testenv

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/index"
)

// StartManager runs a controller-runtime manager against the API server until the test ends, after setup has added
// the controllers under test. Like gleaner-manager it has the shared cache indexes (index.Register). Metrics and
// probes are off and controller names need not be unique, so every test can start its own.
func (e *Env) StartManager(t testing.TB, setup func(ctrl.Manager) error) {
	t.Helper()
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
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
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// CreateNode creates n and then writes its status, which a create ignores. When the test ends it deletes the node
// and the NodeAllocation named after it: envtest runs no garbage collector.
func (e *Env) CreateNode(t testing.TB, n *corev1.Node) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	status := n.Status
	if err := e.Client.Create(ctx, n); err != nil {
		t.Fatalf("creating node %s: %v", n.Name, err)
	}
	t.Cleanup(func() {
		_ = e.Client.Delete(context.Background(), n)
		_ = e.Client.Delete(context.Background(), &slov1alpha1.NodeAllocation{ObjectMeta: metav1.ObjectMeta{Name: n.Name}})
	})
	n.Status = status
	if err := e.Client.Status().Update(ctx, n); err != nil {
		t.Fatalf("writing the status of node %s: %v", n.Name, err)
	}
	return n
}

// CreatePod creates p (its UID cleared, so builder UIDs do not matter) and then sets its phase when it is not
// Pending, which a create cannot. When the test ends it deletes the pod without grace period.
func (e *Env) CreatePod(t testing.TB, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	phase := p.Status.Phase
	p.UID = ""
	if err := e.Client.Create(ctx, p); err != nil {
		t.Fatalf("creating pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), p, client.GracePeriodSeconds(0)) })
	if phase != "" && phase != p.Status.Phase {
		p.Status.Phase = phase
		if err := e.Client.Status().Update(ctx, p); err != nil {
			t.Fatalf("setting the phase of pod %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
	return p
}
