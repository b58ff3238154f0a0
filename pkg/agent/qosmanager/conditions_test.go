package qosmanager

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// reporting asks when the strategy's CPU suppression threshold is set, fails with err and steps aside with aside.
type reporting struct {
	thresholdPlugin
	err   error
	aside string
}

func (p *reporting) Asks(spec *slov1alpha1.NodeSLOSpec) bool {
	return ptr.Deref(spec.ResourceUsedThresholdWithBE.Enable, false)
}

func (p *reporting) Run(ctx context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	_ = p.thresholdPlugin.Run(ctx, spec)
	return p.err
}

func (p *reporting) Unsupported() string { return p.aside }

// TestNodeSLOConditions: a plugin has a condition only while the spec turns it on; it says Pending before its first
// run, Applied after a good one, and names the kind of failure (a privilege, the kernel, anything else), a step
// aside, and a refused NodeSLO; the generation is the oldest NodeSLO every plugin has run with.
func TestNodeSLOConditions(t *testing.T) {
	store := statesinformer.NewStore()
	p := &reporting{}
	silent := &failing{} // no condition: not a ReportingPlugin
	m, err := NewManager(Deps{States: store, Events: &testutil.Events{}}, clocktesting.NewFakeClock(time.Now()), []Factory{
		{Name: "reporting", Interval: time.Second, Default: true, Condition: slov1alpha1.NodeSLOCPUSuppress, New: func(Deps) (RunPlugin, error) { return p, nil }},
		{Name: "failing", Interval: time.Second, Default: true, New: func(Deps) (RunPlugin, error) { return silent, nil }},
	}, []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	nodeSLO := func(gen int64, enable bool, threshold int64) *slov1alpha1.NodeSLO {
		s := slo(threshold)
		s.Generation = gen
		s.Spec.ResourceUsedThresholdWithBE.Enable = ptr.To(enable)
		return s
	}
	show := func() string {
		conds, gen := m.NodeSLOConditions()
		var parts []string
		for _, c := range conds {
			parts = append(parts, fmt.Sprintf("%s=%s/%s: %s", c.Type, c.Status, c.Reason, c.Message))
		}
		return fmt.Sprintf("gen %d %s", gen, strings.Join(parts, "; "))
	}
	ctx := context.Background()

	if got := show(); got != "gen 0 " {
		t.Errorf("no NodeSLO, nothing run: %q, want no condition (the defaults do not turn suppression on)", got)
	}
	store.SetNodeSLO(nodeSLO(3, true, 50))
	if got, want := show(), "gen 0 CPUSuppress=Unknown/Pending: QoS plugin reporting has not run yet"; got != want {
		t.Errorf("before the first run: %q, want %q", got, want)
	}
	_ = m.RunOnce(ctx)
	if got, want := show(), "gen 3 CPUSuppress=True/Applied: QoS plugin reporting applies it"; got != want {
		t.Errorf("after a good run: %q, want %q", got, want)
	}

	for _, tc := range []struct {
		err   error
		aside string
		want  string
	}{
		{err: fmt.Errorf("writing cpu.cfs_quota_us: %w", fs.ErrPermission), want: "CPUSuppress=False/PermissionDenied: writing cpu.cfs_quota_us: permission denied"},
		{err: fmt.Errorf("reading cpu.idle: %w", system.ErrUnsupported), want: "CPUSuppress=False/Unsupported: reading cpu.idle: not supported on this host"},
		{err: fmt.Errorf("the API server is away"), want: "CPUSuppress=False/Failed: the API server is away"},
		{aside: "this kernel has no cpu.idle", want: "CPUSuppress=False/Unsupported: this kernel has no cpu.idle"},
	} {
		p.err, p.aside = tc.err, tc.aside
		_ = m.RunOnce(ctx)
		if got := show(); got != "gen 3 "+tc.want {
			t.Errorf("run failing with %v, aside %q: %q, want %q", tc.err, tc.aside, got, "gen 3 "+tc.want)
		}
	}
	p.err, p.aside = nil, ""

	store.SetNodeSLO(nodeSLO(4, true, 150))
	_ = m.RunOnce(ctx)
	if got := show(); !strings.HasPrefix(got, "gen 4 CPUSuppress=False/Refused: QoS plugin reporting refused this NodeSLO and enforces the last one it accepted: ") ||
		!strings.Contains(got, "is 150, outside [1, 100]") {
		t.Errorf("a refused NodeSLO: %q, want Refused naming the value", got)
	}

	store.SetNodeSLO(nodeSLO(5, false, 50))
	_ = m.RunOnce(ctx)
	if got := show(); got != "gen 5 " {
		t.Errorf("the strategy turned off: %q, want no condition", got)
	}
}

// TestNodeSLOGenerationIsTheOldest: while one plugin has run only with an older NodeSLO, the generation is that
// one's.
func TestNodeSLOGenerationIsTheOldest(t *testing.T) {
	store := statesinformer.NewStore()
	a, b := &reporting{}, &reporting{}
	m, err := NewManager(Deps{States: store}, clocktesting.NewFakeClock(time.Now()), []Factory{
		{Name: "a", Interval: time.Second, Default: true, Condition: "A", New: func(Deps) (RunPlugin, error) { return a, nil }},
		{Name: "b", Interval: time.Second, Default: true, Condition: "B", New: func(Deps) (RunPlugin, error) { return b, nil }},
	}, []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := slo(50)
	s.Generation = 7
	store.SetNodeSLO(s)
	_ = m.RunOnce(ctx)
	s = slo(60)
	s.Generation = 8
	store.SetNodeSLO(s)
	if err := m.run(ctx, m.running[1]); err != nil { // b alone sees generation 8
		t.Fatal(err)
	}
	if _, gen := m.NodeSLOConditions(); gen != 7 {
		t.Errorf("generation %d, want 7: plugin a has run only with generation 7", gen)
	}
	_ = m.RunOnce(ctx)
	if _, gen := m.NodeSLOConditions(); gen != 8 {
		t.Errorf("generation %d after both ran with 8, want 8", gen)
	}
}
