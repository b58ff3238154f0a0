package collector

import (
	"context"
	"fmt"
	"math"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/proc"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/topology"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

// rig is a simulated host with the agent's collectors pointed at it.
type rig struct {
	host    *hostsim.Host
	store   *statesinformer.Store
	cache   *metriccache.MemoryCache
	clock   *clocktesting.FakeClock
	metrics *metrics.Metrics
	runner  *Runner
}

func newRig(t testing.TB, cfg hostsim.Config, selection ...string) *rig {
	t.Helper()
	h, err := hostsim.New(t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := proc.New(h.ProcRoot())
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	cache, err := metriccache.New(metriccache.DefaultConfig(), clk)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{host: h, store: statesinformer.NewStore(), cache: cache, clock: clk, metrics: metrics.New()}
	if len(selection) == 0 {
		selection = []string{"*"}
	}
	r.runner, err = NewRunner(Deps{
		Proc: p, SysRoot: h.SysRoot(), Cgroups: cgroup.NewFS(h.CgroupRoot(), cfg.Version).KeepOpen(4096), CgroupVersion: cfg.Version,
		Layout: h.Layout(), States: r.store, Cache: cache, Metrics: r.metrics,
	}, clk, Registry(), selection, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) addPod(t testing.TB, pod *corev1.Pod, u hostsim.Usage) {
	t.Helper()
	if err := r.host.AddPod(pod, u); err != nil {
		t.Fatal(err)
	}
	r.store.SetPod(pod)
}

// cycles runs n collection cycles one simulated second apart and returns the last cycle's error.
func (r *rig) cycles(t testing.TB, n int) error {
	t.Helper()
	var err error
	for range n {
		if err := r.host.Advance(time.Second); err != nil {
			t.Fatal(err)
		}
		r.clock.Step(time.Second)
		err = r.runner.CollectOnce(context.Background())
	}
	return err
}

// start runs the runner on its own schedule until the test ends, after its first round.
func (r *rig) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.runner.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	if !r.runner.WaitForSync(ctx) {
		t.Fatal("no first round")
	}
}

// last is the newest value of a series in the last 3 seconds, NaN when there is none.
func (r *rig) last(k metriccache.Key) float64 {
	res, ok := r.cache.Query(k, r.clock.Now().Add(-3*time.Second), r.clock.Now())
	if !ok {
		return math.NaN()
	}
	return res.Value(metriccache.Last)
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %v, want %v +- %v", what, got, want, tol)
	}
}

const mi = 1 << 20

// TestCollectorsOnSimulatedHost runs every collector against simulated hosts of each cgroup shape and checks each
// series against what the simulation used.
func TestCollectorsOnSimulatedHost(t *testing.T) {
	shapes := []hostsim.Config{
		{Version: cgroup.V1, Driver: cgroup.Cgroupfs},
		{Version: cgroup.V1, Driver: cgroup.Systemd},
		{Version: cgroup.V2, Driver: cgroup.Systemd},
		{Version: cgroup.V2, Driver: cgroup.Cgroupfs},
	}
	for _, shape := range shapes {
		t.Run(shape.Version.String()+"-"+string(shape.Driver), func(t *testing.T) {
			shape.BEQuotaCores, shape.BECPUs = 3, "0-1"
			r := newRig(t, shape)
			ls := tu.Pod("ls").Priority(9500).Label(slov1alpha1.LabelQoSClass, "LS").
				InitContainer("proxy", true).Requests("cpu", "100m").Running("containerd://proxy1").
				Container("app").Requests("cpu", "1", "memory", "1Gi").Running("containerd://app1").Obj()
			be := tu.Pod("be").Label(slov1alpha1.LabelQoSClass, "BE").
				Container("job").Requests(string(slov1alpha1.BatchCPU), "2000").Limits(string(slov1alpha1.BatchCPU), "2000").Running("cri-o://job1").Obj()
			g := tu.Pod("g").Container("db").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Running("docker://db1").Obj()
			r.addPod(t, ls, hostsim.Usage{CPU: 1.5, Memory: 1024 * mi, PageCache: 200 * mi, Pressure: 0.2})
			r.addPod(t, be, hostsim.Usage{CPU: 0.8, Memory: 512 * mi, PageCache: 100 * mi, Throttled: 0.5})
			r.addPod(t, g, hostsim.Usage{CPU: 0.25, Memory: 256 * mi})
			app := slov1alpha1.HostApplicationSpec{Name: "nginx", QoS: slov1alpha1.QoSLS}
			if err := r.host.AddHostApp("nginx", path.Join(r.host.Layout().Parent, "host-latency-sensitive/nginx"), hostsim.Usage{CPU: 0.3, Memory: 100 * mi}); err != nil {
				t.Fatal(err)
			}
			r.store.SetNodeSLO(&slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: slov1alpha1.NodeSLOSpec{HostApplications: []slov1alpha1.HostApplicationSpec{app}}})
			r.host.SetSystemUsage(hostsim.Usage{CPU: 0.2, Memory: 500 * mi, PageCache: 300 * mi, Pressure: 0.1})

			err := r.cycles(t, 5)
			if shape.Version == cgroup.V1 {
				// The first cycle said once that per-pod pressure needs v2; later cycles are clean.
				if got := testutil.ToFloat64(r.metrics.CollectorRuns.WithLabelValues(PSIName, metrics.ResultUnsupported)); got != 1 {
					t.Errorf("psi unsupported runs = %v, want 1", got)
				}
			}
			if err != nil {
				t.Fatalf("collection failed: %v", err)
			}

			uid := func(p *corev1.Pod) string { return string(p.UID) }
			near(t, "node cpu", r.last(metriccache.NodeKey(metriccache.NodeCPUUsage)), 3.05, 0.02)
			near(t, "node memory", r.last(metriccache.NodeKey(metriccache.NodeMemoryUsage)), (1024+512+256+100+500)*mi, 0)
			near(t, "node page cache", r.last(metriccache.NodeKey(metriccache.NodePageCache)), 600*mi, 0)
			near(t, "pod ls cpu", r.last(metriccache.PodKey(metriccache.PodCPUUsage, uid(ls))), 1.5, 1e-6)
			near(t, "pod ls memory", r.last(metriccache.PodKey(metriccache.PodMemoryUsage, uid(ls))), 1024*mi, 0)
			near(t, "pod ls page cache", r.last(metriccache.PodKey(metriccache.PodPageCache, uid(ls))), 200*mi, 0)
			near(t, "container ls/app cpu", r.last(metriccache.ContainerKey(metriccache.ContainerCPUUsage, uid(ls), "app")), 0.75, 1e-6)
			near(t, "sidecar ls/proxy memory", r.last(metriccache.ContainerKey(metriccache.ContainerMemoryUsage, uid(ls), "proxy")), 512*mi, 0)
			near(t, "pod g cpu", r.last(metriccache.PodKey(metriccache.PodCPUUsage, uid(g))), 0.25, 1e-6)
			near(t, "pod be throttled", r.last(metriccache.PodKey(metriccache.PodCPUThrottledRatio, uid(be))), 0.5, 0)
			near(t, "pod ls throttled", r.last(metriccache.PodKey(metriccache.PodCPUThrottledRatio, uid(ls))), 0, 0)
			near(t, "host app cpu", r.last(metriccache.NamedKey(metriccache.HostAppCPUUsage, "nginx")), 0.3, 1e-6)
			near(t, "host app memory", r.last(metriccache.NamedKey(metriccache.HostAppMemoryUsage, "nginx")), 100*mi, 0)
			near(t, "system cpu", r.last(metriccache.NodeKey(metriccache.SystemCPUUsage)), 0.2, 0.02)
			near(t, "system memory", r.last(metriccache.NodeKey(metriccache.SystemMemoryUsage)), 500*mi, 0)
			near(t, "BE real limit", r.last(metriccache.NodeKey(metriccache.BECPURealLimit)), 2, 0) // cpuset 0-1 < quota 3
			near(t, "BE request", r.last(metriccache.NodeKey(metriccache.BECPURequest)), 2, 0)
			near(t, "BE usage", r.last(metriccache.NodeKey(metriccache.BECPUUsage)), 0.8, 1e-6)
			near(t, "node cpu pressure", r.last(metriccache.NamedKey(metriccache.NodePressure, "cpu/some")), 0.1, 1e-6)
			near(t, "node io full pressure", r.last(metriccache.NamedKey(metriccache.NodePressure, "io/full")), 0.05, 1e-6)
			podPSI := r.last(metriccache.PodNamedKey(metriccache.PodPressure, uid(ls), "memory/some"))
			if shape.Version == cgroup.V2 {
				near(t, "pod ls memory pressure", podPSI, 0.2, 1e-6)
			} else if !math.IsNaN(podPSI) {
				t.Errorf("pod pressure on cgroup v1 = %v, want none", podPSI)
			}
			if v, ok := r.cache.Info(metriccache.InfoNodeTopology); !ok || v.(*topology.Topology).NumCPUs() != 4 {
				t.Errorf("node topology = %v", v)
			}
			near(t, "node cpu gauge", testutil.ToFloat64(r.metrics.NodeCPUUsage), 3.05, 0.02)
			near(t, "pod cpu gauge", testutil.ToFloat64(r.metrics.PodCPUUsage.WithLabelValues("default", "ls")), 1.5, 1e-6)
			near(t, "pod cpu seconds", counterValue(t, r.metrics.PodCPUSeconds, map[string]string{"namespace": "default"}, "pod", "ls"), 5*1.5, 1e-6)
			near(t, "LS cpu gauge", testutil.ToFloat64(r.metrics.QoSCPUUsage.WithLabelValues("LS")), 1.5, 1e-6)
			near(t, "BE cpu gauge", testutil.ToFloat64(r.metrics.QoSCPUUsage.WithLabelValues("BE")), 0.8, 1e-6)
			near(t, "BE memory gauge", testutil.ToFloat64(r.metrics.QoSMemoryUsage.WithLabelValues("BE")), 512*mi, 0)
			// g has no QoS label: a Guaranteed pod is LSR.
			near(t, "LSR cpu gauge", testutil.ToFloat64(r.metrics.QoSCPUUsage.WithLabelValues("LSR")), 0.25, 1e-6)
			if n := testutil.CollectAndCount(r.metrics.QoSCPUUsage); n != 3 {
				t.Errorf("%d QoS cpu series, want 3 (LS, BE, LSR)", n)
			}
		})
	}
}

// TestOneBadPodDoesNotDropTheOthers corrupts one pod's cgroup files: the other pods are still measured, and the
// round reports the failure naming the pod.
func TestOneBadPodDoesNotDropTheOthers(t *testing.T) {
	r := newRig(t, hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs}, PodResourceName)
	good := tu.Pod("good").Container("c").Requests("cpu", "1").Obj()
	bad := tu.Pod("bad").Container("c").Requests("cpu", "1").Obj()
	r.addPod(t, good, hostsim.Usage{CPU: 1})
	r.addPod(t, bad, hostsim.Usage{CPU: 1})
	if err := r.cycles(t, 2); err != nil {
		t.Fatal(err)
	}
	if err := r.host.WriteFile("cgroup/memory/"+r.host.Layout().PodDir(bad)+"/memory.stat", "total_rss lots\n"); err != nil {
		t.Fatal(err)
	}
	err := r.cycles(t, 1)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 failed") || !strings.Contains(err.Error(), "default/bad") {
		t.Fatalf("want a round error naming default/bad, got %v", err)
	}
	near(t, "good pod cpu", r.last(metriccache.PodKey(metriccache.PodCPUUsage, "uid-good")), 1, 1e-6)
	if got := testutil.ToFloat64(r.metrics.CollectorRuns.WithLabelValues(PodResourceName, metrics.ResultError)); got != 1 {
		t.Errorf("error runs = %v, want 1", got)
	}
}

// TestSystemUsageNeverTakesInAPod: a running pod the pod collector cannot measure is not charged to the system.
// Never measured, it counts at its requests (an error names it after the grace period); measured once and then
// failing, its last known usage stands in.
func TestSystemUsageNeverTakesInAPod(t *testing.T) {
	r := newRig(t, hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs}, NodeResourceName, PodResourceName, HostApplicationName, SystemResourceName)
	r.host.SetSystemUsage(hostsim.Usage{CPU: 0.2, Memory: 500 * mi})
	r.addPod(t, tu.Pod("good").Container("c").Running("containerd://g").Obj(), hostsim.Usage{CPU: 1, Memory: 100 * mi})
	// late uses 0.5 CPU and 200 MiB, its request, but its memory.stat cannot be read from the start.
	late := tu.Pod("late").Phase(corev1.PodRunning).Container("c").Requests("cpu", "500m", "memory", "200Mi").Running("containerd://l").Obj()
	r.addPod(t, late, hostsim.Usage{CPU: 0.5, Memory: 200 * mi})
	memStat := "cgroup/memory/" + r.host.Layout().PodDir(late) + "/memory.stat"
	if err := r.host.WriteFile(memStat, "total_rss lots\n"); err != nil {
		t.Fatal(err)
	}
	if err := r.cycles(t, 4); err != nil && strings.Contains(err.Error(), "not measured for") {
		t.Errorf("a pod started a moment ago was reported: %v", err)
	}
	near(t, "system cpu, one pod never measured", r.last(metriccache.NodeKey(metriccache.SystemCPUUsage)), 0.2, 0.02)
	near(t, "system memory, one pod never measured", r.last(metriccache.NodeKey(metriccache.SystemMemoryUsage)), 500*mi, mi)
	err := r.cycles(t, int(unmeasuredGrace/time.Second))
	if err == nil || !strings.Contains(err.Error(), "not measured for 30s, counted at their requests (default/late)") {
		t.Errorf("want an error naming the pod unmeasured for the grace period, got %v", err)
	}
	near(t, "system cpu after the grace period", r.last(metriccache.NodeKey(metriccache.SystemCPUUsage)), 0.2, 0.02)

	// Readable again (the simulation rewrites its files), then failing: the last known usage stands in, here
	// twice its request.
	if err := r.host.SetPodUsage(late.UID, hostsim.Usage{CPU: 1, Memory: 400 * mi}); err != nil {
		t.Fatal(err)
	}
	if err := r.cycles(t, 3); err != nil {
		t.Fatal(err)
	}
	near(t, "system cpu, every pod measured", r.last(metriccache.NodeKey(metriccache.SystemCPUUsage)), 0.2, 0.02)
	if err := r.host.WriteFile(memStat, "total_rss lots\n"); err != nil {
		t.Fatal(err)
	}
	_ = r.cycles(t, 6) // the pod's reads fail: its samples age out of the 3-second window
	near(t, "system cpu, one pod failing", r.last(metriccache.NodeKey(metriccache.SystemCPUUsage)), 0.2, 0.02)
	near(t, "system memory, one pod failing", r.last(metriccache.NodeKey(metriccache.SystemMemoryUsage)), 500*mi, mi)
}

// blockingCollector writes one sample of pod uid once released, as a round that read the pod list before the pod
// ended would.
type blockingCollector struct {
	d                 Deps
	uid               string
	entered, released chan struct{}
}

func (b *blockingCollector) Collect(_ context.Context, round *Round) error {
	close(b.entered)
	<-b.released
	round.Append(metriccache.Sample{Key: metriccache.PodKey(metriccache.PodCPUUsage, b.uid), Value: 1})
	return nil
}

// TestPruneWaitsForRoundsInFlight: a pod that ends while a round that still knows it is running has no series
// left once both are done.
func TestPruneWaitsForRoundsInFlight(t *testing.T) {
	r := newRig(t, hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs})
	slow := &blockingCollector{uid: "uid-gone", entered: make(chan struct{}), released: make(chan struct{})}
	runner, err := NewRunner(Deps{States: r.store, Cache: r.cache, Metrics: r.metrics}, r.clock,
		[]Factory{{Name: "slow", Interval: time.Second, Default: true, New: func(d Deps) Collector { slow.d = d; return slow }}}, []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	round := make(chan error)
	go func() { round <- runner.CollectOnce(context.Background()) }()
	<-slow.entered
	pruned := make(chan struct{})
	go func() { runner.PruneEndedPods(); close(pruned) }() // the pod is not in the store: it has ended
	select {
	case <-pruned: // pruned while the round was in flight: its sample comes after
	case <-time.After(200 * time.Millisecond):
	}
	close(slow.released)
	if err := <-round; err != nil {
		t.Fatal(err)
	}
	<-pruned
	if keys := r.cache.Keys(func(k metriccache.Key) bool { return k.Pod == "uid-gone" }); len(keys) != 0 {
		t.Errorf("series of the ended pod after the prune: %v", keys)
	}
}

// TestRecreatedPodKeepsItsGauges: a pod recreated under the same name with a new UID (a StatefulSet's) keeps its
// gauges when its predecessor's are dropped.
func TestRecreatedPodKeepsItsGauges(t *testing.T) {
	r := newRig(t, hostsim.Config{Version: cgroup.V2, Driver: cgroup.Systemd}, PodResourceName)
	old := tu.Pod("web-0").UID("uid-old").Container("c").Obj()
	r.addPod(t, old, hostsim.Usage{CPU: 1})
	if err := r.cycles(t, 2); err != nil {
		t.Fatal(err)
	}
	r.store.DeletePod(old.UID)
	r.addPod(t, tu.Pod("web-0").UID("uid-new").Container("c").Obj(), hostsim.Usage{CPU: 0.5, Memory: 64 * mi})
	// The round that drops the old UID is the new pod's first: its memory gauge is set in it and must stay.
	if err := r.cycles(t, 1); err != nil {
		t.Fatal(err)
	}
	near(t, "web-0 memory gauge after the first round", testutil.ToFloat64(r.metrics.PodMemoryUsage.WithLabelValues("default", "web-0")), 64*mi, 0)
	if err := r.cycles(t, 1); err != nil {
		t.Fatal(err)
	}
	near(t, "web-0 cpu gauge", testutil.ToFloat64(r.metrics.PodCPUUsage.WithLabelValues("default", "web-0")), 0.5, 1e-6)
	// The counter is the new cgroup's: 2 s at 0.5 cores, down from the old pod's 2 s at 1 (a reset).
	near(t, "web-0 cpu seconds", counterValue(t, r.metrics.PodCPUSeconds, map[string]string{"namespace": "default"}, "pod", "web-0"), 1, 1e-6)
	if n, c := testutil.CollectAndCount(r.metrics.PodCPUUsage), testutil.CollectAndCount(r.metrics.PodCPUSeconds); n != 1 || c != 1 {
		t.Errorf("pod cpu gauges = %d, counters = %d, want 1 each", n, c)
	}
}

// TestKernelWithoutPSI: the psi collector steps aside on a kernel without /proc/pressure; the others carry on.
func TestKernelWithoutPSI(t *testing.T) {
	r := newRig(t, hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs, NoPSI: true}, PSIName, NodeResourceName)
	err := r.cycles(t, 3)
	if err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("want an unsupported error, got %v", err)
	}
	if got := testutil.ToFloat64(r.metrics.CollectorRuns.WithLabelValues(PSIName, metrics.ResultUnsupported)); got != 3 {
		t.Errorf("psi unsupported runs = %v, want 3", got)
	}
	if got := testutil.ToFloat64(r.metrics.CollectorRuns.WithLabelValues(NodeResourceName, metrics.ResultSuccess)); got != 3 {
		t.Errorf("noderesource successful runs = %v, want 3", got)
	}
}

// TestMissingHostAppCgroupIsReported: a host application whose cgroup does not exist is a configuration error.
func TestMissingHostAppCgroupIsReported(t *testing.T) {
	r := newRig(t, hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs}, HostApplicationName)
	r.store.SetNodeSLO(&slov1alpha1.NodeSLO{Spec: slov1alpha1.NodeSLOSpec{HostApplications: []slov1alpha1.HostApplicationSpec{{Name: "ghost"}}}})
	if err := r.cycles(t, 1); err == nil || !strings.Contains(err.Error(), "ghost") {
		t.Fatalf("want an error naming the application, got %v", err)
	}
}

func TestSelection(t *testing.T) {
	f := []Factory{{Name: "a", Default: true, Interval: time.Second}, {Name: "b", Default: false, Interval: time.Second}}
	tests := []struct {
		selection []string
		want      string
	}{
		{[]string{"*"}, "a"},
		{[]string{"*", "b"}, "a,b"},
		{[]string{"*", "-a"}, ""},
		{[]string{"b"}, "b"},
		{nil, ""},
	}
	for _, tt := range tests {
		var on []string
		for _, x := range f {
			if Enabled(tt.selection, x) {
				on = append(on, x.Name)
			}
		}
		if got := strings.Join(on, ","); got != tt.want {
			t.Errorf("Enabled(%q) = %q, want %q", tt.selection, got, tt.want)
		}
	}
	err := ValidateSelection(append(f, Factory{Name: "a"}), []string{"*", "-c"}, map[string]time.Duration{"d": time.Second, "a": 0})
	for _, w := range []string{`"a" is registered twice`, `--collectors: unknown name "c"`, `--collector-intervals: unknown name "d"`, "a must be positive"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("ValidateSelection error %v does not mention %q", err, w)
		}
	}
	if err := ValidateSelection(Registry(), []string{"*"}, nil); err != nil {
		t.Errorf("the registry is invalid: %v", err)
	}
}

// TestRunnerIntervals starts the runner on a fake clock: every collector runs at once, then each on its own
// interval.
func TestRunnerIntervals(t *testing.T) {
	r := newRig(t, hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs}, NodeResourceName, PageCacheName)
	r.start(t)
	runs := func(name string) float64 {
		return testutil.ToFloat64(r.metrics.CollectorRuns.WithLabelValues(name, metrics.ResultSuccess))
	}
	for i := range 10 {
		_ = r.host.Advance(time.Second)
		r.clock.Step(time.Second)
		// Wait for the 1s collector's round before the next step, so no tick is coalesced.
		want := float64(i + 2)
		for deadline := time.Now().Add(5 * time.Second); runs(NodeResourceName) < want && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if got := runs(NodeResourceName); got != 11 {
		t.Errorf("noderesource (1s) ran %v times in 10s, want 11", got)
	}
	if got := runs(PageCacheName); got != 3 {
		t.Errorf("pagecache (5s) ran %v times in 10s, want 3", got)
	}
}

// TestDerivedUsageComesFromOneRound runs every collector on the Runner's own schedule (Start, a fake clock) while
// the pods' usage jumps every second. The node's usage is always the pods' plus a constant system part, so the
// system usage derived in each round must be that constant: a system collector that subtracted the pods' samples of
// the round before (node(t) - pods(t-1)) would swing by the size of the jump.
func TestDerivedUsageComesFromOneRound(t *testing.T) {
	r := newRig(t, hostsim.Config{Version: cgroup.V2, Driver: cgroup.Systemd})
	system := hostsim.Usage{CPU: 0.3, Memory: 500 * mi}
	r.host.SetSystemUsage(system)
	pods := []*corev1.Pod{
		tu.Pod("a").Phase(corev1.PodRunning).Container("c").Running("containerd://a").Obj(),
		tu.Pod("b").Phase(corev1.PodRunning).Container("c").Running("containerd://b").Obj(),
	}
	low, high := hostsim.Usage{CPU: 0.1, Memory: 100 * mi}, hostsim.Usage{CPU: 0.7, Memory: 700 * mi}
	for _, p := range pods {
		r.addPod(t, p, low)
	}
	r.start(t)
	rounds := func() float64 {
		var n float64
		for _, res := range []string{metrics.ResultSuccess, metrics.ResultError, metrics.ResultUnsupported} {
			n += testutil.ToFloat64(r.metrics.CollectorRuns.WithLabelValues(SystemResourceName, res))
		}
		return n
	}
	// waitIdle waits until the runner has finished round n and waits on its timer (the sweep ticker is the other
	// waiter), so that changing the host and stepping the clock cannot fall into a round.
	waitIdle := func(n float64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); rounds() < n || r.clock.Waiters() < 2; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %v did not finish (rounds %v, clock waiters %d)", n, rounds(), r.clock.Waiters())
			}
		}
	}
	waitIdle(1)
	checked := 0
	for i := range 12 {
		u := low
		if i%2 == 0 {
			u = high
		}
		for _, p := range pods {
			if err := r.host.SetPodUsage(p.UID, u); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.host.Advance(time.Second); err != nil {
			t.Fatal(err)
		}
		r.clock.Step(time.Second)
		waitIdle(float64(i + 2))
		now := r.clock.Now()
		cpu, okCPU := r.cache.Query(metriccache.NodeKey(metriccache.SystemCPUUsage), now.Add(-time.Second), now)
		mem, okMem := r.cache.Query(metriccache.NodeKey(metriccache.SystemMemoryUsage), now.Add(-time.Second), now)
		if i == 0 {
			continue // the first rates need two rounds
		}
		if !okCPU || !okMem {
			t.Fatalf("second %d: no system usage in the round at %s", i+1, now)
		}
		near(t, fmt.Sprintf("second %d: system CPU (pods at %v cores each)", i+1, u.CPU), cpu.Value(metriccache.Last), system.CPU, 0.01)
		near(t, fmt.Sprintf("second %d: system memory (pods at %v MiB each)", i+1, u.Memory/mi), mem.Value(metriccache.Last), float64(system.Memory), mi)
		checked++
	}
	if checked < 10 {
		t.Errorf("checked %d rounds, want at least 10", checked)
	}
}

// TestRunnerRefusesSplitInputs: a derived collector must meet its inputs in every round it runs in.
func TestRunnerRefusesSplitInputs(t *testing.T) {
	tests := []struct {
		name      string
		selection []string
		intervals map[string]time.Duration
		want      string // "" for no error
	}{
		{name: "defaults", selection: []string{"*"}},
		{name: "derived less often, a multiple", selection: []string{"*"}, intervals: map[string]time.Duration{SystemResourceName: 5 * time.Second}},
		{name: "all slower together", selection: []string{"*"}, intervals: map[string]time.Duration{NodeResourceName: 2 * time.Second, PodResourceName: 2 * time.Second, HostApplicationName: 2 * time.Second, SystemResourceName: 2 * time.Second}},
		{
			name: "input slower", selection: []string{"*"}, intervals: map[string]time.Duration{PodResourceName: 2 * time.Second},
			want: "sysresource (1s) derives from podresource (2s): its interval must be a multiple of its input's",
		},
		{
			name: "not a multiple", selection: []string{"*"}, intervals: map[string]time.Duration{NodeResourceName: 2 * time.Second, SystemResourceName: 3 * time.Second},
			want: "sysresource (3s) derives from noderesource (2s)",
		},
		{name: "input off", selection: []string{"*", "-noderesource"}, want: "sysresource derives from noderesource: turn noderesource on, or sysresource off"},
		{name: "input and derived off", selection: []string{"*", "-noderesource", "-sysresource"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRunner(Deps{Metrics: metrics.New()}, clocktesting.NewFakeClock(time.Now()), Registry(), tt.selection, tt.intervals)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	late := []Factory{{Name: "derived", Interval: time.Second, Default: true, Inputs: []string{"input"}, New: NewSystemResource}, {Name: "input", Interval: time.Second, Default: true, New: NewNodeResource}}
	if _, err := NewRunner(Deps{Metrics: metrics.New()}, clocktesting.NewFakeClock(time.Now()), late, []string{"*"}, nil); err == nil || !strings.Contains(err.Error(), "derived derives from input, which is not registered before it") {
		t.Errorf("an input registered after its user: err = %v", err)
	}
}
