package reporter

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var now = time.Unix(1_700_000_000, 0)

// series is a constant or ramp written once a second for the seconds before now.
type series struct {
	key     metriccache.Key
	seconds int
	value   func(i int) float64 // i counts from the oldest sample
}

func constant(v float64) func(int) float64 { return func(int) float64 { return v } }

func fill(t *testing.T, all ...series) *metriccache.MemoryCache {
	t.Helper()
	c, err := metriccache.New(metriccache.DefaultConfig(), clocktesting.NewFakeClock(now))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		for i := range s.seconds {
			c.Append(now.Add(time.Duration(i-s.seconds+1)*time.Second), metriccache.Sample{Key: s.key, Value: s.value(i)})
		}
	}
	return c
}

func node(m metriccache.Metric, seconds int, v func(int) float64) series {
	return series{key: metriccache.NodeKey(m), seconds: seconds, value: v}
}

func pod(m metriccache.Metric, uid string, seconds int, v float64) series {
	return series{key: metriccache.PodKey(m, uid), seconds: seconds, value: constant(v)}
}

func rl(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

const gi = 1 << 30

func TestBuild(t *testing.T) {
	store := statesinformer.NewStore()
	store.SetPod(testutil.Pod("old").Priority(9500).Label(slov1alpha1.LabelQoSClass, "LS").Obj())
	store.SetPod(testutil.Pod("new").Priority(5500).Label(slov1alpha1.LabelQoSClass, "BE").Obj())
	store.SetPod(testutil.Pod("nometric").Obj())
	store.SetNodeSLO(&slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{HostApplications: []slov1alpha1.HostApplicationSpec{
		{Name: "nginx", QoS: slov1alpha1.QoSLS}, {Name: "spark", QoS: slov1alpha1.QoSBE, Priority: slov1alpha1.PriorityBatch},
	}}})
	ramp := func(i int) float64 { return float64(i%100) / 100 } // 0.00 .. 0.99, repeating
	cache := fill(t,
		node(metriccache.NodeCPUUsage, 600, func(i int) float64 { return 2 + ramp(i) }),
		node(metriccache.NodeMemoryUsage, 600, constant(4*gi)),
		node(metriccache.SystemCPUUsage, 600, constant(0.5)),
		node(metriccache.SystemMemoryUsage, 600, constant(1*gi)),
		pod(metriccache.PodCPUUsage, "uid-old", 300, 1.25),
		pod(metriccache.PodMemoryUsage, "uid-old", 300, 2*gi),
		// Started 60 s ago: 20% of the 300 s window, under the 50% needed.
		pod(metriccache.PodCPUUsage, "uid-new", 60, 1),
		pod(metriccache.PodMemoryUsage, "uid-new", 60, gi),
		series{key: metriccache.NamedKey(metriccache.HostAppCPUUsage, "spark"), seconds: 300, value: constant(0.3)},
		series{key: metriccache.NamedKey(metriccache.HostAppMemoryUsage, "spark"), seconds: 300, value: constant(100 << 20)},
	)
	r := New(nil, store, cache, clocktesting.NewFakeClock(now), metrics.New(), "n", DefaultOptions())
	got := r.Build(now, Policy{AggregateDuration: 300 * time.Second, Durations: []time.Duration{5 * time.Minute, 10 * time.Minute, 15 * time.Minute}})
	if got == nil {
		t.Fatal("no status")
	}
	// The last 300 s of the ramp: 3 full laps of 0.00..0.99, mean 0.495.
	agg := func(d time.Duration, avg, p50, p90, p95, p99, mem string) slov1alpha1.AggregatedUsage {
		return slov1alpha1.AggregatedUsage{Duration: metav1.Duration{Duration: d}, Usage: map[slov1alpha1.AggregationType]corev1.ResourceList{
			slov1alpha1.AggregationAvg: rl(avg, mem), slov1alpha1.AggregationP50: rl(p50, mem), slov1alpha1.AggregationP90: rl(p90, mem),
			slov1alpha1.AggregationP95: rl(p95, mem), slov1alpha1.AggregationP99: rl(p99, mem),
		}}
	}
	want := &slov1alpha1.NodeMetricStatus{
		UpdateTime: &metav1.Time{Time: now},
		NodeMetric: &slov1alpha1.NodeMetricInfo{
			NodeUsage:   rl("2495m", "4Gi"),
			SystemUsage: rl("500m", "1Gi"),
			AggregatedNodeUsages: []slov1alpha1.AggregatedUsage{
				agg(5*time.Minute, "2495m", "2490m", "2890m", "2940m", "2980m", "4Gi"),
				agg(10*time.Minute, "2495m", "2490m", "2890m", "2940m", "2980m", "4Gi"),
				// 600 s of samples reach back 2/3 of 15 minutes: enough.
				agg(15*time.Minute, "2495m", "2490m", "2890m", "2940m", "2980m", "4Gi"),
			},
			AggregatedSystemUsages: []slov1alpha1.AggregatedUsage{
				agg(5*time.Minute, "500m", "500m", "500m", "500m", "500m", "1Gi"),
				agg(10*time.Minute, "500m", "500m", "500m", "500m", "500m", "1Gi"),
				agg(15*time.Minute, "500m", "500m", "500m", "500m", "500m", "1Gi"),
			},
		},
		// prod is the priority left out
		PodUsages: []slov1alpha1.PodUsage{{UID: "uid-old", CPUMillis: 1250, MemoryBytes: 2 * gi}},
		HostApplicationMetric: []slov1alpha1.HostApplicationMetricInfo{
			{Name: "spark", Priority: slov1alpha1.PriorityBatch, QoS: slov1alpha1.QoSBE, Usage: rl("300m", "100Mi")},
		},
	}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
}

// predictorAt is a Predictor that reports a fixed prediction, and the time it was asked for.
type predictorAt struct {
	asked  time.Time
	result *slov1alpha1.ReclaimableMetric
}

func (p *predictorAt) ProdReclaimable(now time.Time) *slov1alpha1.ReclaimableMetric {
	p.asked = now
	return p.result
}

// TestBuildReportsThePrediction: with a predictor the status carries its prod reclaimable resources, asked at the
// report's time; without one it carries none.
func TestBuildReportsThePrediction(t *testing.T) {
	cache := fill(t, node(metriccache.NodeCPUUsage, 300, constant(1)), node(metriccache.NodeMemoryUsage, 300, constant(gi)))
	policy := Policy{AggregateDuration: 300 * time.Second}
	plain := New(nil, statesinformer.NewStore(), cache, clocktesting.NewFakeClock(now), metrics.New(), "n", DefaultOptions())
	if got := plain.Build(now, policy); got == nil || got.ProdReclaimableMetric != nil {
		t.Fatalf("without a predictor: %+v, want a status without prodReclaimableMetric", got)
	}
	p := &predictorAt{result: &slov1alpha1.ReclaimableMetric{Resource: rl("2500m", "3Gi"),
		Prediction: &slov1alpha1.ReclaimablePrediction{SafetyMarginPercent: 10}}}
	r := New(nil, statesinformer.NewStore(), cache, clocktesting.NewFakeClock(now), metrics.New(), "n", DefaultOptions()).WithPredictor(p)
	got := r.Build(now, policy)
	if got == nil || got.ProdReclaimableMetric != p.result {
		t.Fatalf("status %+v does not carry the prediction", got)
	}
	if !p.asked.Equal(now) {
		t.Errorf("the prediction was asked for %v, want the report's time %v", p.asked, now)
	}
}

func TestBuildColdStart(t *testing.T) {
	store := statesinformer.NewStore()
	tests := []struct {
		name     string
		seconds  int
		wantNil  bool
		wantAggs int
	}{
		{name: "just restarted", seconds: 100, wantNil: true},
		{name: "half the window", seconds: 150, wantAggs: 1},         // 5m only
		{name: "10m window half covered", seconds: 300, wantAggs: 2}, // 5m and 10m, not 15m (300/900)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := fill(t, node(metriccache.NodeCPUUsage, tt.seconds, constant(1)), node(metriccache.NodeMemoryUsage, tt.seconds, constant(gi)))
			r := New(nil, store, cache, clocktesting.NewFakeClock(now), metrics.New(), "n", DefaultOptions())
			got := r.Build(now, PolicyOf(nil))
			if tt.wantNil {
				if got != nil {
					t.Fatalf("want no status, got %+v", got)
				}
				return
			}
			if got == nil || len(got.NodeMetric.AggregatedNodeUsages) != tt.wantAggs || got.NodeMetric.SystemUsage != nil {
				t.Fatalf("want node usage with %d aggregated windows and no system usage, got %+v", tt.wantAggs, got)
			}
		})
	}
}

// TestBuildSkipsStoppedSeries: a node series that covers the window but stopped long ago (its collector stopped or
// fails) is not reported under a fresh updateTime; one that stopped a moment ago still is.
func TestBuildSkipsStoppedSeries(t *testing.T) {
	store := statesinformer.NewStore()
	for _, tt := range []struct {
		stoppedSecondsAgo int
		want              bool
	}{{stoppedSecondsAgo: 5, want: true}, {stoppedSecondsAgo: 160, want: false}} {
		c, err := metriccache.New(metriccache.DefaultConfig(), clocktesting.NewFakeClock(now))
		if err != nil {
			t.Fatal(err)
		}
		for i := 300; i >= tt.stoppedSecondsAgo; i-- {
			at := now.Add(-time.Duration(i) * time.Second)
			c.Append(at, metriccache.Sample{Key: metriccache.NodeKey(metriccache.NodeCPUUsage), Value: 1},
				metriccache.Sample{Key: metriccache.NodeKey(metriccache.NodeMemoryUsage), Value: gi})
		}
		r := New(nil, store, c, clocktesting.NewFakeClock(now), metrics.New(), "n", DefaultOptions())
		if got := r.Build(now, PolicyOf(nil)); (got != nil) != tt.want {
			t.Errorf("node series stopped %ds ago: status %v, want one: %v", tt.stoppedSecondsAgo, got != nil, tt.want)
		}
	}
}

func TestBuildBoundsPods(t *testing.T) {
	store := statesinformer.NewStore()
	var all []series
	for _, n := range []string{"a", "b", "c", "d"} {
		store.SetPod(testutil.Pod(n).Obj())
		all = append(all, pod(metriccache.PodCPUUsage, "uid-"+n, 300, 1), pod(metriccache.PodMemoryUsage, "uid-"+n, 300, gi))
	}
	all = append(all, node(metriccache.NodeCPUUsage, 300, constant(4)), node(metriccache.NodeMemoryUsage, 300, constant(4*gi)))
	opts := DefaultOptions()
	opts.MaxPods = 3
	r := New(nil, store, fill(t, all...), clocktesting.NewFakeClock(now), metrics.New(), "n", opts)
	got := r.Build(now, PolicyOf(nil))
	var uids []string
	for _, p := range got.PodUsages {
		uids = append(uids, p.UID)
	}
	if d := cmp.Diff([]string{"uid-a", "uid-b", "uid-c"}, uids); d != "" {
		t.Errorf("pods (-want +got):\n%s", d)
	}
}

func TestPolicyOf(t *testing.T) {
	tests := []struct {
		name string
		nm   *slov1alpha1.NodeMetric
		want Policy
	}{
		{name: "no NodeMetric", want: Policy{AggregateDuration: 300 * time.Second, ReportInterval: time.Minute, Durations: []time.Duration{5 * time.Minute, 10 * time.Minute, 15 * time.Minute}}},
		{
			name: "all set",
			nm: &slov1alpha1.NodeMetric{Spec: slov1alpha1.NodeMetricSpec{CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{
				AggregateDurationSeconds: ptr.To[int64](120), ReportIntervalSeconds: ptr.To[int64](10),
				NodeAggregatePolicy: &slov1alpha1.AggregatePolicy{Durations: []metav1.Duration{{Duration: time.Minute}, {Duration: 0}}},
			}}},
			want: Policy{AggregateDuration: 2 * time.Minute, ReportInterval: 10 * time.Second, Durations: []time.Duration{time.Minute}},
		},
		{
			// What the CRD refuses, as an object stored under an older schema would still carry it: 10^10 s times
			// time.Second overflows into a negative duration, a report timer that fires at once, forever.
			name: "out of range is clamped, not overflowed",
			nm: &slov1alpha1.NodeMetric{Spec: slov1alpha1.NodeMetricSpec{CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{
				AggregateDurationSeconds: ptr.To[int64](1e10), ReportIntervalSeconds: ptr.To[int64](1e10),
				NodeAggregatePolicy: &slov1alpha1.AggregatePolicy{Durations: []metav1.Duration{
					{Duration: 2 * time.Hour}, {Duration: 1}, {Duration: 2}, {Duration: 3}, {Duration: 4}, {Duration: 5},
					{Duration: 6}, {Duration: 7}, {Duration: 8}, {Duration: 9}, {Duration: 10}, {Duration: 11},
				}},
			}}},
			want: Policy{AggregateDuration: time.Hour, ReportInterval: time.Hour, Durations: []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
				Adjusted: []string{
					"aggregateDurationSeconds: 10000000000 is above 3600, 3600 used",
					"reportIntervalSeconds: 10000000000 is above 3600, 3600 used",
					"nodeAggregatePolicy.durations: 2h0m0s is longer than 1h0m0s, left out",
					"nodeAggregatePolicy.durations: more than 10 windows, 11ns left out",
				}},
		},
		{
			name: "empty duration list means none",
			nm:   &slov1alpha1.NodeMetric{Spec: slov1alpha1.NodeMetricSpec{CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{NodeAggregatePolicy: &slov1alpha1.AggregatePolicy{}}}},
			want: Policy{AggregateDuration: 300 * time.Second, ReportInterval: time.Minute},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, PolicyOf(tt.nm)); d != "" {
				t.Errorf("PolicyOf (-want +got):\n%s", d)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if err := (Options{MinCoverage: 1.5, MaxPods: 0, MaxHostApplications: 1}).Validate(); err == nil {
		t.Error("bad options accepted")
	}
}

// TestStartFollowsTheReportInterval runs the reporter on a fake clock: it reports every reportIntervalSeconds and
// picks up a new interval as soon as the NodeMetric's spec changes.
func TestStartFollowsTheReportInterval(t *testing.T) {
	store := statesinformer.NewStore()
	withInterval := func(s int64) *slov1alpha1.NodeMetric {
		return &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: slov1alpha1.NodeMetricSpec{
			CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{ReportIntervalSeconds: ptr.To(s)},
		}}
	}
	store.SetNodeMetric(withInterval(10))
	clk := clocktesting.NewFakeClock(now)
	m := metrics.New()
	r := New(nil, store, fill(t), clk, m, "n", DefaultOptions()) // no data: every report is "not ready"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The NodeMetric set above left a change pending: let the callbacks take it before the reporter registers its
	// own, or it would re-arm the reporter's timer at a moment of the scheduler's choosing (once after the first
	// step below, on a loaded machine, and the report came 9 s late).
	settled := make(chan struct{}, 1)
	store.RegisterCallback(statesinformer.KindNodeMetric, "test", func(statesinformer.Kind) {
		select {
		case settled <- struct{}{}:
		default:
		}
	})
	go store.RunCallbacks(ctx)
	<-settled
	done := make(chan error)
	go func() { done <- r.Start(ctx) }()

	reports := func() float64 { return promtestutil.ToFloat64(m.Reports.WithLabelValues(metrics.ReportNotReady)) }
	waitTimer := func() {
		for deadline := time.Now().Add(5 * time.Second); !clk.HasWaiters() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	waitReports := func(n float64) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); reports() < n && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if got := reports(); got != n {
			t.Fatalf("reports = %v, want %v", got, n)
		}
	}
	waitTimer()
	clk.Step(9 * time.Second)
	time.Sleep(20 * time.Millisecond)
	waitReports(0)
	clk.Step(time.Second)
	waitReports(1)

	// A shorter interval applies at once, not after the 10 s already armed: the report comes within 6 s of fake
	// time. The callback re-arms the timer when the scheduler runs it, so the clock moves 2 s at a time until it does.
	waitTimer()
	store.SetNodeMetric(withInterval(2))
	<-settled
	for step := 0; step < 3 && reports() < 2; step++ {
		time.Sleep(50 * time.Millisecond)
		waitTimer()
		clk.Step(2 * time.Second)
		for deadline := time.Now().Add(300 * time.Millisecond); reports() < 2 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	waitReports(2)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestMemoryReadsInBinaryUnits: memory is reported in whole KiB, and in whole MiB from 1 GiB up, so that
// `kubectl get nodemetric` prints "15873Mi", not the raw bytes of an average.
func TestMemoryReadsInBinaryUnits(t *testing.T) {
	for _, tc := range []struct {
		bytes float64
		want  string
	}{
		{0, "0"},
		{-5, "0"},
		{1000, "1Ki"},
		{1536 + 0.4, "2Ki"},
		{300<<20 + 700, "307201Ki"},
		{(1 << 30) - 1, "1Gi"},
		{15873<<20 + 123457, "15873Mi"},
		{16 << 30, "16Gi"},
	} {
		mem := resources(0, tc.bytes)[corev1.ResourceMemory]
		if got := mem.String(); got != tc.want {
			t.Errorf("memory of %.1f bytes reads %s, want %s", tc.bytes, got, tc.want)
		}
	}
}
