package slostatus

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/test/testenv"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// fakeQoS reports conds at generation gen.
type fakeQoS struct {
	conds []metav1.Condition
	gen   int64
}

func (f *fakeQoS) NodeSLOConditions() ([]metav1.Condition, int64) { return f.conds, f.gen }

type fakeHook struct{ c *metav1.Condition }

func (f *fakeHook) NodeSLOCondition() *metav1.Condition { return f.c }

func cond(t, status, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg}
}

// TestWriterWritesConditions: the status the API server's schema accepts, with the summary first; nothing sent when
// nothing changed; lastTransitionTime kept while a condition's status holds and moved when it changes; a feature
// turned off loses its condition and its series; the gauge follows.
func TestWriterWritesConditions(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	slo := &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "status-1"}}
	if err := e.Client.Create(ctx, slo); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(ctx, slo) })

	var patches atomic.Int32
	c := interceptor.NewClient(withWatch(t, e), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			patches.Add(1)
			return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
	store := statesinformer.NewStore()
	qos := &fakeQoS{gen: 1, conds: []metav1.Condition{
		cond(slov1alpha1.NodeSLOCPUIdle, "True", slov1alpha1.NodeSLOReasonApplied, "QoS plugin cpuqos applies it"),
		cond(slov1alpha1.NodeSLOResctrl, "False", slov1alpha1.NodeSLOReasonUnsupported, "resctrl is not mounted"),
	}}
	hook := &fakeHook{c: &metav1.Condition{Type: slov1alpha1.NodeSLORuntimeHook, Status: metav1.ConditionTrue, Reason: slov1alpha1.NodeSLOReasonApplied, Message: "connected"}}
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()
	w, err := New(c, store, qos, hook, clk, reg, "status-1")
	if err != nil {
		t.Fatal(err)
	}
	// sync writes once and reads the NodeSLO back into the store, as the informer would.
	sync := func() *slov1alpha1.NodeSLO {
		t.Helper()
		if err := w.Write(ctx); err != nil {
			t.Fatal(err)
		}
		got := &slov1alpha1.NodeSLO{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: "status-1"}, got); err != nil {
			t.Fatal(err)
		}
		store.SetNodeSLO(got)
		return got
	}

	// text is the status in one line: each condition's type, status, reason, observed generation and when it last
	// changed (seconds after the start), the summary's message in full.
	start := clk.Now()
	text := func(st slov1alpha1.NodeSLOStatus) string {
		parts := []string{fmt.Sprintf("gen %d", st.ObservedGeneration)}
		for _, c := range st.Conditions {
			p := fmt.Sprintf("%s=%s/%s g%d @%.0fs", c.Type, c.Status, c.Reason, c.ObservedGeneration, c.LastTransitionTime.Sub(start).Seconds())
			if c.Type == slov1alpha1.NodeSLOApplied {
				p += " (" + c.Message + ")"
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, "; ")
	}
	gauges := func() string {
		var g []string
		for _, c := range []string{"Applied", "CPUIdle", "Resctrl", "RuntimeHook"} {
			g = append(g, fmt.Sprint(promtest.ToFloat64(w.applied.WithLabelValues(c))))
		}
		return strings.Join(g, " ")
	}
	expect := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", what, got, want)
		}
	}

	if err := w.Write(ctx); err != nil || patches.Load() != 0 {
		t.Fatalf("no NodeSLO in the store: %v, %d patches; want nothing written", err, patches.Load())
	}
	store.SetNodeSLO(slo.DeepCopy())
	expect("the first write", text(sync().Status),
		"gen 1; Applied=False/NotApplied g1 @0s (not applied on this node: Resctrl (Unsupported); each condition says why); "+
			"CPUIdle=True/Applied g1 @0s; Resctrl=False/Unsupported g1 @0s; RuntimeHook=True/Applied g1 @0s")
	expect("gauges Applied, CPUIdle, Resctrl, RuntimeHook", gauges(), "0 1 0 1")

	clk.Step(time.Minute)
	n := patches.Load()
	sync()
	expect("patches sent when nothing changed", fmt.Sprint(patches.Load()-n), "0")

	// Resctrl turned off (its condition and its series go), CPUIdle now failing: its time moves, the hook's stays.
	qos.gen = 2
	qos.conds = []metav1.Condition{cond(slov1alpha1.NodeSLOCPUIdle, "False", slov1alpha1.NodeSLOReasonPermissionDenied, "writing cpu.idle: permission denied")}
	expect("after a change", text(sync().Status),
		"gen 2; Applied=False/NotApplied g2 @0s (not applied on this node: CPUIdle (PermissionDenied); each condition says why); "+
			"CPUIdle=False/PermissionDenied g2 @60s; RuntimeHook=True/Applied g2 @0s")
	expect("patches sent for the change", fmt.Sprint(patches.Load()-n), "1")
	expect("series", fmt.Sprint(promtest.CollectAndCount(w.applied)), "3")

	// Every feature applied.
	qos.conds = []metav1.Condition{cond(slov1alpha1.NodeSLOCPUIdle, "True", slov1alpha1.NodeSLOReasonApplied, "applies it")}
	expect("everything applied", text(sync().Status),
		"gen 2; Applied=True/Applied g2 @60s (applied: CPUIdle, RuntimeHook); CPUIdle=True/Applied g2 @60s; RuntimeHook=True/Applied g2 @0s")
}

// TestWriterReportsFailures: an API server that refuses the write is an error naming the NodeSLO; a NodeSLO
// deleted since the informer saw it is not.
func TestWriterReportsFailures(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	refusing := interceptor.NewClient(withWatch(t, e), interceptor.Funcs{
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return errors.New("connection refused")
		},
	})
	store := statesinformer.NewStore()
	store.SetNodeSLO(&slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "status-gone"}})
	qos := &fakeQoS{}
	w, err := New(refusing, store, qos, nil, clocktesting.NewFakeClock(time.Now()), prometheus.NewRegistry(), "status-gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx); err == nil || !strings.Contains(err.Error(), `writing the status of NodeSLO "status-gone": connection refused`) {
		t.Errorf("refused write: %v", err)
	}
	w.client = e.Client
	if err := w.Write(ctx); err != nil {
		t.Errorf("a NodeSLO that is gone: %v, want nil (the manager creates it again)", err)
	}
	if _, err := New(e.Client, store, qos, nil, clocktesting.NewFakeClock(time.Now()), registered(t), "x"); err == nil {
		t.Errorf("a registry that has the metric already: no error")
	}
}

func withWatch(t *testing.T, e *testenv.Env) client.WithWatch {
	t.Helper()
	ww, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return ww
}

func registered(t *testing.T) prometheus.Registerer {
	reg := prometheus.NewRegistry()
	if _, err := New(nil, nil, nil, nil, clocktesting.NewFakeClock(time.Now()), reg, "x"); err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestTruncate: a long message is cut on a rune boundary and says so.
func TestTruncate(t *testing.T) {
	long := strings.Repeat("é", maxMessage)
	got := truncate(long)
	if len(got) > maxMessage || !strings.HasSuffix(got, " (cut)") || !strings.HasPrefix(got, "éé") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("truncate gave %d bytes ending %q", len(got), got[len(got)-10:])
	}
	if s := "short"; truncate(s) != s {
		t.Errorf("a short message changed")
	}
}
