package pressureevict

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/qosmanagertest"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

const mi = 1 << 20

// pod is a pod on the node: its memory use (MiB), CPU use (cores), and its memory and CPU stall shares (0..1) over
// the last window; a negative stall leaves it without stall samples.
type pod struct {
	b                  *testutil.PodBuilder
	memMiB, cpu        float64
	memStall, cpuStall float64
}

func be(name string, priority int32, memMiB, cpu float64) pod {
	return pod{b: testutil.Pod(name).Priority(priority).Label(slov1alpha1.LabelQoSClass, string(slov1alpha1.QoSBE)), memMiB: memMiB, cpu: cpu, memStall: -1, cpuStall: -1}
}

func mid(name string, memMiB, cpu float64) pod {
	return pod{b: testutil.Pod(name).Priority(7500), memMiB: memMiB, cpu: cpu, memStall: -1, cpuStall: -1}
}

func svc(name string, memStall, cpuStall float64) pod {
	return pod{b: testutil.Pod(name).Priority(9500).Label(slov1alpha1.LabelQoSClass, string(slov1alpha1.QoSLS)).
		Container("main").Requests("memory", "1Gi").Running("containerd://" + name), memMiB: 200, memStall: memStall, cpuStall: cpuStall}
}

type env struct {
	*qosmanagertest.Node
	evictor *qosmanagertest.Evictor
	p       *Plugin
}

func newEnv(t *testing.T, v cgroup.Version) *env {
	t.Helper()
	n := qosmanagertest.NewNode(t, hostsim.Config{Version: v, Driver: cgroup.Cgroupfs})
	e := &env{Node: n, evictor: &qosmanagertest.Evictor{Reason: Reason}}
	d := n.Deps(DefaultInterval)
	d.Evictor = e.evictor
	p, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	e.p = p.(*Plugin)
	return e
}

// add puts the pods on the node, with their usage samples now and their stall samples over the 10 s before now.
func (e *env) add(pods ...pod) {
	now := e.Clock.Now()
	for _, p := range pods {
		o := p.b.Obj()
		e.AddPod(o, hostsim.Usage{Memory: uint64(p.memMiB * mi)})
		uid := string(o.UID)
		e.Cache.Append(now, metriccache.Sample{Key: metriccache.PodKey(metriccache.PodMemoryUsage, uid), Value: p.memMiB * mi},
			metriccache.Sample{Key: metriccache.PodKey(metriccache.PodCPUUsage, uid), Value: p.cpu})
		e.stall(o.UID, "memory/some", p.memStall, 10*time.Second)
		e.stall(o.UID, "cpu/some", p.cpuStall, 10*time.Second)
	}
}

// stall appends one sample a second of share over the span before now; a negative share appends none. An empty
// uid is the node's series.
func (e *env) stall(uid types.UID, name string, share float64, span time.Duration) {
	if share < 0 {
		return
	}
	key := metriccache.PodNamedKey(metriccache.PodPressure, string(uid), name)
	if uid == "" {
		key = metriccache.NamedKey(metriccache.NodePressure, name)
	}
	now := e.Clock.Now()
	for d := time.Duration(0); d <= span; d += time.Second {
		e.Cache.Append(now.Add(-d), metriccache.Sample{Key: key, Value: share})
	}
}

// on is the NodeSLO with memory (and, when cpu > 0, CPU) pressure eviction at the percents, window 10 s.
func on(memory, cpu int64) *slov1alpha1.NodeSLOSpec {
	s := &slov1alpha1.ResourceThresholdStrategy{Enable: ptr.To(true), PressureEvictWindowSeconds: ptr.To[int64](10)}
	if memory > 0 {
		s.MemoryEvictPressurePercent = ptr.To(memory)
	}
	if cpu > 0 {
		s.CPUEvictPressurePercent = ptr.To(cpu)
	}
	return (&slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: s}).WithDefaults()
}

func TestRun(t *testing.T) {
	usual := []pod{be("batch-a", 5500, 1500, 0.5), be("batch-b", 5500, 800, 1.5), be("free-a", 3500, 300, 0.2), be("free-b", 3500, 700, 0.1), mid("flink", 4000, 2)}
	withPriorityThreshold := on(20, 0)
	withPriorityThreshold.ResourceUsedThresholdWithBE.EvictEnabledPriorityThreshold = ptr.To[int64](3000)
	tests := []struct {
		name      string
		version   cgroup.Version
		spec      *slov1alpha1.NodeSLOSpec
		pods      []pod
		nodeStall float64 // the node's memory stall share; negative: no samples
		refuse    []string
		offline   bool
		wantAsked []string
		wantEvict []string
		wantKill  []string
		wantErr   string
	}{
		{
			name: "a service stalls on memory: one pod, the first in eviction order (free, the largest)", spec: on(20, 0),
			pods: append([]pod{svc("web", 0.3, 0)}, usual...), wantAsked: []string{"free-b"}, wantEvict: []string{"free-b"},
		},
		{
			name: "the stall is below the percent", spec: on(20, 0),
			pods: append([]pod{svc("web", 0.19, 0)}, usual...),
		},
		{
			name: "exactly at the percent counts", spec: on(20, 0),
			pods: append([]pod{svc("web", 0.2, 0)}, usual...), wantAsked: []string{"free-b"}, wantEvict: []string{"free-b"},
		},
		{
			name: "a best-effort pod's own stall is not a service's", spec: on(20, 0),
			pods: func() []pod {
				stalled := be("thrashing", 5500, 900, 0)
				stalled.memStall = 0.9
				return append([]pod{svc("web", 0.01, 0), stalled}, usual...)
			}(),
		},
		{
			name: "CPU stall evicts the largest CPU user of the lowest priority", spec: on(0, 20),
			pods: append([]pod{svc("web", 0, 0.5)}, usual...), wantAsked: []string{"free-a"}, wantEvict: []string{"free-a"},
		},
		{
			name: "CPU stall is not looked at when only memory is on", spec: on(20, 0),
			pods: append([]pod{svc("web", 0, 0.9)}, usual...),
		},
		{
			name: "a best-effort pod on its way out (whoever deleted it): wait", spec: on(20, 0),
			pods: func() []pod {
				leaving := be("leaving", 5500, 900, 0)
				leaving.b.Terminating()
				return append([]pod{svc("web", 0.5, 0), leaving}, usual...)
			}(),
		},
		{
			name: "a service on its way out does not hold the others back", spec: on(20, 0),
			pods: func() []pod {
				old := svc("web-old", 0.01, 0)
				old.b.Terminating()
				return append([]pod{svc("web", 0.5, 0), old}, usual...)
			}(),
			wantAsked: []string{"free-b"}, wantEvict: []string{"free-b"},
		},
		{
			name: "mid-tier pods go once no best-effort pod uses the resource", spec: on(20, 0),
			pods: []pod{svc("web", 0.5, 0), be("idle", 3500, 0, 0), mid("flink", 4000, 2)}, wantAsked: []string{"flink"}, wantEvict: []string{"flink"},
		},
		{
			name: "a refused pod (PodDisruptionBudget) is passed over for the next", spec: on(20, 0), refuse: []string{"free-b"},
			pods: append([]pod{svc("web", 0.3, 0)}, usual...), wantAsked: []string{"free-b", "free-a"}, wantEvict: []string{"free-a"},
		},
		{
			name: "evictEnabledPriorityThreshold keeps pods above it", spec: withPriorityThreshold,
			pods: []pod{svc("web", 0.3, 0), be("batch-a", 5500, 1500, 0), mid("flink", 4000, 2)},
		},
		{
			name: "API server unreachable under memory stall: the local last resort", spec: on(20, 0), offline: true,
			pods: append([]pod{svc("web", 0.3, 0)}, usual...), wantAsked: []string{"free-b"}, wantKill: []string{"free-b"},
		},
		{
			name: "API server unreachable under CPU stall: no local kill, every candidate tried", spec: on(0, 20), offline: true,
			pods:      []pod{svc("web", 0, 0.5), be("batch-a", 5500, 1500, 0.5)},
			wantAsked: []string{"batch-a"}, wantErr: "evicting pod default/batch-a for cpu stall",
		},
		{
			name: "cgroup v1: the node's memory stall", version: cgroup.V1, spec: on(20, 0), nodeStall: 0.25,
			pods: append([]pod{svc("web", -1, -1)}, usual...), wantAsked: []string{"free-b"}, wantEvict: []string{"free-b"},
		},
		{
			name: "cgroup v1: the node's memory stall below the percent", version: cgroup.V1, spec: on(20, 0), nodeStall: 0.1,
			pods: append([]pod{svc("web", -1, -1)}, usual...),
		},
		{
			name: "cgroup v1: CPU stall is not acted on", version: cgroup.V1, spec: on(0, 20), nodeStall: -1,
			pods: append([]pod{svc("web", -1, -1)}, usual...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.version
			if v == 0 {
				v = cgroup.V2
			}
			e := newEnv(t, v)
			e.evictor.Script(tt.refuse, nil)
			e.evictor.Offline = tt.offline
			e.add(tt.pods...)
			if tt.nodeStall >= 0 {
				e.stall("", "memory/some", tt.nodeStall, 10*time.Second)
				e.stall("", "cpu/some", 0.9, 10*time.Second)
			}
			err := e.p.Run(e.Ctx, tt.spec)
			qosmanagertest.ExpectErr(t, err, tt.wantErr)
			e.evictor.Expect(t, tt.wantAsked, tt.wantEvict)
			var killed []string
			for _, k := range e.evictor.Killed() {
				killed = append(killed, strings.Fields(k)[0])
			}
			if diff := cmp.Diff(tt.wantKill, killed); diff != "" {
				t.Errorf("killed locally (-want +got):\n%s", diff)
			}
		})
	}
}

// A service that stalls against its own memory limit is not helped by evicting batch work: its stall does not
// count. The same service with room under its limit does.
func TestOwnLimit(t *testing.T) {
	for _, tt := range []struct {
		name      string
		limit     string
		wantEvict []string
	}{
		{name: "at its own limit", limit: "220200960", wantEvict: nil}, // 210 MiB; the pod holds 200 MiB
		{name: "far under its own limit", limit: "1073741824", wantEvict: []string{"batch"}},
		{name: "no limit", limit: "max", wantEvict: []string{"batch"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, cgroup.V2)
			web := svc("web", 0.4, 0)
			e.add(web, be("batch", 5500, 500, 1))
			dir := e.Host.Layout().PodDir(web.b.Obj())
			if err := e.Host.WriteFile("cgroup/"+dir+"/memory.max", tt.limit); err != nil {
				t.Fatal(err)
			}
			e.Run(e.p, on(20, 0))
			e.evictor.Expect(t, tt.wantEvict, tt.wantEvict)
		})
	}
}

// A service throttled by its own CFS quota stalls on CPU however idle the node is: the periods in which it hit its
// quota are taken out of its stall, and only what is left is judged (a log shipper at its limit must not cost
// batch pods). The same stall without throttling, or with little, is judged whole.
func TestOwnQuota(t *testing.T) {
	for _, tt := range []struct {
		name      string
		throttled float64 // the share of periods the service hit its quota in, per second; negative: no samples
		wantEvict []string
	}{
		{name: "throttled in most periods", throttled: 0.5, wantEvict: nil}, // 60% stall - 50% = 10%, under 20%
		{name: "throttled in a few periods", throttled: 0.1, wantEvict: []string{"batch"}},
		{name: "never throttled", throttled: 0, wantEvict: []string{"batch"}},
		{name: "no throttling samples", throttled: -1, wantEvict: []string{"batch"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, cgroup.V2)
			web := svc("web", 0, 0.6)
			e.add(web, be("batch", 5500, 500, 1))
			if tt.throttled >= 0 {
				now := e.Clock.Now()
				for i := range 10 {
					e.Cache.Append(now.Add(-time.Duration(i)*time.Second),
						metriccache.Sample{Key: metriccache.PodKey(metriccache.PodCPUThrottledRatio, string(web.b.Obj().UID)), Value: tt.throttled})
				}
			}
			e.Run(e.p, on(0, 20))
			e.evictor.Expect(t, tt.wantEvict, tt.wantEvict)
		})
	}
}

// One pod at a time: nothing more is judged while the evicted pod is on its way out, nor until a whole window of
// stall was measured after it was gone; then, if the service still stalls, the next pod goes.
func TestOneAtATime(t *testing.T) {
	e := newEnv(t, cgroup.V2)
	web := svc("web", 0.5, 0)
	e.add(web, be("first", 3500, 900, 0), be("second", 3500, 400, 0))
	spec := on(20, 0)
	e.Run(e.p, spec)
	e.evictor.Expect(t, []string{"first"}, []string{"first"})

	step := func(d time.Duration, stall float64) {
		e.Clock.Step(d)
		uid := web.b.Obj().UID
		e.stall(uid, "memory/some", stall, d)
		for _, p := range e.Store.GetAllPods() {
			e.Cache.Append(e.Clock.Now(), metriccache.Sample{Key: metriccache.PodKey(metriccache.PodMemoryUsage, string(p.Pod.UID)), Value: 400 * mi})
		}
	}
	step(5*time.Second, 0.5)
	e.Run(e.p, spec) // "first" is still on the node, on its way out
	e.Store.DeletePod(testutil.Pod("first").Obj().UID)
	step(time.Second, 0.5)
	e.Run(e.p, spec) // gone, but the window still holds the stall from before
	step(8*time.Second, 0.5)
	e.Run(e.p, spec)
	e.evictor.Expect(t, []string{"first"}, []string{"first"})

	step(time.Second, 0.5) // a whole window (10 s) after the last run that saw "first"
	e.Run(e.p, spec)
	e.evictor.Expect(t, []string{"first", "second"}, []string{"first", "second"})
}

func TestOff(t *testing.T) {
	e := newEnv(t, cgroup.V2)
	e.add(svc("web", 0.9, 0.9), be("batch", 5500, 500, 1))
	for name, spec := range map[string]*slov1alpha1.NodeSLOSpec{
		"strategy disabled": func() *slov1alpha1.NodeSLOSpec {
			s := on(20, 20)
			s.ResourceUsedThresholdWithBE.Enable = ptr.To(false)
			return s
		}(),
		"no pressure percent": on(0, 0),
		"no NodeSLO strategy": (&slov1alpha1.NodeSLOSpec{}).WithDefaults(),
	} {
		e.Run(e.p, spec)
		if got := e.evictor.Asked(); len(got) > 0 {
			t.Errorf("%s: asked to evict %v", name, got)
		}
	}
}

// A window the samples do not cover yet (an agent that just started) is not judged.
func TestShortHistory(t *testing.T) {
	e := newEnv(t, cgroup.V2)
	web := svc("web", -1, -1)
	e.add(web, be("batch", 5500, 500, 1))
	e.stall(web.b.Obj().UID, "memory/some", 0.9, 6*time.Second) // 7 of the window's 10 one-second buckets: 0.7
	e.Run(e.p, on(20, 0))
	e.evictor.Expect(t, nil, nil)
	e.stall(web.b.Obj().UID, "memory/some", 0.9, 9*time.Second)
	e.Run(e.p, on(20, 0))
	e.evictor.Expect(t, []string{"batch"}, []string{"batch"})
}

func TestValidate(t *testing.T) {
	n := qosmanagertest.NewNode(t, hostsim.Config{Version: cgroup.V2, Driver: cgroup.Cgroupfs})
	d := n.Deps(DefaultInterval)
	d.Evictor = &qosmanagertest.Evictor{}
	p, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	v := p.(qosmanager.ValidatingPlugin)
	with := func(f func(s *slov1alpha1.ResourceThresholdStrategy)) *slov1alpha1.NodeSLOSpec {
		spec := on(20, 20)
		f(spec.ResourceUsedThresholdWithBE)
		return spec
	}
	tests := []struct {
		name string
		spec *slov1alpha1.NodeSLOSpec
		want []string
	}{
		{name: "both on", spec: on(20, 20)},
		{name: "off with any values", spec: with(func(s *slov1alpha1.ResourceThresholdStrategy) {
			s.Enable, s.MemoryEvictPressurePercent, s.PressureEvictWindowSeconds = ptr.To(false), ptr.To[int64](0), ptr.To[int64](-1)
		})},
		{name: "percents out of range", spec: with(func(s *slov1alpha1.ResourceThresholdStrategy) {
			s.MemoryEvictPressurePercent, s.CPUEvictPressurePercent = ptr.To[int64](0), ptr.To[int64](101)
		}), want: []string{"resourceUsedThresholdWithBE.memoryEvictPressurePercent is 0, outside [1, 100]", "resourceUsedThresholdWithBE.cpuEvictPressurePercent is 101, outside [1, 100]"}},
		{name: "window unset", spec: with(func(s *slov1alpha1.ResourceThresholdStrategy) { s.PressureEvictWindowSeconds = nil }),
			want: []string{"resourceUsedThresholdWithBE.pressureEvictWindowSeconds is unset"}},
		{name: "window above the bound", spec: with(func(s *slov1alpha1.ResourceThresholdStrategy) { s.PressureEvictWindowSeconds = ptr.To[int64](301) }),
			want: []string{"resourceUsedThresholdWithBE.pressureEvictWindowSeconds is 301, outside [1, 300]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qosmanagertest.ExpectValidation(t, v.Validate(tt.spec), true, tt.want...)
		})
	}

	// A cache whose per-second pod ring is shorter than the window would answer with 30-second averages.
	short := metriccache.DefaultConfig()
	short.PodSlots = 60
	c, err := metriccache.New(short, n.Clock)
	if err != nil {
		t.Fatal(err)
	}
	d.Cache = c
	p, err = New(d)
	if err != nil {
		t.Fatal(err)
	}
	spec := on(20, 0)
	spec.ResourceUsedThresholdWithBE.PressureEvictWindowSeconds = ptr.To[int64](120)
	qosmanagertest.ExpectValidation(t, p.(qosmanager.ValidatingPlugin).Validate(spec), true,
		"resourceUsedThresholdWithBE.pressureEvictWindowSeconds is 120, longer than the 60 s of per-second pod samples the metric cache keeps")
}
