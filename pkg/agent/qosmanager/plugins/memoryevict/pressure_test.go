package memoryevict

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/qosmanagertest"
)

// withHold is enabled(70, 60) with memoryEvictHoldSeconds hold.
func withHold(hold int64) *slov1alpha1.NodeSLOSpec {
	s := enabled(70, 60)
	s.ResourceUsedThresholdWithBE.MemoryEvictHoldSeconds = ptr.To(hold)
	return s
}

// written is one write of the memory pressure with the evictions asked for before it.
type written struct {
	asked   int
	evicted []string // pod names
}

// recordWrites has each write of e's memory pressure recorded with how many evictions were asked for by then.
func recordWrites(e *env) *[]written {
	var ws []written
	e.Pressure.OnWrite = func(mp *slov1alpha1.MemoryPressure) {
		w := written{asked: len(e.evictor.Asked()), evicted: []string{}}
		if mp != nil {
			for _, uid := range mp.EvictedPods {
				w.evicted = append(w.evicted, nameOf(e, uid))
			}
		}
		ws = append(ws, w)
	}
	return &ws
}

func nameOf(e *env, uid string) string {
	for _, m := range e.Store.GetAllPods() {
		if string(m.Pod.UID) == uid {
			return m.Pod.Name
		}
	}
	return "?" + uid
}

// expectListedBeforeEvicted checks that every pod asked for was listed as evicted by the last write before it was
// asked for: gleaner-manager can take it out of what batch pods hold before its replacement exists.
func expectListedBeforeEvicted(t *testing.T, e *env, ws []written) {
	t.Helper()
	for i, name := range e.evictor.Asked() {
		var last *written
		for j := range ws {
			if ws[j].asked <= i {
				last = &ws[j]
			}
		}
		if last == nil || !slices.Contains(last.evicted, name) {
			t.Errorf("eviction %d (%s) asked for before a write listed it; writes %+v", i, name, ws)
		}
	}
}

// reported is what the NodeMetric reports say of the memory pressure, times as offsets from the test's start.
type reported struct {
	Since, Last time.Duration
	Hold        int64
	Evicted     int
}

// expectReported checks what the reports say now; want nil for no memory pressure.
func expectReported(t *testing.T, e *env, t0 time.Time, want *reported) {
	t.Helper()
	var got *reported
	if mp := e.Pressure.Current(); mp != nil {
		got = &reported{Since: mp.Since.Sub(t0), Last: mp.LastPressureTime.Sub(t0), Hold: mp.HoldSeconds, Evicted: len(mp.EvictedPods)}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("memory pressure reported at +%s (-want +got):\n%s", e.Clock.Now().Sub(t0), diff)
	}
}

// expectWrites checks every write of the memory pressure so far.
func expectWrites(t *testing.T, got *[]written, want ...written) {
	t.Helper()
	if diff := cmp.Diff(want, *got, cmp.AllowUnexported(written{})); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

// TestMemoryPressureEpisode follows one episode: it is written with the pods to evict before the first eviction,
// reported (not written) while the pressure lasts, kept through the hold after it, written away when the hold ends,
// and a new crossing starts a new episode listing only its own pods.
func TestMemoryPressureEpisode(t *testing.T) {
	e := newEnv(t)
	ws := recordWrites(e)
	e.setUsed(t, 8192)
	e.add(0, be("batch-a", 5500, 1500), be("batch-b", 5500, 800), be("free-a", 3500, 300), be("free-b", 3500, 700), svc("web", 3000))
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	t0 := e.Clock.Now()
	run := func(step time.Duration) {
		t.Helper()
		e.Clock.Step(step)
		if err := p.Run(context.Background(), withHold(60)); err != nil {
			t.Fatal(err)
		}
	}
	planned := written{asked: 0, evicted: []string{"free-b", "free-a", "batch-a"}}

	// 8192 > 7168: free-b, free-a and batch-a go (TestRun), all three listed in one write before the first.
	run(0)
	e.evictor.Expect(t, nil, []string{"free-b", "free-a", "batch-a"})
	expectWrites(t, ws, planned)
	expectListedBeforeEvicted(t, e, *ws)
	expectReported(t, e, t0, &reported{Hold: 60, Evicted: 3})

	// Still above the threshold half a second later, the evicted pods on their way out: no eviction, no write,
	// the reports say when the pressure was last seen.
	run(500 * time.Millisecond)
	expectWrites(t, ws, planned)
	expectReported(t, e, t0, &reported{Last: 500 * time.Millisecond, Hold: 60, Evicted: 3})

	// Under the threshold: the episode lasts 60 s after the last pressure, unwritten; then it ends, written at once
	// as the field removed.
	e.setUsed(t, 6000)
	run(500 * time.Millisecond)
	run(59 * time.Second)
	expectWrites(t, ws, planned)
	expectReported(t, e, t0, &reported{Last: 500 * time.Millisecond, Hold: 60, Evicted: 3})
	run(500 * time.Millisecond)
	expectWrites(t, ws, planned, written{asked: 3, evicted: []string{}})
	expectReported(t, e, t0, nil)
	if w := e.Pressure.Writes(); w[len(w)-1] != nil {
		t.Errorf("the end was written as %+v, want the field removed", w[len(w)-1])
	}

	// A new crossing is a new episode, listing only the pods evicted in it. The evicted pods are gone;
	// 7200 - 800 (batch-b, the one left) = 6400 >= 6144.
	for _, name := range []string{"free-b", "free-a", "batch-a"} {
		e.Store.DeletePod(e.Store.GetAllPods()[indexOf(e, name)].Pod.UID)
	}
	e.Clock.Step(time.Second)
	e.add(0, be("batch-b", 5500, 800))
	e.setUsed(t, 7200)
	run(0)
	expectWrites(t, ws, planned, written{asked: 3, evicted: []string{}}, written{asked: 3, evicted: []string{"batch-b"}})
	again := e.Clock.Now().Sub(t0)
	expectReported(t, e, t0, &reported{Since: again, Last: again, Hold: 60, Evicted: 1})
}

// TestMemoryPressureListsOnlyPodsThatGo: a pod the eviction does not take (a PodDisruptionBudget) is taken off the
// list, written before the next eviction; a pod beyond the run's plan is listed on its own before its eviction.
func TestMemoryPressureListsOnlyPodsThatGo(t *testing.T) {
	e := newEnv(t)
	ws := recordWrites(e)
	e.setUsed(t, 8192)
	e.add(0, be("batch-a", 5500, 1500), be("batch-b", 5500, 800), be("free-a", 3500, 300), be("free-b", 3500, 700), svc("web", 3000))
	e.evictor.Script([]string{"free-b"}, nil)
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background(), withHold(60)); err != nil {
		t.Fatal(err)
	}
	// Planned: free-b, free-a, batch-a (8192 - 700 - 300 - 1500 = 5692). free-b refused: free-a (7892), batch-a
	// (6392), batch-b (5592).
	e.evictor.Expect(t, []string{"free-b", "free-a", "batch-a", "batch-b"}, []string{"free-a", "batch-a", "batch-b"})
	expectWrites(t, ws,
		written{asked: 0, evicted: []string{"free-b", "free-a", "batch-a"}},
		written{asked: 1, evicted: []string{"free-a", "batch-a"}},
		written{asked: 3, evicted: []string{"free-a", "batch-a", "batch-b"}})
	expectListedBeforeEvicted(t, e, *ws)
}

// TestMemoryPressureEndsWhenEvictionIsOff: switching the strategy off ends the episode at once, written.
func TestMemoryPressureEndsWhenEvictionIsOff(t *testing.T) {
	e := newEnv(t)
	e.setUsed(t, 8192)
	e.add(0, be("batch-a", 5500, 1500), svc("web", 3000))
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background(), enabled(70, 60)); err != nil {
		t.Fatal(err)
	}
	if e.Pressure.Current() == nil {
		t.Fatal("no memory pressure reported above the threshold")
	}
	if err := p.Run(context.Background(), (&slov1alpha1.NodeSLOSpec{}).WithDefaults()); err != nil {
		t.Fatal(err)
	}
	if w := e.Pressure.Writes(); e.Pressure.Current() != nil || len(w) != 2 || w[1] != nil {
		t.Errorf("with memory eviction off: reported %+v, writes %+v", e.Pressure.Current(), w)
	}
}

// TestMemoryPressureWriteFails: a failed write does not stop the evictions, costs the run one attempt, is
// reported, and is tried again at the next run; the reports carry the pressure meanwhile.
func TestMemoryPressureWriteFails(t *testing.T) {
	e := newEnv(t)
	e.setUsed(t, 8192)
	e.add(0, be("batch-a", 5500, 1500), be("free-a", 3500, 300), svc("web", 3000))
	e.Pressure.Fail = errors.New("the server is currently unable to handle the request")
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Run(context.Background(), enabled(70, 60))
	qosmanagertest.ExpectErr(t, err, "the server is currently unable")
	e.evictor.Expect(t, nil, []string{"free-a", "batch-a"})
	if n := e.Pressure.Failed(); n != 1 {
		t.Errorf("%d writes tried in the run, want 1", n)
	}
	if cur := e.Pressure.Current(); cur == nil || len(cur.EvictedPods) != 2 {
		t.Errorf("the reports carry %+v, want the episode with both pods", cur)
	}
	e.Pressure.Fail = nil
	e.Clock.Step(500 * time.Millisecond)
	if err := p.Run(context.Background(), enabled(70, 60)); err != nil {
		t.Fatal(err)
	}
	if w := e.Pressure.Writes(); len(w) != 1 || w[0] == nil || len(w[0].EvictedPods) != 2 {
		t.Errorf("the next run wrote %+v, want the episode with both pods", w)
	}
}

// TestMemoryPressureWithoutHold: memoryEvictHoldSeconds 0 ends the episode at the first run under the threshold.
func TestMemoryPressureWithoutHold(t *testing.T) {
	e := newEnv(t)
	e.setUsed(t, 8192)
	e.add(0, be("batch-a", 5500, 1500), svc("web", 3000))
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	spec := withHold(0)
	if err := p.Run(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	e.setUsed(t, 7168) // at the threshold is not above it
	e.Clock.Step(500 * time.Millisecond)
	if err := p.Run(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if e.Pressure.Current() != nil {
		t.Errorf("reported %+v after the pressure, with no hold", e.Pressure.Current())
	}
}
