package demo

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

func TestLatencyAnnotationRoundTrip(t *testing.T) {
	l := Latency{Count: 1000, P50: 2.125, P99: 13.5}
	got, err := decodeLatency(l.encode())
	if err != nil || got != l {
		t.Errorf("decodeLatency(%q) = %+v, %v; want %+v", l.encode(), got, err, l)
	}
	for _, bad := range []string{"", "p50Ms=1,p99Ms=2", "p50Ms=1,p99Ms=x,count=3", "p50Ms=1,p99Ms=2,count=3,extra=4", "p50Ms"} {
		if _, err := decodeLatency(bad); err == nil {
			t.Errorf("decodeLatency(%q) accepted", bad)
		}
	}
}

// statsServer plays the demo service's GET /stats, answering with what set gave it last.
type statsServer struct {
	mu    sync.Mutex
	stats Latency
	srv   *httptest.Server
}

func newStatsServer(t *testing.T) *statsServer {
	s := &statsServer{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stats" {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(s.stats)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *statsServer) set(l Latency) { s.mu.Lock(); s.stats = l; s.mu.Unlock() }

// prober returns a Prober that reaches the world's service pod at the server (the pod's IP set to the server's).
func (s *statsServer) prober(t *testing.T, w *world) *Prober {
	host, port, err := net.SplitHostPort(s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	w.service.Status.PodIP = host
	if err := w.c.Status().Update(context.Background(), w.service); err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return &Prober{Client: w.c, HTTP: s.srv.Client(), Port: p}
}

// TestOutcomeComparesTheServiceWithItselfAlone: Place's measurement of the service alone is kept on the batch
// Deployment; the report's outcome compares the latency now with it and gives the node's CPU use and the batch
// pods' part of it.
func TestOutcomeComparesTheServiceWithItselfAlone(t *testing.T) {
	w := newWorld(t, "outcome")
	stats := newStatsServer(t)
	prober := stats.prober(t, w)
	ctx := context.Background()

	var out strings.Builder
	p := w.placer(time.Second, time.Second)
	p.Out, p.Prober = &out, prober
	stats.set(Latency{Count: 120, P50: 1, P99: 2}) // too few requests yet: Place waits for more
	go func() { time.Sleep(2 * pollInterval); stats.set(Latency{Count: 1000, P50: 2, P99: 4}) }()
	p.measureAlone(ctx)
	if want := "the service alone: p50 2.00ms, p99 4.00ms over its last 1000 requests"; !strings.Contains(out.String(), want) {
		t.Fatalf("Place's output does not say %q:\n%s", want, out.String())
	}

	w.runBatchPods(1, Size{CPU: 500, Memory: 128 * mi})
	batch := &slov1alpha1.NodeMetric{}
	nm := testutil.NodeMetric(w.node).Updated(time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)).NodeUsage("cpu", "1500m", "memory", "2Gi").
		Pod(w.service, "cpu", "100m", "memory", "50Mi").
		PodRecord(Namespace, "batch-outcome-a", "uid-batch", slov1alpha1.PriorityBatch, slov1alpha1.QoSBE, "cpu", "1", "memory", "64Mi").Obj()
	if err := w.c.Create(ctx, nm.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.c.Delete(context.Background(), nm) })
	if err := w.c.Get(ctx, client.ObjectKeyFromObject(nm), batch); err != nil {
		t.Fatal(err)
	}
	batch.Status = nm.Status
	if err := w.c.Status().Update(ctx, batch); err != nil {
		t.Fatal(err)
	}

	stats.set(Latency{Count: 1000, P50: 2.2, P99: 4.4})
	got := prober.Outcome(ctx, w.node)
	for _, want := range []string{
		"service latency now:          p50 2.20ms, p99 4.40ms over its last 1000 requests",
		"before the batch pods started: p50 2.00ms, p99 4.00ms over its last 1000 requests",
		"p99 now / p99 alone: 1.10",
		"node CPU busy: 75% of 2 CPUs (1500m), 50% by 1 batch pods (NodeMetric of 09:30:00)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the outcome does not say %q:\n%s", want, got)
		}
	}

	// A batch pod runs on the node now: nothing is measured as "alone" any more.
	out.Reset()
	p.measureAlone(ctx)
	if want := "not measured (the report will not compare with it): batch pod batch-outcome-a runs already"; !strings.Contains(out.String(), want) {
		t.Errorf("Place's output does not say %q:\n%s", want, out.String())
	}
}

// TestOutcomeSaysWhatItCannotRead: no comparison without a measurement alone, a malformed one is named, and a
// service that does not answer is said; the outcome never fails.
func TestOutcomeSaysWhatItCannotRead(t *testing.T) {
	w := newWorld(t, "unread")
	stats := newStatsServer(t)
	prober := stats.prober(t, w)
	ctx := context.Background()
	stats.set(Latency{Count: 1000, P50: 2, P99: 4})
	if got, want := prober.Outcome(ctx, w.node), "service latency now: p50 2.00ms, p99 4.00ms over its last 1000 requests (alone: not measured"; !strings.Contains(got, want) {
		t.Errorf("the outcome does not say %q:\n%s", want, got)
	}
	if got, want := prober.Outcome(ctx, w.node), "node CPU: node unread has no NodeMetric yet"; !strings.Contains(got, want) {
		t.Errorf("the outcome does not say %q:\n%s", want, got)
	}

	dep := &appsv1.Deployment{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: BatchDeployment}, dep); err != nil {
		t.Fatal(err)
	}
	dep.Annotations = map[string]string{AnnotationLatencyAlone: "p99Ms=fast"}
	if err := w.c.Update(ctx, dep); err != nil {
		t.Fatal(err)
	}
	if got, want := prober.Outcome(ctx, w.node), "annotation "+AnnotationLatencyAlone+": p99Ms=fast:"; !strings.Contains(got, want) {
		t.Errorf("the outcome does not say %q:\n%s", want, got)
	}

	stats.srv.Close()
	if got, want := prober.Outcome(ctx, w.node), "service latency: not read: reading the latency of pod gleaner-demo/ls-service-unread"; !strings.Contains(got, want) {
		t.Errorf("the outcome does not say %q:\n%s", want, got)
	}
}

// TestWaitBesideWaitsForTheWindowAndTheMeasurement: the report waits until the service's window holds only requests
// served beside the batch pods and the NodeMetric measures every batch pod running on the node.
func TestWaitBesideWaitsForTheWindowAndTheMeasurement(t *testing.T) {
	w := newWorld(t, "beside")
	prober := Prober{Client: w.c}
	ctx := context.Background()
	w.runBatchPods(1, Size{CPU: 500, Memory: 128 * mi})
	w.report(time.Now(), true) // the service measured, the batch pod not

	if err := prober.WaitBeside(ctx, w.node, time.Now(), 2*pollInterval); err == nil ||
		!strings.Contains(err.Error(), "the service's latency window still holds requests from before the batch pods") {
		t.Errorf("WaitBeside right after the start = %v, want the window's wait", err)
	}
	since := time.Now().Add(-time.Minute)
	if err := prober.WaitBeside(ctx, w.node, since, 2*pollInterval); err == nil ||
		!strings.Contains(err.Error(), "does not measure batch pod batch-beside-a yet") {
		t.Errorf("WaitBeside before the NodeMetric measured the batch pod = %v, want that wait", err)
	}

	pod := &corev1.Pod{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: "batch-beside-a"}, pod); err != nil {
		t.Fatal(err)
	}
	nm := &slov1alpha1.NodeMetric{}
	if err := w.c.Get(ctx, client.ObjectKey{Name: w.node}, nm); err != nil {
		t.Fatal(err)
	}
	nm.Status = testutil.NodeMetric(w.node).Updated(time.Now()).Pod(w.service, "cpu", "100m").Pod(pod, "cpu", "300m").Obj().Status
	if err := w.c.Status().Update(ctx, nm); err != nil {
		t.Fatal(err)
	}
	if err := prober.WaitBeside(ctx, w.node, since, 5*time.Second); err != nil {
		t.Errorf("WaitBeside once the batch pod is measured: %v", err)
	}
}
