package reporter

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// counting is an API client that counts status patches.
type counting struct {
	client.Client
	patches atomic.Int32
}

func newCounting(t *testing.T, e *testenv.Env) *counting {
	t.Helper()
	ww, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := &counting{}
	c.Client = interceptor.NewClient(ww, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			c.patches.Add(1)
			return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
	return c
}

// TestReportWritesOnlyChanges writes a status the API server's schema accepts, sends nothing when it would not
// change, and retries a conflicting write on a fresh copy.
func TestReportWritesOnlyChanges(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	nm := &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "rep-1"}, Spec: slov1alpha1.NodeMetricSpec{
		CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{AggregateDurationSeconds: ptr.To[int64](60), NodeAggregatePolicy: &slov1alpha1.AggregatePolicy{Durations: []metav1.Duration{{Duration: time.Minute}}}},
	}}
	if err := e.Client.Create(ctx, nm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(ctx, nm) })

	store := statesinformer.NewStore()
	store.SetNodeMetric(nm.DeepCopy())
	store.SetPod(testutil.Pod("p").Priority(9000).Label(slov1alpha1.LabelQoSClass, "LSR").Obj())
	cache := fill(t,
		node(metriccache.NodeCPUUsage, 60, constant(1.5)), node(metriccache.NodeMemoryUsage, 60, constant(3*gi)),
		node(metriccache.SystemCPUUsage, 60, constant(0.25)), node(metriccache.SystemMemoryUsage, 60, constant(gi)),
		pod(metriccache.PodCPUUsage, "uid-p", 60, 1), pod(metriccache.PodMemoryUsage, "uid-p", 60, gi),
	)
	c := newCounting(t, e)
	clk := clocktesting.NewFakeClock(now)
	m := metrics.New()
	r := New(c, store, cache, clk, m, "rep-1", DefaultOptions())

	if res, err := r.Report(ctx); err != nil || res != metrics.ReportWritten {
		t.Fatalf("first report: %s, %v", res, err)
	}
	got := &slov1alpha1.NodeMetric{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "rep-1"}, got); err != nil {
		t.Fatal(err)
	}
	expectStored(t, got.Status)
	if got.Status.ObservedGeneration != got.Generation || got.Generation == 0 {
		t.Errorf("observedGeneration %d, want the spec's generation %d", got.Status.ObservedGeneration, got.Generation)
	}

	// The informer now holds what was written: the same report sends nothing.
	store.SetNodeMetric(got)
	if res, err := r.Report(ctx); err != nil || res != metrics.ReportUnchanged {
		t.Fatalf("second report: %s, %v", res, err)
	}
	if n := c.patches.Load(); n != 1 {
		t.Errorf("patches = %d, want 1: an unchanged status was sent", n)
	}

	// Someone changes the object; the informer has not seen it yet. The write conflicts and is retried.
	newer := got.DeepCopy()
	newer.Spec.CollectPolicy.ReportIntervalSeconds = ptr.To[int64](30)
	if err := e.Client.Update(ctx, newer); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	if res, err := r.Report(ctx); err != nil || res != metrics.ReportWritten {
		t.Fatalf("report after a concurrent change: %s, %v", res, err)
	}
	if n := c.patches.Load(); n != 3 {
		t.Errorf("patches = %d, want 3 (one refused with a conflict, one retried)", n)
	}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "rep-1"}, got); err != nil {
		t.Fatal(err)
	}
	if !got.Status.UpdateTime.Time.Equal(now.Add(time.Second)) || *got.Spec.CollectPolicy.ReportIntervalSeconds != 30 {
		t.Errorf("after the retry: updateTime %v, interval %d", got.Status.UpdateTime, *got.Spec.CollectPolicy.ReportIntervalSeconds)
	}
	expectNewerGenerationObserved(t, e, store, r, clk, got)
}

// expectNewerGenerationObserved: got was written by a report that followed the spec before got's; the report after
// the informer has got says got's generation.
func expectNewerGenerationObserved(t *testing.T, e *testenv.Env, store *statesinformer.Store, r *Reporter, clk *clocktesting.FakeClock, got *slov1alpha1.NodeMetric) {
	t.Helper()
	ctx := context.Background()
	if got.Status.ObservedGeneration != got.Generation-1 {
		t.Errorf("observedGeneration %d after a report by the older spec, want %d", got.Status.ObservedGeneration, got.Generation-1)
	}
	store.SetNodeMetric(got)
	clk.Step(time.Second)
	if res, err := r.Report(ctx); err != nil || res != metrics.ReportWritten {
		t.Fatalf("report by the newer spec: %s, %v", res, err)
	}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: got.Name}, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ObservedGeneration != got.Generation {
		t.Errorf("observedGeneration %d once the informer has the newer spec, want %d", got.Status.ObservedGeneration, got.Generation)
	}
}

func TestReportWithoutNodeMetricOrData(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	store := statesinformer.NewStore()
	full := fill(t, node(metriccache.NodeCPUUsage, 300, constant(1)), node(metriccache.NodeMemoryUsage, 300, constant(gi)))
	c := newCounting(t, e)
	r := New(c, store, full, clocktesting.NewFakeClock(now), metrics.New(), "rep-none", DefaultOptions())
	if res, err := r.Report(ctx); err != nil || res != metrics.ReportNoObject {
		t.Errorf("without a NodeMetric: %s, %v", res, err)
	}
	// The informer still has an object the API server no longer has.
	store.SetNodeMetric(&slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "rep-none", ResourceVersion: "1"}})
	if res, err := r.Report(ctx); err != nil || res != metrics.ReportNoObject {
		t.Errorf("with a NodeMetric deleted meanwhile: %s, %v", res, err)
	}
	empty := fill(t)
	r = New(c, store, empty, clocktesting.NewFakeClock(now), metrics.New(), "rep-none", DefaultOptions())
	if res, err := r.Report(ctx); err != nil || res != metrics.ReportNotReady {
		t.Errorf("without data: %s, %v", res, err)
	}
}

func expectStored(t *testing.T, s slov1alpha1.NodeMetricStatus) {
	t.Helper()
	if s.UpdateTime == nil || !s.UpdateTime.Time.Equal(now) {
		t.Errorf("updateTime = %v, want %v", s.UpdateTime, now)
	}
	if s.NodeMetric == nil || s.NodeMetric.NodeUsage.Cpu().MilliValue() != 1500 || s.NodeMetric.SystemUsage.Memory().Value() != gi ||
		len(s.NodeMetric.AggregatedNodeUsages) != 1 {
		t.Errorf("nodeMetric as stored: %+v", s.NodeMetric)
	}
	// prod is the priority left out; no podsMetric beside podUsages
	if len(s.PodUsages) != 1 || s.PodUsages[0].Priority != "" || s.PodUsages[0].CPUMillis == 0 || len(s.PodsMetric) != 0 {
		t.Errorf("podUsages as stored: %+v, podsMetric %+v", s.PodUsages, s.PodsMetric)
	}
}

// TestWriteMemoryPressure: the memory pressure is written into the NodeMetric at once, the rest of the status left
// as it was; every report from then on carries it (a value set without a write too), and writing none removes it.
func TestWriteMemoryPressure(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	nm := &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "rep-mp"}}
	if err := e.Client.Create(ctx, nm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(ctx, nm) })
	store := statesinformer.NewStore()
	store.SetNodeMetric(nm.DeepCopy())
	cache := fill(t, node(metriccache.NodeCPUUsage, 300, constant(1)), node(metriccache.NodeMemoryUsage, 300, constant(gi)))
	clk := clocktesting.NewFakeClock(now)
	r := New(newCounting(t, e), store, cache, clk, metrics.New(), "rep-mp", DefaultOptions())
	if res, err := r.Report(ctx); err != nil || res != metrics.ReportWritten {
		t.Fatalf("first report: %s, %v", res, err)
	}
	stored := func() slov1alpha1.NodeMetricStatus {
		t.Helper()
		got := &slov1alpha1.NodeMetric{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: "rep-mp"}, got); err != nil {
			t.Fatal(err)
		}
		return got.Status
	}

	mp := &slov1alpha1.MemoryPressure{Since: metav1.NewTime(now), LastPressureTime: metav1.NewTime(now), HoldSeconds: 300, EvictedPods: []string{"uid-a"}}
	if err := r.WriteMemoryPressure(ctx, mp); err != nil {
		t.Fatal(err)
	}
	s := stored()
	if diff := cmp.Diff(mp, s.MemoryPressure); diff != "" {
		t.Errorf("memory pressure as stored (-want +got):\n%s", diff)
	}
	if !s.UpdateTime.Time.Equal(now) || s.NodeMetric == nil || s.NodeMetric.NodeUsage.Cpu().MilliValue() != 1000 {
		t.Errorf("the rest of the status changed: updateTime %v, nodeMetric %+v", s.UpdateTime, s.NodeMetric)
	}

	// The next report, built from an informer that has not seen the write, keeps it; one set since goes with it.
	later := mp.DeepCopy()
	later.LastPressureTime = metav1.NewTime(now.Add(time.Second))
	r.SetMemoryPressure(later)
	clk.Step(time.Second)
	if res, err := r.Report(ctx); err != nil || res != metrics.ReportWritten {
		t.Fatalf("report under memory pressure: %s, %v", res, err)
	}
	if diff := cmp.Diff(later, stored().MemoryPressure); diff != "" {
		t.Errorf("memory pressure after a report (-want +got):\n%s", diff)
	}

	if err := r.WriteMemoryPressure(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := stored().MemoryPressure; got != nil {
		t.Errorf("memory pressure %+v after it was written away", got)
	}
	clk.Step(time.Second)
	if _, err := r.Report(ctx); err != nil {
		t.Fatal(err)
	}
	if got := stored().MemoryPressure; got != nil {
		t.Errorf("a report brought memory pressure %+v back", got)
	}

	// Without a NodeMetric there is nothing to write to.
	none := New(newCounting(t, e), statesinformer.NewStore(), cache, clk, metrics.New(), "rep-mp-none", DefaultOptions())
	if err := none.WriteMemoryPressure(ctx, mp); err != nil {
		t.Errorf("without a NodeMetric: %v", err)
	}
}

// TestMemoryPressureDoesNotWaitOnAStuckReport: while a report hangs on the API server, setting the memory pressure
// returns at once and writing it gives up when its context ends (the evictions it goes before must not wait on the
// report); once the report is through, the write goes out.
func TestMemoryPressureDoesNotWaitOnAStuckReport(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	nm := &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "rep-stuck"}}
	if err := e.Client.Create(ctx, nm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(ctx, nm) })
	store := statesinformer.NewStore()
	store.SetNodeMetric(nm.DeepCopy())
	ww, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var stuck atomic.Bool
	stuck.Store(true)
	c := interceptor.NewClient(ww, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if stuck.CompareAndSwap(true, false) { // the first write, the report's
				close(entered)
				<-release
			}
			return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
	cache := fill(t, node(metriccache.NodeCPUUsage, 300, constant(1)), node(metriccache.NodeMemoryUsage, 300, constant(gi)))
	r := New(c, store, cache, clocktesting.NewFakeClock(now), metrics.New(), "rep-stuck", DefaultOptions())
	reported := make(chan error, 1)
	go func() { _, err := r.Report(ctx); reported <- err }()
	<-entered

	mp := &slov1alpha1.MemoryPressure{Since: metav1.NewTime(now), LastPressureTime: metav1.NewTime(now), HoldSeconds: 300, EvictedPods: []string{"uid-a"}}
	r.SetMemoryPressure(mp) // returns: it waits on nothing
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := r.WriteMemoryPressure(short, mp); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("writing while a report hangs: %v, want it to give up when its context ends", err)
	}

	close(release)
	if err := <-reported; err != nil {
		t.Fatal(err)
	}
	if err := r.WriteMemoryPressure(ctx, mp); err != nil {
		t.Fatal(err)
	}
	got := &slov1alpha1.NodeMetric{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "rep-stuck"}, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mp, got.Status.MemoryPressure); diff != "" {
		t.Errorf("memory pressure as stored (-want +got):\n%s", diff)
	}
}
