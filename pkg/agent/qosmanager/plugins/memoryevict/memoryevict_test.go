package memoryevict

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
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

// The node of every test: 10240 MiB. Threshold 70 % = 7168 MiB, lower 60 % = 6144 MiB.
const totalMiB = 10240

// pod is a pod on the node with its memory use in MiB; usage < 0 leaves it without a sample.
type pod struct {
	b        *testutil.PodBuilder
	usageMiB float64
}

func be(name string, priority int32, usageMiB float64) pod {
	return pod{testutil.Pod(name).Priority(priority).Label(slov1alpha1.LabelQoSClass, string(slov1alpha1.QoSBE)), usageMiB}
}

func mid(name string, priority int32, usageMiB float64) pod {
	return pod{testutil.Pod(name).Priority(priority), usageMiB}
}

func svc(name string, usageMiB float64) pod {
	return pod{testutil.Pod(name).Priority(9500).Label(slov1alpha1.LabelQoSClass, string(slov1alpha1.QoSLS)), usageMiB}
}

// env is one node (qosmanagertest.Node; the plugin reads its /proc/meminfo, which setUsed writes) and the
// recording evictor.
type env struct {
	*qosmanagertest.Node
	procDir string
	evictor *qosmanagertest.Evictor
	deps    qosmanager.Deps
}

func newEnv(t *testing.T) *env {
	t.Helper()
	n := qosmanagertest.NewNode(t, hostsim.Config{Version: cgroup.V2, Driver: cgroup.Cgroupfs})
	e := &env{Node: n, procDir: n.Host.ProcRoot(), evictor: &qosmanagertest.Evictor{Reason: Reason}}
	e.setUsed(t, 0)
	e.deps = n.Deps(DefaultInterval)
	e.deps.Evictor = e.evictor
	return e
}

// setUsed writes /proc/meminfo with the node's use in MiB: MemAvailable = MemTotal - used.
func (e *env) setUsed(t *testing.T, usedMiB int64) {
	t.Helper()
	kb := func(m int64) int64 { return m * 1024 }
	meminfo := fmt.Sprintf("MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\nBuffers:           0 kB\nCached:            0 kB\n",
		kb(totalMiB), kb(totalMiB-usedMiB), kb(totalMiB-usedMiB))
	if err := os.WriteFile(filepath.Join(e.procDir, "meminfo"), []byte(meminfo), 0o644); err != nil {
		t.Fatal(err)
	}
}

// add puts pods in the store and their memory samples, taken sampleAge ago, in the cache.
func (e *env) add(sampleAge time.Duration, pods ...pod) {
	for _, p := range pods {
		o := p.b.Obj()
		e.Store.SetPod(o)
		if p.usageMiB >= 0 {
			e.Cache.Append(e.Clock.Now().Add(-sampleAge), metriccache.Sample{Key: metriccache.PodKey(metriccache.PodMemoryUsage, string(o.UID)), Value: p.usageMiB * mi})
		}
	}
}

func enabled(threshold, lower int64) *slov1alpha1.NodeSLOSpec {
	return (&slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
		Enable: ptr.To(true), MemoryEvictThresholdPercent: ptr.To(threshold), MemoryEvictLowerPercent: ptr.To(lower),
	}}).WithDefaults()
}

func TestRun(t *testing.T) {
	// A node of 10240 MiB with the spec 70/60: eviction starts above 7168 MiB and stops under 6144 MiB.
	spec := enabled(70, 60)
	// The usual best-effort pods: two free (3500), two batch (5500), and a service that uses more than any of them.
	usual := []pod{be("batch-a", 5500, 1500), be("batch-b", 5500, 800), be("free-a", 3500, 300), be("free-b", 3500, 700), svc("web", 3000)}
	terminating := func(p pod) pod { p.b.Terminating(); return p }
	tests := []struct {
		name      string
		spec      *slov1alpha1.NodeSLOSpec
		usedMiB   int64
		pods      []pod
		sampleAge time.Duration
		refuse    []string
		fail      []string
		wantAsked []string
		wantEvict []string
		wantErr   string
	}{
		{
			name: "lowest priority first, then largest, until under the lower percent", spec: spec, usedMiB: 8192, pods: usual,
			// 8192 > 7168. Free first, larger first: 8192-700 = 7492, -300 = 7192, then batch: -1500 = 5692 < 6144, stop.
			wantEvict: []string{"free-b", "free-a", "batch-a"},
		},
		{
			name: "just above the threshold, one pod is enough", spec: spec, usedMiB: 7169, pods: usual,
			// 7169 > 7168; 7169-700 = 6469 >= 6144; -300 = 6169 >= 6144; -1500 = 4669: the lower bound, not the
			// threshold, decides where it stops.
			wantEvict: []string{"free-b", "free-a", "batch-a"},
		},
		{
			name: "at the threshold: nothing", spec: spec, usedMiB: 7168, pods: usual,
		},
		{
			name: "a projection equal to the lower percent is not under it", spec: spec, usedMiB: 7344,
			pods: []pod{be("free-x", 3500, 1100), be("free-y", 3500, 100), be("batch", 5500, 500)},
			// 7344 > 7168; 7344-1100 = 6244, -100 = 6144 (not under 6144), -500 = 5644.
			wantEvict: []string{"free-x", "free-y", "batch"},
		},
		{
			name: "one MiB less and the batch pod stays", spec: spec, usedMiB: 7343,
			pods: []pod{be("free-x", 3500, 1100), be("free-y", 3500, 100), be("batch", 5500, 500)},
			// 7343 > 7168; 7343-1100 = 6243, -100 = 6143 < 6144: stop.
			wantEvict: []string{"free-x", "free-y"},
		},
		{
			name: "other percents", spec: enabled(60, 59), usedMiB: 6845, pods: usual,
			// threshold 60 % = 6144, lower 59 % = 6041.6; 6845-700 = 6145 >= 6041.6, -300 = 5845 < 6041.6: stop.
			wantEvict: []string{"free-b", "free-a"},
		},
		{
			name: "disabled: nothing, however high", spec: (&slov1alpha1.NodeSLOSpec{}).WithDefaults(), usedMiB: 10000, pods: usual,
		},
		{
			name: "never a service", spec: spec, usedMiB: 10000,
			// A service and a BestEffort-QoS pod of prod priority without a label: neither best-effort nor mid.
			pods: []pod{svc("web", 3000), {testutil.Pod("prod").Priority(9000), 2000}},
		},
		{
			name: "the mid tier goes after every best-effort pod", spec: spec, usedMiB: 9900,
			pods: append([]pod{mid("mid-big", 7000, 2000), mid("mid-small", 7500, 300)}, usual...),
			// 9900-700-300-1500-800 = 6600 >= 6144 after every best-effort pod; then the mid tier, lowest priority
			// first whatever its use: -2000 (mid-big, 7000) = 4600 < 6144. mid-small stays.
			wantEvict: []string{"free-b", "free-a", "batch-a", "batch-b", "mid-big"},
		},
		{
			name: "evictEnabledPriorityThreshold keeps the mid tier, and pods above it, out", usedMiB: 9900,
			spec: func() *slov1alpha1.NodeSLOSpec {
				s := enabled(70, 60)
				s.ResourceUsedThresholdWithBE.EvictEnabledPriorityThreshold = ptr.To[int64](5000)
				return s
			}(),
			pods: append([]pod{mid("mid-big", 7000, 2000)}, usual...),
			// Only the free pods (3500) are at most 5000: 9900-700-300 = 8900, still above; nothing else may go.
			wantEvict: []string{"free-b", "free-a"},
		},
		{
			name: "an eviction priority orders a pod within its tier", spec: spec, usedMiB: 7500,
			pods: []pod{
				be("free-a", 3500, 300), {be("batch-a", 5500, 1500).b.Annotation(slov1alpha1.AnnotationEvictionPriorityAlias, "-1"), 1500},
				svc("web", 3000),
			},
			// batch-a asks to go first (Koordinator's annotation): 7500-1500 = 6000 < 6144, and free-a stays.
			wantEvict: []string{"batch-a"},
		},
		{
			name: "the mid tier stays when the best-effort pods are enough", spec: spec, usedMiB: 8192,
			pods:      append([]pod{mid("mid-big", 7000, 5000)}, usual...),
			wantEvict: []string{"free-b", "free-a", "batch-a"},
		},
		{
			name: "a best-effort pod under a budget stays; the mid tier goes in its place", spec: spec, usedMiB: 8192,
			pods: []pod{be("batch-a", 5500, 1500), mid("mid-a", 7000, 2500), svc("web", 3000)}, refuse: []string{"batch-a"},
			// batch-a refused (PDB): 8192, -2500 (mid-a) = 5692 < 6144.
			wantAsked: []string{"batch-a", "mid-a"},
			wantEvict: []string{"mid-a"},
		},
		{
			name: "the mid tier waits while a best-effort pod's memory is unknown", spec: spec, usedMiB: 9900,
			pods: []pod{be("new", 5500, -1), be("batch-a", 5500, 1500), mid("mid-a", 7000, 2500), svc("web", 3000)},
			// new may hold what evicting mid-a would free: only batch-a goes this run.
			wantEvict: []string{"batch-a"},
		},
		{
			name: "pods terminating already count as gone", spec: spec, usedMiB: 8192,
			pods: []pod{be("batch-a", 5500, 1500), be("batch-b", 5500, 800), be("free-a", 3500, 300), terminating(be("free-b", 3500, 700)), svc("web", 3000)},
			// free-b is on its way out: 8192-700 = 7492 before anything is asked; -300 (free-a) = 7192; -1500
			// (batch-a) = 5692 < 6144. free-b is not asked again.
			wantEvict: []string{"free-a", "batch-a"},
		},
		{
			name: "pods terminating already are enough", spec: spec, usedMiB: 7200,
			pods: []pod{terminating(be("batch-a", 5500, 1500)), be("free-a", 3500, 300), svc("web", 3000)},
			// 7200 > 7168, but 7200-1500 = 5700 < 6144 already.
		},
		{
			name: "a pod not evicted now (PDB, rate limit) does not count; the next one goes", spec: spec, usedMiB: 8192, pods: usual,
			refuse: []string{"free-b"},
			// free-b stays: 8192, -300 (free-a) = 7892, -1500 (batch-a) = 6392, -800 (batch-b) = 5592 < 6144.
			wantAsked: []string{"free-b", "free-a", "batch-a", "batch-b"},
			wantEvict: []string{"free-a", "batch-a", "batch-b"},
		},
		{
			name: "an error is reported and the next pod is tried", spec: spec, usedMiB: 8192, pods: usual,
			fail:      []string{"free-b"},
			wantAsked: []string{"free-b", "free-a", "batch-a", "batch-b"},
			wantEvict: []string{"free-a", "batch-a", "batch-b"},
			wantErr:   "evicting pod default/free-b for memory: the server is currently unable",
		},
		{
			name: "not enough best-effort memory, no mid tier: every best-effort pod goes, nothing else", spec: spec, usedMiB: 9900, pods: usual,
			// 9900-700-300-1500-800 = 6600 >= 6144: all four asked, the service not.
			wantEvict: []string{"free-b", "free-a", "batch-a", "batch-b"},
		},
		{
			name: "pods without a fresh sample are not considered", spec: spec, usedMiB: 8192, sampleAge: 6 * time.Second, pods: usual,
			// Samples 6 s old (older than 5 s): no pod's use is known, so none can be shown to help.
		},
		{
			name: "pods without a sample or using nothing are skipped", spec: spec, usedMiB: 7500,
			pods: []pod{be("new", 3000, -1), be("idle", 3000, 0), be("batch-a", 5500, 1500), svc("web", 3000)},
			// new (no sample) and idle (0) are lower in priority, but only batch-a frees memory: 7500-1500 = 6000.
			wantEvict: []string{"batch-a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.setUsed(t, tt.usedMiB)
			e.add(tt.sampleAge, tt.pods...)
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

// TestRunMessage: the message (the pod's event) gives every number the decision used.
func TestRunMessage(t *testing.T) {
	e := newEnv(t)
	e.setUsed(t, 8192)
	e.add(0, be("free-b", 3500, 700), be("batch-a", 5500, 2500))
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background(), enabled(70, 60)); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"node memory use 8192Mi is above 70% of 10240Mi (7168Mi); evicting best-effort pods, then mid-tier pods, until the projected use is under 60% (6144Mi): projected 8192Mi, this pod uses 700Mi, projected after it 7492Mi",
		"node memory use 8192Mi is above 70% of 10240Mi (7168Mi); evicting best-effort pods, then mid-tier pods, until the projected use is under 60% (6144Mi): projected 7492Mi, this pod uses 2500Mi, projected after it 4992Mi",
	}
	if diff := cmp.Diff(want, e.evictor.Messages()); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

// TestRunCountsItsOwnRequests: a pod whose eviction was accepted but that is still there (the deletion has not
// reached the informer, or the pod terminates slowly) counts as gone for 30 s; no other pod is evicted in its place.
// After 30 s it counts again.
func TestRunCountsItsOwnRequests(t *testing.T) {
	e := newEnv(t)
	e.setUsed(t, 7500)
	e.add(0, be("free-a", 3500, 1000), be("batch-a", 5500, 1000), svc("web", 3000))
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	spec := enabled(70, 60)
	run := func(after time.Duration, want []string) {
		t.Helper()
		e.Clock.Step(after)
		// Fresh samples, as the pod collector writes every second; the node's use does not move.
		e.add(0, be("free-a", 3500, 1000), be("batch-a", 5500, 1000))
		if err := p.Run(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, e.evictor.Asked()); diff != "" {
			t.Errorf("after %s: pods asked for (-want +got):\n%s", after, diff)
		}
	}
	// 7500 > 7168; 7500-1000 (free-a) = 6500 >= 6144; -1000 (batch-a) = 5500: both go.
	run(0, []string{"free-a", "batch-a"})
	// Half a second later both are still there and the use has not dropped: 7500-2000 = 5500 < 6144, nothing.
	run(500*time.Millisecond, []string{"free-a", "batch-a"})
	run(29*time.Second, []string{"free-a", "batch-a"})
	// 30 s after the request they count again and are asked again (the Evictor dedupes or retries).
	run(500*time.Millisecond, []string{"free-a", "batch-a", "free-a", "batch-a"})
}

func TestRunMeminfoError(t *testing.T) {
	e := newEnv(t)
	e.add(0, be("free-a", 3500, 1000))
	if err := os.WriteFile(filepath.Join(e.procDir, "meminfo"), []byte("MemFree: 1 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Run(context.Background(), enabled(70, 60))
	qosmanagertest.ExpectErr(t, err, "reading the node's memory use: reading "+e.procDir+"/meminfo: MemTotal or MemAvailable missing")
	if len(e.evictor.Asked()) != 0 {
		t.Errorf("evicted %v without knowing the node's memory use", e.evictor.Asked())
	}
}

func TestNewMissingDeps(t *testing.T) {
	_, err := New(qosmanager.Deps{Clock: clocktesting.NewFakeClock(time.Now())})
	qosmanagertest.ExpectErr(t, err, "building the memoryevict plugin: missing States, Cache, Proc, Evictor, Pressure")
}

func TestValidate(t *testing.T) {
	strategy := func(s slov1alpha1.ResourceThresholdStrategy) *slov1alpha1.NodeSLOSpec {
		return (&slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &s}).WithDefaults()
	}
	on := ptr.To(true)
	tests := []struct {
		name string
		spec *slov1alpha1.NodeSLOSpec
		want []string // substrings of the error; none for a valid spec
	}{
		{name: "defaults (off)", spec: strategy(slov1alpha1.ResourceThresholdStrategy{})},
		{name: "on with the defaults 70, lower 68", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on})},
		{name: "lower equal to the threshold", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on, MemoryEvictThresholdPercent: ptr.To[int64](80), MemoryEvictLowerPercent: ptr.To[int64](80)})},
		{name: "off: anything goes, so that switching off always works", spec: strategy(slov1alpha1.ResourceThresholdStrategy{MemoryEvictThresholdPercent: ptr.To[int64](0), MemoryEvictLowerPercent: ptr.To[int64](101)})},
		{
			name: "threshold 0", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on, MemoryEvictThresholdPercent: ptr.To[int64](0), MemoryEvictLowerPercent: ptr.To[int64](0)}),
			want: []string{"resourceUsedThresholdWithBE.memoryEvictThresholdPercent is 0, outside [1, 100]", "resourceUsedThresholdWithBE.memoryEvictLowerPercent is 0, outside [1, 100]"},
		},
		{
			name: "above 100", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on, MemoryEvictThresholdPercent: ptr.To[int64](101)}),
			// lower defaults to 101-2 = 99: in range but... not above 101, so only the threshold is wrong.
			want: []string{"resourceUsedThresholdWithBE.memoryEvictThresholdPercent is 101, outside [1, 100]"},
		},
		{
			name: "lower above the threshold", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on, MemoryEvictThresholdPercent: ptr.To[int64](60), MemoryEvictLowerPercent: ptr.To[int64](65)}),
			want: []string{"resourceUsedThresholdWithBE.memoryEvictLowerPercent (65) is above resourceUsedThresholdWithBE.memoryEvictThresholdPercent (60)"},
		},
		{name: "no hold", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on, MemoryEvictHoldSeconds: ptr.To[int64](0)})},
		{
			name: "a hold beyond an hour", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on, MemoryEvictHoldSeconds: ptr.To[int64](3601)}),
			want: []string{"resourceUsedThresholdWithBE.memoryEvictHoldSeconds is 3601, outside [0, 3600]"},
		},
	}
	p := &Plugin{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Validate(tt.spec)
			qosmanagertest.ExpectValidation(t, err, true, tt.want...)
		})
	}
}

// TestManagerKeepsTheLastGoodThresholds: through the Manager, a NodeSLO with a threshold of 0 is refused and the
// plugin keeps evicting by the last one it accepted (70/60), not by 0 (which would evict every best-effort pod).
func TestManagerKeepsTheLastGoodThresholds(t *testing.T) {
	e := newEnv(t)
	e.setUsed(t, 8192)
	e.add(0, be("free-a", 3500, 1500), be("batch-a", 5500, 500), be("batch-b", 5500, 400))
	m, err := qosmanager.NewManager(e.deps, e.Clock, []qosmanager.Factory{{Name: Name, Interval: DefaultInterval, Default: true, New: New}}, []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	nodeSLO := func(threshold, lower int64) *slov1alpha1.NodeSLO {
		return &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
			Enable: ptr.To(true), MemoryEvictThresholdPercent: ptr.To(threshold), MemoryEvictLowerPercent: ptr.To(lower),
		}}}
	}
	e.Store.SetNodeSLO(nodeSLO(70, 60))
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	// 8192-1500 = 6692 >= 6144; -500 = 6192 >= 6144; -400 = 5792.
	if diff := cmp.Diff([]string{"free-a", "batch-a", "batch-b"}, e.evictor.Evicted()); diff != "" {
		t.Fatalf("evicted (-want +got):\n%s", diff)
	}

	// The evicted pods are gone, the use dropped to 7000 and a new batch pod arrived; the NodeSLO now says 0/0.
	for _, n := range []string{"free-a", "batch-a", "batch-b"} {
		e.Store.DeletePod(testutil.Pod(n).Obj().UID)
	}
	e.evictor.Reset()
	e.setUsed(t, 7000)
	e.add(0, be("batch-c", 5500, 200))
	e.Store.SetNodeSLO(nodeSLO(0, 0))
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(e.evictor.Evicted()) != 0 {
		t.Fatalf("evicted %v at 7000 MiB: the refused threshold 0 was enforced", e.evictor.Evicted())
	}
	e.setUsed(t, 7300)
	if err := m.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	// 7300 > 7168 under the kept 70 %: 7300-200 = 7100, and nothing else to evict.
	if diff := cmp.Diff([]string{"batch-c"}, e.evictor.Evicted()); diff != "" {
		t.Errorf("evicted under the last good thresholds (-want +got):\n%s", diff)
	}
}

// TestRunKillsLocallyWhenTheAPIServerIsGone: with no API server, memory above the threshold is relieved by killing
// best-effort pods' processes in their cgroups, in the same order and up to the same bound as evictions.
func TestRunKillsLocallyWhenTheAPIServerIsGone(t *testing.T) {
	e := newEnv(t)
	e.deps.Layout = cgroup.Layout{Driver: cgroup.Cgroupfs}
	e.evictor.Offline = true
	e.setUsed(t, 8192)
	e.add(0, be("free-a", 3500, 1500), be("batch-a", 5500, 1000), svc("web", 3000))
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background(), enabled(70, 60)); err != nil {
		t.Fatal(err)
	}
	// 8192 > 7168; 8192-1500 (free-a) = 6692 >= 6144; -1000 (batch-a) = 5692 < 6144: both killed, web untouched.
	uid := func(name string) string { return string(e.Store.GetAllPods()[indexOf(e, name)].Pod.UID) }
	want := []string{"free-a in kubepods/besteffort/pod" + uid("free-a"), "batch-a in kubepods/besteffort/pod" + uid("batch-a")}
	if diff := cmp.Diff(want, e.evictor.Killed()); diff != "" {
		t.Errorf("pods killed (-want +got):\n%s", diff)
	}
	if len(e.evictor.Evicted()) != 0 {
		t.Errorf("evicted %v with the API server gone", e.evictor.Evicted())
	}
	for _, m := range e.evictor.Messages() {
		if !strings.Contains(m, "the API server cannot be reached") {
			t.Errorf("kill message %q does not say why it is local", m)
		}
	}
}

func indexOf(e *env, name string) int {
	for i, m := range e.Store.GetAllPods() {
		if m.Pod.Name == name {
			return i
		}
	}
	return -1
}
