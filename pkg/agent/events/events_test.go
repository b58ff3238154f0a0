package events

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testenv"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

const nodeName = "node-1"

// writer is a Writer on the test's API server whose writes fail while down is set.
func writer(t *testing.T, down *atomic.Bool) (*Writer, *clocktesting.FakeClock) {
	t.Helper()
	e := env.Start(t)
	ww, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(ww, interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if down.Load() {
				return errors.New("connection refused")
			}
			return cl.Create(ctx, obj, opts...)
		},
	})
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return New(c, clk, nodeName), clk
}

func eventsOn(t *testing.T, namespace string, uid string) []corev1.Event {
	t.Helper()
	list := &corev1.EventList{}
	if err := env.Start(t).Client.List(context.Background(), list, client.InNamespace(namespace), client.MatchingFields{"involvedObject.uid": uid}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestEventOnNodeSLO: the QoS manager's refusals are written as events on the cluster-scoped NodeSLO, in the
// default namespace.
func TestEventOnNodeSLO(t *testing.T) {
	var down atomic.Bool
	w, _ := writer(t, &down)
	slo := &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "eventslo"}}
	if err := env.Start(t).Client.Create(context.Background(), slo); err != nil {
		t.Fatal(err)
	}
	w.Eventf(slo, corev1.EventTypeWarning, "NodeSLORefused", "plugin %s refused it: %s", "memoryevict", "threshold 0")
	list := eventsOn(t, metav1.NamespaceDefault, string(slo.UID))
	if len(list) != 1 {
		t.Fatalf("events on the NodeSLO: %d, want 1", len(list))
	}
	ev := list[0]
	if ev.Type != corev1.EventTypeWarning || ev.Reason != "NodeSLORefused" || ev.Message != "plugin memoryevict refused it: threshold 0" ||
		ev.InvolvedObject.Kind != "NodeSLO" || ev.InvolvedObject.APIVersion != slov1alpha1.GroupVersion.String() ||
		ev.Source.Component != Component || ev.Source.Host != nodeName {
		t.Errorf("event %+v", ev)
	}
}

// TestKeptWhileUnreachable: events the API server does not take wait, at most maxPending of them (the oldest go),
// and are written in order, with the time they happened, once it answers; a message too long is cut.
func TestKeptWhileUnreachable(t *testing.T) {
	var down atomic.Bool
	w, clk := writer(t, &down)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: metav1.NamespaceDefault, UID: "00000000-0000-4000-8000-0000000000e1"}}
	down.Store(true)
	first := clk.Now()
	for i := range maxPending + 2 {
		msg := "short"
		if i == maxPending+1 {
			msg = strings.Repeat("x", 2*maxMessage)
		}
		w.Record(context.Background(), PodRef(pod), corev1.EventTypeWarning, clk.Now(), "Test", "Kill", msg, i%2 == 0)
		clk.Step(time.Second)
	}
	if got := w.Pending(); got != maxPending {
		t.Fatalf("Pending = %d, want the bound %d", got, maxPending)
	}
	if err := w.ReportPending(context.Background()); err == nil {
		t.Fatal("ReportPending while the API server is away: no error")
	}
	down.Store(false)
	if err := w.ReportPending(context.Background()); err != nil || w.Pending() != 0 {
		t.Fatalf("ReportPending = %v, %d left", err, w.Pending())
	}
	list := eventsOn(t, pod.Namespace, string(pod.UID))
	if len(list) != maxPending {
		t.Fatalf("%d events written, want %d", len(list), maxPending)
	}
	oldest := list[0]
	for _, ev := range list {
		if ev.FirstTimestamp.Before(&oldest.FirstTimestamp) {
			oldest = ev
		}
		if len(ev.Message) > maxMessage {
			t.Errorf("a message of %d bytes, more than %d", len(ev.Message), maxMessage)
		}
	}
	if want := first.Add(2 * time.Second); !oldest.FirstTimestamp.Time.Equal(want) {
		t.Errorf("oldest event at %v, want %v: the two oldest dropped for room", oldest.FirstTimestamp.Time, want)
	}
}
