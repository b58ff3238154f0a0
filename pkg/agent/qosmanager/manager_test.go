package qosmanager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// thresholdPlugin records the suppression threshold of every spec it runs with, and refuses thresholds above 90.
type thresholdPlugin struct {
	mu   sync.Mutex
	seen []int64
}

func (p *thresholdPlugin) Name() string { return "threshold" }

func (p *thresholdPlugin) Validate(spec *slov1alpha1.NodeSLOSpec) error {
	s := spec.ResourceUsedThresholdWithBE
	return CheckPercent("resourceUsedThresholdWithBE.cpuSuppressThresholdPercent", s.CPUSuppressThresholdPercent, 1)
}

func (p *thresholdPlugin) Run(_ context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, *spec.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent)
	return nil
}

func slo(threshold int64) *slov1alpha1.NodeSLO {
	return &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: slov1alpha1.NodeSLOSpec{
		ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{CPUSuppressThresholdPercent: ptr.To(threshold)},
	}}
}

// TestManagerKeepsTheLastAcceptedNodeSLO: defaults before any NodeSLO, the node's values once valid, the last
// valid ones (with one log line and one event) while the NodeSLO is invalid, the new ones once it is valid again.
func TestManagerKeepsTheLastAcceptedNodeSLO(t *testing.T) {
	store := statesinformer.NewStore()
	events := &testutil.Events{}
	p := &thresholdPlugin{}
	m, err := NewManager(Deps{States: store, Events: events}, clocktesting.NewFakeClock(time.Now()),
		[]Factory{{Name: "threshold", Interval: time.Second, Default: true, New: func(Deps) (RunPlugin, error) { return p, nil }}}, []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	steps := []*slov1alpha1.NodeSLO{nil, slo(50), slo(0), slo(0), slo(150), slo(80)}
	for _, s := range steps {
		if s != nil {
			store.SetNodeSLO(s)
		}
		if err := m.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := fmt.Sprint(p.seen), "[65 50 50 50 50 80]"; got != want {
		t.Errorf("thresholds run with %s, want %s (default, 50, kept through 0 and 150, then 80)", got, want)
	}
	if len(events.List()) != 2 {
		t.Fatalf("events %q, want one per refused NodeSLO (0, then 150)", events.List())
	}
	for i, want := range []string{"is 0, outside [1, 100]", "is 150, outside [1, 100]"} {
		if e := events.List()[i]; !strings.Contains(e, "node-1 Warning NodeSLORefused: QoS plugin threshold refused") || !strings.Contains(e, want) {
			t.Errorf("event %d = %q, want a refusal naming %q", i, e, want)
		}
	}
}

type failing struct{ runs int }

func (f *failing) Name() string { return "failing" }
func (f *failing) Run(context.Context, *slov1alpha1.NodeSLOSpec) error {
	f.runs++
	return errors.New("broken")
}

// TestManagerSelectionAndStart: plugins off by default stay off under "*", intervals apply, unknown names are
// refused, and Start runs each plugin at once and then on its interval.
func TestManagerSelectionAndStart(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	on, off := &failing{}, &failing{}
	factories := []Factory{
		{Name: "on", Interval: time.Second, Default: true, New: func(Deps) (RunPlugin, error) { return on, nil }},
		{Name: "off", Interval: time.Second, New: func(Deps) (RunPlugin, error) { return off, nil }},
	}
	if _, err := NewManager(Deps{}, clk, factories, []string{"*", "-gpu"}, map[string]time.Duration{"on": 0}); err == nil ||
		!strings.Contains(err.Error(), `--qos-plugins: unknown name "gpu"`) || !strings.Contains(err.Error(), "--qos-plugin-intervals: on must be positive") {
		t.Errorf("bad selection accepted or badly reported: %v", err)
	}
	m, err := NewManager(Deps{States: statesinformer.NewStore()}, clk, factories, []string{"*"}, map[string]time.Duration{"on": 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(m.Names()); got != "[on]" {
		t.Fatalf("enabled %s, want [on]", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Start(ctx) }()
	waitRuns := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			m.running[0].mu.Lock()
			runs := on.runs
			m.running[0].mu.Unlock()
			if runs >= n && clk.HasWaiters() {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("plugin ran %d times, want %d", runs, n)
			}
		}
	}
	waitRuns(1)
	clk.Step(time.Second)
	time.Sleep(20 * time.Millisecond)
	m.running[0].mu.Lock()
	if on.runs != 1 {
		t.Errorf("ran %d times one second in, want 1 (interval 5s)", on.runs)
	}
	m.running[0].mu.Unlock()
	clk.Step(4 * time.Second)
	waitRuns(2)
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
	if off.runs != 0 {
		t.Errorf("a plugin off by default ran %d times", off.runs)
	}
}
