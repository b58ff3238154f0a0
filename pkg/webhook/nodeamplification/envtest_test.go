package nodeamplification_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/webhook/nodeamplification"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// The API server gets config/webhook/colocationprofile.yaml as shipped (rules, match conditions, failure policy),
// rewritten by envtest only to call the local server.
var env = testenv.New(testenv.WithWebhookManifests(filepath.Join("..", "..", "..", "config", "webhook", "colocationprofile.yaml")))

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// TestStatusUpdatesAreAmplified goes through a node's life with amplification against the real API server: the
// manager sets the ratio (allocatable amplified, raw saved), the kubelet writes its own value back (it becomes the
// raw value and is amplified again in the same write), the ratio goes (allocatable back to the kubelet's value, the
// raw annotation goes) and comes back before the kubelet writes again (amplified once, not twice).
func TestStatusUpdatesAreAmplified(t *testing.T) {
	e := env.Start(t)
	wh := e.Webhook()
	mgr := e.StartManager(t, func(mgr ctrl.Manager) error {
		nodeamplification.Register(mgr)
		return nil
	}, func(o *ctrl.Options) {
		o.WebhookServer = webhook.NewServer(webhook.Options{Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir})
	})
	testenv.Eventually(t, "the webhook serves TLS", func() error { return mgr.GetWebhookServer().StartedChecker()(nil) })

	ctx := context.Background()
	c := e.Client
	n := testutil.Node("amplified").Capacity("cpu", "8", "memory", "16Gi").Allocatable("cpu", "8", "memory", "16Gi").Obj()
	status := n.Status
	must(t, c.Create(ctx, n))
	n.Status = status
	must(t, c.Status().Update(ctx, n)) // no annotation: the webhook is not even called
	expect(t, c, "8", "16Gi", "")

	// The manager's write (as the noderesource controller sends it: a status patch with the annotation).
	patch := func(change func(*corev1.Node)) {
		t.Helper()
		cur := &corev1.Node{}
		must(t, c.Get(ctx, client.ObjectKey{Name: "amplified"}, cur))
		next := cur.DeepCopy()
		change(next)
		must(t, c.Status().Patch(ctx, next, client.MergeFrom(cur)))
	}
	patch(func(n *corev1.Node) {
		n.Annotations = map[string]string{slov1alpha1.AnnotationResourceAmplificationRatio: `{"cpu":1.50,"memory":1.25}`}
	})
	expect(t, c, "12", "20Gi", `{"cpu":"8","memory":"16Gi"}`)

	// The kubelet reserves one core more and writes its own allocatable: 7 x 1.5.
	patch(func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("7") })
	expect(t, c, "10500m", "20Gi", `{"cpu":"7","memory":"16Gi"}`)

	// Amplification turned off: allocatable goes back to the kubelet's values in the same write, and the raw values
	// are no longer saved.
	patch(func(n *corev1.Node) { delete(n.Annotations, slov1alpha1.AnnotationResourceAmplificationRatio) })
	expect(t, c, "7", "16Gi", "")
	// On again before the kubelet writes: the kubelet's values are amplified once, not the amplified ones again.
	patch(func(n *corev1.Node) {
		n.Annotations = map[string]string{slov1alpha1.AnnotationResourceAmplificationRatio: `{"cpu":1.50,"memory":1.25}`}
	})
	expect(t, c, "10500m", "20Gi", `{"cpu":"7","memory":"16Gi"}`)
	// Off again, and the kubelet's next write carries its own values: they stand, and the webhook is no longer
	// called.
	patch(func(n *corev1.Node) { delete(n.Annotations, slov1alpha1.AnnotationResourceAmplificationRatio) })
	patch(func(n *corev1.Node) {
		n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("7")
		n.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("16Gi")
	})
	expect(t, c, "7", "16Gi", "")
}

func expect(t *testing.T, c client.Client, cpu, memory, raw string) {
	t.Helper()
	n := &corev1.Node{}
	must(t, c.Get(context.Background(), client.ObjectKey{Name: "amplified"}, n))
	gotCPU, gotMem := n.Status.Allocatable[corev1.ResourceCPU], n.Status.Allocatable[corev1.ResourceMemory]
	if gotCPU.Cmp(resource.MustParse(cpu)) != 0 || gotMem.Cmp(resource.MustParse(memory)) != 0 {
		t.Errorf("allocatable cpu %s, memory %s; want %s, %s", gotCPU.String(), gotMem.String(), cpu, memory)
	}
	if got := n.Annotations[slov1alpha1.AnnotationRawAllocatable]; got != raw {
		t.Errorf("raw allocatable %q, want %q", got, raw)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(fmt.Errorf("%w", err))
	}
}
