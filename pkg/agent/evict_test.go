package agent

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/prometheus/client_golang/prometheus"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/events"
	"github.com/gleaner-sh/gleaner/pkg/agent/evictor"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// TestEvictorWithTheAgentsClient evicts a best-effort pod through a client built as the agent builds its own (its
// scheme, not the tests' wider one): the request must reach the API server. A client that cannot encode an
// Eviction once made the memory plugin fall back to killing pods locally with the API server up.
func TestEvictorWithTheAgentsClient(t *testing.T) {
	e := env.Start(t)
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(e.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "agent-evict-"}}
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	pod := e.CreatePod(t, testutil.Pod("batch").Namespace(ns.Name).Node("n").Label(slov1alpha1.LabelQoSClass, "BE").Container("c").Obj())
	opts := evictor.DefaultOptions()
	opts.NodeName = "n"
	clk := clocktesting.NewFakeClock(time.Now())
	ev, err := evictor.New(c, nil, events.New(c, clk, opts.NodeName), clk, prometheus.NewRegistry(), opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ev.Evict(ctx, pod, "Test", "a test")
	if err != nil || res != evictor.Evicted {
		t.Fatalf("Evict = %q, %v; want evicted", res, err)
	}
	got := &corev1.Pod{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(pod), got); err == nil && got.DeletionTimestamp == nil {
		t.Error("the pod is not being deleted after its eviction")
	}
}
