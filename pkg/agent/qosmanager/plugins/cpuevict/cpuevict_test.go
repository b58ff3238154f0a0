package cpuevict

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/collector"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/qosmanagertest"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// pod is a pod on the node with its CPU use in cores (the same in every second of the window).
type pod struct {
	b     *testutil.PodBuilder
	usage float64
}

// be is a pod of QoS class BE requesting batchMilli millicores of batch-cpu.
func be(name string, priority int32, batchMilli string, usage float64) pod {
	return pod{testutil.Pod(name).Priority(priority).Label(slov1alpha1.LabelQoSClass, string(slov1alpha1.QoSBE)).
		Requests(string(slov1alpha1.BatchCPU), batchMilli), usage}
}

// The usual best-effort pods: 1 + 2 + 1 + 1 = 5 cores of requests; free before batch, then by use.
func usual() []pod {
	return []pod{
		be("be-a", 3500, "1000", 0.3),
		be("be-b", 3500, "2000", 0.9),
		be("be-c", 5500, "1000", 0.5),
		be("be-d", 5500, "1000", 0.2),
		{testutil.Pod("web").Priority(9500).Label(slov1alpha1.LabelQoSClass, string(slov1alpha1.QoSLS)).Requests("cpu", "4"), 3},
	}
}

// series is one best-effort series, one sample a second, oldest first; the newest is taken age before now.
type series struct {
	limit, request, usage []float64
	age                   time.Duration
}

// flat is n seconds of the same values.
func flat(n int, limit, request, usage float64) series {
	s := series{}
	for range n {
		s.limit, s.request, s.usage = append(s.limit, limit), append(s.request, request), append(s.usage, usage)
	}
	return s
}

// env is one node (qosmanagertest.Node) and the recording evictor.
type env struct {
	*qosmanagertest.Node
	evictor *qosmanagertest.Evictor
	deps    qosmanager.Deps
}

func newEnv(t *testing.T) *env {
	t.Helper()
	n := qosmanagertest.NewNode(t, hostsim.Config{Version: cgroup.V2, Driver: cgroup.Cgroupfs})
	e := &env{Node: n, evictor: &qosmanagertest.Evictor{Reason: Reason}}
	e.deps = n.Deps(DefaultInterval)
	e.deps.Evictor = e.evictor
	return e
}

// fill puts the pods in the store and the samples in the cache: the best-effort series, and each pod's use for
// every second of them.
func (e *env) fill(s series, pods ...pod) {
	n := max(len(s.limit), len(s.request), len(s.usage))
	newest := e.Clock.Now().Add(-s.age)
	at := func(i, n int) time.Time { return newest.Add(-time.Duration(n-1-i) * time.Second) }
	for i, v := range s.limit {
		e.Cache.Append(at(i, len(s.limit)), metriccache.Sample{Key: metriccache.NodeKey(metriccache.BECPURealLimit), Value: v})
	}
	for i, v := range s.request {
		e.Cache.Append(at(i, len(s.request)), metriccache.Sample{Key: metriccache.NodeKey(metriccache.BECPURequest), Value: v})
	}
	for i, v := range s.usage {
		e.Cache.Append(at(i, len(s.usage)), metriccache.Sample{Key: metriccache.NodeKey(metriccache.BECPUUsage), Value: v})
	}
	for _, p := range pods {
		o := p.b.Obj()
		e.Store.SetPod(o)
		for i := range n {
			e.Cache.Append(at(i, n), metriccache.Sample{Key: metriccache.PodKey(metriccache.PodCPUUsage, string(o.UID)), Value: p.usage})
		}
	}
}

// enabled is the strategy on with satisfaction 60/80, usage threshold 90 and a 10 s window.
func enabled() *slov1alpha1.NodeSLOSpec {
	return (&slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
		Enable: ptr.To(true), CPUEvictBESatisfactionLowerPercent: ptr.To[int64](60), CPUEvictBESatisfactionUpperPercent: ptr.To[int64](80),
		CPUEvictBEUsageThresholdPercent: ptr.To[int64](90), CPUEvictTimeWindowSeconds: ptr.To[int64](10),
	}}).WithDefaults()
}

func TestRun(t *testing.T) {
	terminating := func(p pod) pod { p.b.Terminating(); return p }
	withoutUpper := enabled()
	withoutUpper.ResourceUsedThresholdWithBE.CPUEvictBESatisfactionUpperPercent = nil
	disabled := enabled()
	disabled.ResourceUsedThresholdWithBE.Enable = ptr.To(false)
	tests := []struct {
		name      string
		spec      *slov1alpha1.NodeSLOSpec
		series    series
		pods      []pod
		refuse    []string
		fail      []string
		wantAsked []string
		wantEvict []string
		wantErr   string
	}{
		{
			name: "low satisfaction, busy: lowest priority first, then largest use, until the upper percent", spec: enabled(),
			series: flat(10, 2, 5, 1.9), pods: usual(),
			// satisfaction 2/5 = 40% < 60%, utilisation 1.9/2 = 95% >= 90%. Projection 2/5 = 40%; free first, larger
			// use first: be-b (0.9 cores) leaves 5-2 = 3 requested, 2/3 = 67% < 80%; be-a leaves 2, 2/2 = 100%: stop.
			wantEvict: []string{"be-b", "be-a"},
		},
		{
			name: "deeper: the batch pods go too", spec: enabled(), series: flat(10, 1, 5, 0.95), pods: usual(),
			// 1/5 = 20%: be-b leaves 3 requested (33%), be-a 2 (50%), then be-c (0.5 cores, more than be-d) 1: 100%.
			wantEvict: []string{"be-b", "be-a", "be-c"},
		},
		{
			name: "evictEnabledPriorityThreshold: only pods at or below it", series: flat(10, 1, 5, 0.95), pods: usual(),
			spec: func() *slov1alpha1.NodeSLOSpec {
				s := enabled()
				s.ResourceUsedThresholdWithBE.EvictEnabledPriorityThreshold = ptr.To[int64](5000)
				return s
			}(),
			// As above, but the batch pods (5500) stay: only be-b and be-a (3500) go.
			wantEvict: []string{"be-b", "be-a"},
		},
		{
			name: "evictEnabledPriorityThreshold below every pod: nothing", series: flat(10, 2, 5, 1.9), pods: usual(),
			spec: func() *slov1alpha1.NodeSLOSpec {
				s := enabled()
				s.ResourceUsedThresholdWithBE.EvictEnabledPriorityThreshold = ptr.To[int64](3000)
				return s
			}(),
		},
		{
			name: "satisfaction at the lower percent: nothing", spec: enabled(), series: flat(10, 3, 5, 2.9), pods: usual(),
			// 3/5 = 60%, not below 60% (utilisation 2.9/3 = 97%).
		},
		{
			name: "not busy enough: nothing", spec: enabled(), series: flat(10, 2, 5, 1.78), pods: usual(),
			// 2/5 = 40%, but utilisation 1.78/2 = 89% < 90%: the pods do not use what they get.
		},
		{
			name: "averaged over the window: a dip at the end is not enough", spec: enabled(),
			series: series{limit: []float64{4, 4, 4, 4, 4, 2, 2, 2, 2, 2}, request: flat(10, 0, 5, 0).request, usage: []float64{3.8, 3.8, 3.8, 3.8, 3.8, 1.9, 1.9, 1.9, 1.9, 1.9}},
			pods:   usual(),
			// avg limit (5x4 + 5x2)/10 = 3, 3/5 = 60%: not below, although the newest 2/5 is 40%.
		},
		{
			name: "the newest limit decides the projection: suppression loosened, nothing", spec: enabled(),
			series: series{limit: []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 4}, request: flat(10, 0, 5, 0).request, usage: flat(10, 0, 0, 1.25).usage},
			pods:   usual(),
			// avg limit (9x1 + 4)/10 = 1.3: 1.3/5 = 26% < 60%, utilisation 1.25/1.3 = 96%; but at the newest limit
			// 4/5 = 80% >= 80% without evicting anyone.
		},
		{
			name: "a window not covered yet: nothing", spec: enabled(), series: flat(7, 2, 5, 1.9), pods: usual(),
			// 7 of 10 s: 70% < 80% of the window; satisfaction has not been low for the window yet.
		},
		{
			name: "8 of 10 s cover it", spec: enabled(), series: flat(8, 2, 5, 1.9), pods: usual(),
			wantEvict: []string{"be-b", "be-a"},
		},
		{
			name: "samples too old (collector stopped): nothing", spec: enabled(), series: func() series { s := flat(10, 2, 5, 1.9); s.age = 6 * time.Second; return s }(),
			pods: usual(),
		},
		{name: "disabled: nothing", spec: disabled, series: flat(10, 2, 5, 1.9), pods: usual()},
		{name: "upper percent unset: off", spec: withoutUpper, series: flat(10, 2, 5, 1.9), pods: usual()},
		{
			name: "never a pod that is not best-effort, nor one outside the requests", spec: enabled(), series: flat(10, 1, 2, 0.95),
			pods: []pod{
				be("be-b", 3500, "2000", 0.9),
				// Free priority, burstable (QoS class LS): best-effort, but not in be_cpu_request, so evicting it would
				// not raise the satisfaction; it would go first otherwise (priority 3100, 1.5 cores).
				{testutil.Pod("unlabelled").Priority(3100).Requests("cpu", "100m", string(slov1alpha1.BatchCPU), "2000"), 1.5},
				{testutil.Pod("web").Priority(9500).Requests("cpu", "4"), 3},
			},
			// 1/2 = 50% < 60%, utilisation 95%; be-b leaves nothing requested: satisfaction unbounded.
			wantEvict: []string{"be-b"},
		},
		{
			name: "pods terminating already count as gone", spec: enabled(), series: flat(10, 2, 5, 1.9),
			pods: append(usual()[:1], append([]pod{terminating(usual()[1])}, usual()[2:]...)...),
			// be-b is on its way out: 2/(5-2) = 67% < 80%; be-a leaves 2, 100%. be-b is not asked again.
			wantEvict: []string{"be-a"},
		},
		{
			name: "a pod not evicted now (PDB, rate limit) does not count; the next one goes", spec: enabled(), series: flat(10, 2, 5, 1.9), pods: usual(),
			refuse: []string{"be-b"},
			// be-b stays: be-a leaves 4, 2/4 = 50%; be-c (0.5 cores, batch) leaves 3, 67%; be-d leaves 2, 100%.
			wantAsked: []string{"be-b", "be-a", "be-c", "be-d"},
			wantEvict: []string{"be-a", "be-c", "be-d"},
		},
		{
			name: "an error is reported and the next pod is tried", spec: enabled(), series: flat(10, 2, 5, 1.9), pods: usual(),
			fail:      []string{"be-b"},
			wantAsked: []string{"be-b", "be-a", "be-c", "be-d"},
			wantEvict: []string{"be-a", "be-c", "be-d"},
			wantErr:   "evicting pod default/be-b for CPU satisfaction: the server is currently unable",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.fill(tt.series, tt.pods...)
			e.evictor.Script(tt.refuse, tt.fail)
			p, err := New(e.deps)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Run(context.Background(), tt.spec)
			qosmanagertest.ExpectErr(t, err, tt.wantErr)
			e.evictor.Expect(t, tt.wantAsked, tt.wantEvict)
		})
	}
}

// TestEvictByAllocatable: with cpuEvictPolicy evictByAllocatable, satisfaction is the node's allocatable batch-cpu
// over the requests, whatever suppression leaves the pods now (Koordinator's policy of the same name).
func TestEvictByAllocatable(t *testing.T) {
	byAllocatable := enabled()
	byAllocatable.ResourceUsedThresholdWithBE.CPUEvictPolicy = slov1alpha1.CPUEvictByAllocatable
	for _, tt := range []struct {
		name      string
		spec      *slov1alpha1.NodeSLOSpec
		node      *corev1.Node
		wantEvict []string
	}{
		{
			// The real limit, 4 cores, satisfies 4/5 = 80%: nothing to do by it.
			name: "by the real limit (the default)", spec: enabled(),
			node: testutil.Node("n").Allocatable(string(slov1alpha1.BatchCPU), "2000").Obj(),
		},
		{
			// 2/5 = 40% < 60%, utilisation 1.9/2 = 95%: be-b leaves 3 requested (67%), be-a 2 (100%).
			name: "by the allocatable batch-cpu", spec: byAllocatable,
			node: testutil.Node("n").Allocatable(string(slov1alpha1.BatchCPU), "2000").Obj(), wantEvict: []string{"be-b", "be-a"},
		},
		{name: "the node publishes no batch-cpu: nothing", spec: byAllocatable, node: testutil.Node("n").Obj()},
		{name: "no Node yet: nothing", spec: byAllocatable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.fill(flat(10, 4, 5, 1.9), usual()...)
			if tt.node != nil {
				e.Store.SetNode(tt.node)
			}
			p, err := New(e.deps)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Run(context.Background(), tt.spec); err != nil {
				t.Fatal(err)
			}
			e.evictor.Expect(t, tt.wantEvict, tt.wantEvict)
			for _, m := range e.evictor.Messages() {
				if !strings.Contains(m, "allocatable batch-cpu 2.00 / requests 5.00 cores") {
					t.Errorf("message %q does not say what satisfaction was measured against", m)
				}
			}
		})
	}
}

// TestRunMessage: the message (the pod's event) gives every number the decision used.
func TestRunMessage(t *testing.T) {
	e := newEnv(t)
	e.fill(flat(10, 2, 5, 1.9), usual()...)
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background(), enabled()); err != nil {
		t.Fatal(err)
	}
	const head = "best-effort CPU satisfaction 40% (real limit 2.00 / requests 5.00 cores, 10 s average) is below 60% while best-effort pods use 95% of their limit (threshold 90%); " +
		"evicting best-effort pods until the projected satisfaction is at least 80%: "
	want := []string{
		head + "projected 40%, this pod requests 2.00 and uses 0.90 cores, projected after it 67%",
		head + "projected 67%, this pod requests 1.00 and uses 0.30 cores, projected after it 100%",
	}
	if diff := cmp.Diff(want, e.evictor.Messages()); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

// TestRunCountsItsOwnRequests: pods whose eviction was accepted but that are still there count as gone for 30 s,
// so the next runs, which still see the low satisfaction in the window, evict nobody else.
func TestRunCountsItsOwnRequests(t *testing.T) {
	e := newEnv(t)
	e.fill(flat(10, 2, 5, 1.9), usual()...)
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := p.Run(context.Background(), enabled()); err != nil {
			t.Fatal(err)
		}
		e.Clock.Step(time.Second)
		e.fill(flat(1, 2, 5, 1.9), usual()...)
		if diff := cmp.Diff([]string{"be-b", "be-a"}, e.evictor.Asked()); diff != "" {
			t.Fatalf("run %d: pods asked for (-want +got):\n%s", i, diff)
		}
	}
}

func TestRequest(t *testing.T) {
	label := func(b *testutil.PodBuilder) *testutil.PodBuilder {
		return b.Label(slov1alpha1.LabelQoSClass, string(slov1alpha1.QoSBE))
	}
	tests := []struct {
		name string
		pod  *testutil.PodBuilder
		want float64
	}{
		{"batch-cpu, millicores", label(testutil.Pod("a")).Requests(string(slov1alpha1.BatchCPU), "1500"), 1.5},
		{"batch-cpu of two containers", label(testutil.Pod("a")).Requests(string(slov1alpha1.BatchCPU), "1500").Container("c1").Requests(string(slov1alpha1.BatchCPU), "500"), 2},
		{"cpu when no batch-cpu", label(testutil.Pod("a")).Requests("cpu", "500m"), 0.5},
		{"batch-cpu wins over cpu", label(testutil.Pod("a")).Requests("cpu", "4", string(slov1alpha1.BatchCPU), "250"), 0.25},
		{"not of QoS class BE (burstable: LS)", testutil.Pod("a").Priority(5500).Requests("cpu", "100m", string(slov1alpha1.BatchCPU), "1500"), 0},
		{"Kubernetes BestEffort without a label: BE", testutil.Pod("a").Priority(5500).Requests(string(slov1alpha1.BatchCPU), "1500"), 1.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := statesinformer.NewStore()
			o := tt.pod.Obj()
			s.SetPod(o)
			if got := collector.BECPURequest(s.GetPod(o.UID)); got != tt.want {
				t.Errorf("request = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNewMissingDeps(t *testing.T) {
	_, err := New(qosmanager.Deps{Clock: clocktesting.NewFakeClock(time.Now())})
	qosmanagertest.ExpectErr(t, err, "building the cpuevict plugin: missing States, Cache, Evictor")
}

func TestValidate(t *testing.T) {
	strategy := func(s slov1alpha1.ResourceThresholdStrategy) *slov1alpha1.NodeSLOSpec {
		return (&slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &s}).WithDefaults()
	}
	on, p64 := ptr.To(true), ptr.To[int64]
	const f = "resourceUsedThresholdWithBE."
	tests := []struct {
		name string
		spec *slov1alpha1.NodeSLOSpec
		want []string // substrings of the error, one per line; none for a valid spec
	}{
		{name: "defaults (off)", spec: strategy(slov1alpha1.ResourceThresholdStrategy{})},
		{name: "enabled without satisfaction percents (off)", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on})},
		{name: "60/80 with the defaults 90 % and 1 s", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on, CPUEvictBESatisfactionLowerPercent: p64(60), CPUEvictBESatisfactionUpperPercent: p64(80)})},
		{name: "lower equal to upper", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on, CPUEvictBESatisfactionLowerPercent: p64(70), CPUEvictBESatisfactionUpperPercent: p64(70)})},
		{name: "a window of the cache's hour", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on, CPUEvictBESatisfactionLowerPercent: p64(60), CPUEvictBESatisfactionUpperPercent: p64(80), CPUEvictTimeWindowSeconds: p64(3600)})},
		{name: "off: anything goes, so that switching off always works", spec: strategy(slov1alpha1.ResourceThresholdStrategy{CPUEvictBESatisfactionLowerPercent: p64(0), CPUEvictBESatisfactionUpperPercent: p64(500)})},
		{
			name: "upper without lower", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on, CPUEvictBESatisfactionUpperPercent: p64(80)}),
			want: []string{f + "cpuEvictBESatisfactionUpperPercent is set but " + f + "cpuEvictBESatisfactionLowerPercent is not: CPU eviction needs both"},
		},
		{
			name: "lower without upper", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on, CPUEvictBESatisfactionLowerPercent: p64(60)}),
			want: []string{f + "cpuEvictBESatisfactionLowerPercent is set but " + f + "cpuEvictBESatisfactionUpperPercent is not: CPU eviction needs both"},
		},
		{
			name: "0 and above 100", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on, CPUEvictBESatisfactionLowerPercent: p64(0), CPUEvictBESatisfactionUpperPercent: p64(101)}),
			want: []string{f + "cpuEvictBESatisfactionLowerPercent is 0, outside [1, 100]", f + "cpuEvictBESatisfactionUpperPercent is 101, outside [1, 100]"},
		},
		{
			name: "lower above upper", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on, CPUEvictBESatisfactionLowerPercent: p64(90), CPUEvictBESatisfactionUpperPercent: p64(80)}),
			want: []string{f + "cpuEvictBESatisfactionLowerPercent (90) is above " + f + "cpuEvictBESatisfactionUpperPercent (80)"},
		},
		{
			name: "usage threshold 0, window 0", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on, CPUEvictBESatisfactionLowerPercent: p64(60), CPUEvictBESatisfactionUpperPercent: p64(80),
				CPUEvictBEUsageThresholdPercent: p64(0), CPUEvictTimeWindowSeconds: p64(0)}),
			want: []string{f + "cpuEvictBEUsageThresholdPercent is 0, outside [1, 100]", f + "cpuEvictTimeWindowSeconds is 0, below 1"},
		},
		{
			name: "a window above the CRD's bound", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on, CPUEvictBESatisfactionLowerPercent: p64(60), CPUEvictBESatisfactionUpperPercent: p64(80), CPUEvictTimeWindowSeconds: p64(3601)}),
			want: []string{f + "cpuEvictTimeWindowSeconds is 3601, above 3600"},
		},
		{
			// 10^10 s overflows time.Duration into a negative window, which the retention check alone let through.
			name: "a window that overflows a duration", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on, CPUEvictBESatisfactionLowerPercent: p64(60), CPUEvictBESatisfactionUpperPercent: p64(80), CPUEvictTimeWindowSeconds: p64(1e10)}),
			want: []string{f + "cpuEvictTimeWindowSeconds is 10000000000, above 3600"},
		},
	}
	p, err := New(newEnv(t).deps) // the default cache keeps 1 hour
	if err != nil {
		t.Fatal(err)
	}
	v := p.(qosmanager.ValidatingPlugin)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Validate(tt.spec)
			qosmanagertest.ExpectValidation(t, err, true, tt.want...)
		})
	}
}

// TestValidateWindowAgainstTheCache: with a metric cache configured to keep less than the CRD's hour, a window the
// cache cannot cover is refused too.
func TestValidateWindowAgainstTheCache(t *testing.T) {
	e := newEnv(t)
	cfg := metriccache.DefaultConfig()
	cfg.CoarseSlots = 60 // 30 minutes
	cache, err := metriccache.New(cfg, e.Clock)
	if err != nil {
		t.Fatal(err)
	}
	e.deps.Cache = cache
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	on := ptr.To(true)
	spec := &slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{Enable: on,
		CPUEvictBESatisfactionLowerPercent: ptr.To[int64](60), CPUEvictBESatisfactionUpperPercent: ptr.To[int64](80), CPUEvictTimeWindowSeconds: ptr.To[int64](1801)}}
	spec = spec.WithDefaults()
	err = p.(qosmanager.ValidatingPlugin).Validate(spec)
	if want := "resourceUsedThresholdWithBE.cpuEvictTimeWindowSeconds is 1801, longer than the 1800 s the metric cache keeps"; err == nil || err.Error() != want {
		t.Errorf("Validate = %v, want %q", err, want)
	}
}
