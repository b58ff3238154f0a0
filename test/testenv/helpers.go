package testenv

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// CreateNode creates n and then writes its status, which a create ignores. When the test ends it deletes the node
// and the NodeAllocation and NodeResourceExplanation named after it: envtest runs no garbage collector.
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
		_ = e.Client.Delete(context.Background(), &slov1alpha1.NodeResourceExplanation{ObjectMeta: metav1.ObjectMeta{Name: n.Name}})
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
