package allocatableevict

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/qosmanagertest"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

const (
	batchCPU = string(slov1alpha1.BatchCPU)
	batchMem = string(slov1alpha1.BatchMemory)
	midCPU   = string(slov1alpha1.MidCPU)
	midMem   = string(slov1alpha1.MidMemory)
)

// The node of most tests offers batch-cpu 10000 (millicores) and batch-memory 10240Mi, mid-cpu 4000 and mid-memory
// 4096Mi. With the percents 80/60: batch-cpu eviction starts above 8000 and stops at or below 6000; batch-memory
// above 8192Mi, down to 6144Mi; mid-cpu above 3200, down to 2400.
func node(pairs ...string) *corev1.Node {
	if pairs == nil {
		pairs = []string{batchCPU, "10000", batchMem, "10240Mi", midCPU, "4000", midMem, "4096Mi"}
	}
	return testutil.Node("node-1").Allocatable(append([]string{"cpu", "16", "memory", "64Gi"}, pairs...)...).Obj()
}

// be is a best-effort pod (QoS BE) of the given priority requesting pairs (name, quantity).
func be(name string, priority int32, pairs ...string) *testutil.PodBuilder {
	return testutil.Pod(name).Priority(priority).Label(slov1alpha1.LabelQoSClass, string(slov1alpha1.QoSBE)).Container("c").Requests(pairs...)
}

// mid is a mid-tier pod.
func mid(name string, priority int32, pairs ...string) *testutil.PodBuilder {
	return testutil.Pod(name).Priority(priority).Container("c").Requests(pairs...)
}

// svc is a service.
func svc(name string, pairs ...string) *testutil.PodBuilder {
	return testutil.Pod(name).Priority(9500).Label(slov1alpha1.LabelQoSClass, string(slov1alpha1.QoSLS)).Container("c").Requests(pairs...)
}

// knobs are the allocatable eviction percents of a spec; 0 leaves a percent unset.
type knobs struct {
	cpu, cpuLower, mem, memLower int64
	priority                     *int64
	off                          bool
}

func (k knobs) spec() *slov1alpha1.NodeSLOSpec {
	set := func(v int64) *int64 {
		if v == 0 {
			return nil
		}
		return ptr.To(v)
	}
	return (&slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
		Enable:                              ptr.To(!k.off),
		CPUAllocatableEvictThresholdPercent: set(k.cpu), CPUAllocatableEvictLowerPercent: set(k.cpuLower),
		MemoryAllocatableEvictThresholdPercent: set(k.mem), MemoryAllocatableEvictLowerPercent: set(k.memLower),
		AllocatableEvictPriorityThreshold: k.priority,
	}}).WithDefaults()
}

// env is one node (only its states store and clock matter here) and the recording evictor.
type env struct {
	*qosmanagertest.Node
	evictor *qosmanagertest.Evictor
	deps    qosmanager.Deps
}

func newEnv(t *testing.T, n *corev1.Node, pods ...*testutil.PodBuilder) *env {
	t.Helper()
	qn := qosmanagertest.NewNode(t, hostsim.Config{Version: cgroup.V2, Driver: cgroup.Cgroupfs})
	e := &env{Node: qn, evictor: &qosmanagertest.Evictor{Reason: Reason}}
	e.deps = qn.Deps(DefaultInterval)
	e.deps.Evictor = e.evictor
	if n != nil {
		e.Store.SetNode(n)
	}
	for _, p := range pods {
		e.Store.SetPod(p.Obj())
	}
	return e
}

func TestRun(t *testing.T) {
	on := knobs{cpu: 80, cpuLower: 60, mem: 80, memLower: 60}
	// batch-cpu 9500 of 10000 (threshold 8000, lower 6000): two free pods, two batch pods, a service.
	usual := func() []*testutil.PodBuilder {
		return []*testutil.PodBuilder{
			be("free-a", 3500, batchCPU, "1000"), be("free-b", 3500, batchCPU, "2000"),
			be("batch-a", 5500, batchCPU, "3000"), be("batch-b", 5500, batchCPU, "3500"),
			svc("web", "cpu", "4"),
		}
	}
	with := func(pods []*testutil.PodBuilder, more ...*testutil.PodBuilder) []*testutil.PodBuilder {
		return append(pods, more...)
	}
	tests := []struct {
		name      string
		knobs     knobs
		node      *corev1.Node
		pods      []*testutil.PodBuilder
		refuse    []string
		fail      []string
		wantAsked []string
		wantEvict []string
		wantErr   string
	}{
		{
			name: "lowest priority first, then largest request, until at or below the lower percent", knobs: on, pods: usual(),
			// 9500 > 8000. free-b (2000) 7500, free-a (1000) 6500, batch-b (3500) 3000 <= 6000: stop.
			wantEvict: []string{"free-b", "free-a", "batch-b"},
		},
		{
			name: "at the threshold: nothing", knobs: on,
			pods: []*testutil.PodBuilder{be("free-a", 3500, batchCPU, "3000"), be("batch-a", 5500, batchCPU, "5000")},
		},
		{
			name: "a projection equal to the lower percent is enough", knobs: on,
			pods: []*testutil.PodBuilder{be("free-x", 3500, batchCPU, "2100"), be("batch-a", 5500, batchCPU, "3000"), be("batch-b", 5500, batchCPU, "3000")},
			// 8100 > 8000; -2100 = 6000, at the lower percent: stop.
			wantEvict: []string{"free-x"},
		},
		{
			name: "the lower percent decides where it stops", knobs: knobs{cpu: 80, cpuLower: 70}, pods: usual(),
			// lower 70 % = 7000: 9500 -2000 = 7500, -1000 = 6500 <= 7000: stop.
			wantEvict: []string{"free-b", "free-a"},
		},
		{
			name: "disabled: nothing, however far above", knobs: knobs{cpu: 80, cpuLower: 60, off: true},
			pods: with(usual(), be("huge", 3000, batchCPU, "50000")),
		},
		{
			name: "percents unset: nothing", knobs: knobs{}, pods: with(usual(), be("huge", 3000, batchCPU, "50000")),
		},
		{
			name: "the priority threshold keeps pods above it", knobs: knobs{cpu: 80, cpuLower: 60, priority: ptr.To[int64](5499)}, pods: usual(),
			// Only the free pods (3500) may go: 9500 -2000 -1000 = 6500, still above 6000, and nothing else.
			wantEvict: []string{"free-b", "free-a"},
		},
		{
			name: "the priority threshold includes its own value", knobs: knobs{cpu: 80, cpuLower: 60, priority: ptr.To[int64](5500)}, pods: usual(),
			wantEvict: []string{"free-b", "free-a", "batch-b"},
		},
		{
			name: "terminating pods are out of the requests", knobs: on,
			pods: []*testutil.PodBuilder{
				be("free-a", 3500, batchCPU, "1000"), be("free-b", 3500, batchCPU, "2000").Terminating(),
				be("batch-a", 5500, batchCPU, "3000"), be("batch-b", 5500, batchCPU, "4500"),
			},
			// 10500 - 2000 (free-b, terminating) = 8500 > 8000; free-a 7500, batch-b 3000. free-b is not asked.
			wantEvict: []string{"free-a", "batch-b"},
		},
		{
			name: "terminating pods are enough", knobs: on,
			pods: []*testutil.PodBuilder{
				be("free-a", 3500, batchCPU, "1000"), be("free-b", 3500, batchCPU, "2000").Terminating(),
				be("batch-a", 5500, batchCPU, "3000"), be("batch-b", 5500, batchCPU, "3500"),
			},
			// Without free-b the rest is 7500: at or below the threshold.
		},
		{
			name: "a pod not evicted now (PDB, rate limit) does not count; the next one goes", knobs: on,
			pods:   []*testutil.PodBuilder{be("free-x", 3500, batchCPU, "3500"), be("batch-a", 5500, batchCPU, "3000"), be("batch-b", 5500, batchCPU, "2500")},
			refuse: []string{"free-x"},
			// 9000 > 8000. free-x alone would do (5500), but it stays: 9000, -3000 (batch-a) 6000.
			wantAsked: []string{"free-x", "batch-a"},
			wantEvict: []string{"batch-a"},
		},
		{
			name: "an error is reported and the next pod is tried", knobs: on, pods: usual(), fail: []string{"free-b"},
			wantAsked: []string{"free-b", "free-a", "batch-b"},
			wantEvict: []string{"free-a", "batch-b"},
			wantErr:   "evicting pod default/free-b for kubernetes.io/batch-cpu: the server is currently unable",
		},
		{
			name: "a node that does not publish the resource: nothing", knobs: on, node: node(midCPU, "4000"), pods: usual(),
		},
		{
			name: "a published 0: every pod requesting it goes", knobs: on, node: node(batchCPU, "0"), pods: usual(),
			wantEvict: []string{"free-b", "free-a", "batch-b", "batch-a"},
		},
		{
			name: "never a service, whatever it requests", knobs: on,
			pods: []*testutil.PodBuilder{svc("web", batchCPU, "7000"), be("free-a", 3500, batchCPU, "2000")},
			// 9000 > 8000; free-a goes (7000), still above 6000, and the service stays.
			wantEvict: []string{"free-a"},
		},
		{
			name: "pods that do not request the resource are not candidates", knobs: on,
			pods:      with(usual(), be("free-0", 3000, "cpu", "1"), be("free-mem", 3000, batchMem, "1Gi")),
			wantEvict: []string{"free-b", "free-a", "batch-b"},
		},
		{
			name: "requests as the scheduler counts them: every container, and an init container larger than them", knobs: on,
			pods: []*testutil.PodBuilder{
				be("multi", 3500, batchCPU, "1500").Container("d").Requests(batchCPU, "1500"),
				testutil.Pod("init").Priority(5500).Label(slov1alpha1.LabelQoSClass, string(slov1alpha1.QoSBE)).
					InitContainer("setup", false).Requests(batchCPU, "4000").Container("c").Requests(batchCPU, "1000"),
				be("batch-z", 5500, batchCPU, "2000"),
			},
			// multi 3000 + init 4000 (its init container) + 2000 = 9000 > 8000; multi (3000) brings it to 6000.
			wantEvict: []string{"multi"},
		},
		{
			name: "memory, by the memory percents", knobs: knobs{mem: 80, memLower: 60},
			pods: []*testutil.PodBuilder{
				be("free-a", 3500, batchMem, "2048Mi"), be("batch-a", 5500, batchMem, "4096Mi"), be("batch-b", 5500, batchMem, "3072Mi"),
				be("cpu-only", 3000, batchCPU, "9500"),
			},
			// batch-memory 9216Mi > 8192Mi: free-a 7168Mi, batch-a (largest) 3072Mi <= 6144Mi. CPU is off: cpu-only stays.
			wantEvict: []string{"free-a", "batch-a"},
		},
		{
			name: "the mid tier's account on its own", knobs: on,
			pods: []*testutil.PodBuilder{
				be("free-a", 3500, batchCPU, "1000"), be("batch-a", 5500, batchCPU, "6000"),
				mid("mid-a", 7000, midCPU, "2000"), mid("mid-b", 7500, midCPU, "1500"),
			},
			// batch-cpu 7000 <= 8000: no batch pod goes. mid-cpu 3500 > 3200: mid-a (lowest priority) 1500 <= 2400.
			wantEvict: []string{"mid-a"},
		},
		{
			name: "both tiers over: each account evicts its own pods", knobs: on,
			pods: with(usual(), mid("mid-a", 7000, midCPU, "2000"), mid("mid-b", 7500, midCPU, "1500"), mid("mid-c", 7500, midMem, "4000Mi")),
			// batch-cpu as in the first case; mid-cpu 3500 > 3200: mid-a; mid-memory 4000Mi > 3276.8Mi: mid-c.
			wantEvict: []string{"free-b", "free-a", "batch-b", "mid-a", "mid-c"},
		},
		{
			name: "a pod evicted for one account counts as gone in the next", knobs: on,
			pods: []*testutil.PodBuilder{
				be("both", 3500, batchCPU, "3000", batchMem, "3072Mi"), be("cpu", 5500, batchCPU, "6000"), be("mem", 5500, batchMem, "6000Mi"),
			},
			// batch-cpu 9000 > 8000: both (lowest priority) 6000 <= 6000. batch-memory 9072Mi > 8192Mi, but both is on its
			// way out: 6000Mi <= 6144Mi, so mem stays and both is not asked again.
			wantEvict: []string{"both"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.node
			if n == nil {
				n = node()
			}
			e := newEnv(t, n, tt.pods...)
			e.evictor.Script(tt.refuse, tt.fail)
			p, err := New(e.deps)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Run(e.Ctx, tt.knobs.spec())
			qosmanagertest.ExpectErr(t, err, tt.wantErr)
			e.evictor.Expect(t, tt.wantAsked, tt.wantEvict)
		})
	}
}

// TestRunMessage: the message (the pod's event) gives every number the decision used.
func TestRunMessage(t *testing.T) {
	e := newEnv(t, node(), be("free-b", 3500, batchCPU, "2000"), be("batch-a", 5500, batchCPU, "7500"),
		mid("mid-a", 7000, midMem, "4000Mi"))
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(e.Ctx, knobs{cpu: 80, cpuLower: 60, mem: 80, memLower: 60}.spec()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"the node's pods request 9500m of kubernetes.io/batch-cpu, above 80% of the node's allocatable 10000m (8000m); evicting pods that request it " +
			"until the projected requests are at or below 60% (6000m): projected 9500m, this pod requests 2000m, projected after it 7500m",
		"the node's pods request 9500m of kubernetes.io/batch-cpu, above 80% of the node's allocatable 10000m (8000m); evicting pods that request it " +
			"until the projected requests are at or below 60% (6000m): projected 7500m, this pod requests 7500m, projected after it 0m",
		"the node's pods request 4000Mi of kubernetes.io/mid-memory, above 80% of the node's allocatable 4096Mi (3277Mi); evicting pods that request it " +
			"until the projected requests are at or below 60% (2458Mi): projected 4000Mi, this pod requests 4000Mi, projected after it 0Mi",
	}
	if diff := cmp.Diff(want, e.evictor.Messages()); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

// TestRunCountsItsOwnRequests: a pod whose eviction was accepted but that the informer still shows running counts
// as gone for 30 s; no other pod is evicted in its place. After 30 s it counts again.
func TestRunCountsItsOwnRequests(t *testing.T) {
	e := newEnv(t, node(), be("free-a", 3500, batchCPU, "3000"), be("batch-a", 5500, batchCPU, "6000"))
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	spec := knobs{cpu: 80, cpuLower: 60}.spec()
	run := func(after time.Duration, want []string) {
		t.Helper()
		e.Clock.Step(after)
		if err := p.Run(e.Ctx, spec); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, e.evictor.Asked()); diff != "" {
			t.Errorf("after %s: pods asked for (-want +got):\n%s", after, diff)
		}
	}
	// 9000 > 8000: free-a goes, 6000 <= 6000.
	run(0, []string{"free-a"})
	// Still shown running: 9000 - 3000 on its way out = 6000, nothing more.
	run(time.Second, []string{"free-a"})
	run(28*time.Second, []string{"free-a"})
	// 30 s after the request it counts again and is asked again (the evictor dedupes or retries).
	run(time.Second, []string{"free-a", "free-a"})
}

// TestRunUnpublished: a node that never published a tier resource is said once at verbosity 1, not every run, and
// again after it was published and went.
func TestRunUnpublished(t *testing.T) {
	var lines []string
	ctx := klog.NewContext(context.Background(), funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 1}))
	e := newEnv(t, node(batchCPU, "10000"), be("free-a", 3500, midCPU, "5000"))
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	spec := knobs{cpu: 80, cpuLower: 60}.spec()
	count := func() int {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, "does not publish") && strings.Contains(l, string(slov1alpha1.MidCPU)) {
				n++
			}
		}
		return n
	}
	for range 3 {
		if err := p.Run(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	if got := count(); got != 1 {
		t.Errorf("said %d times that mid-cpu is not published, want once:\n%s", got, strings.Join(lines, "\n"))
	}
	if len(e.evictor.Asked()) != 0 {
		t.Errorf("evicted %v for a resource the node does not publish", e.evictor.Asked())
	}
	e.Store.SetNode(node(batchCPU, "10000", midCPU, "8000"))
	if err := p.Run(ctx, spec); err != nil {
		t.Fatal(err)
	}
	e.Store.SetNode(node(batchCPU, "10000"))
	if err := p.Run(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != 2 {
		t.Errorf("said %d times that mid-cpu is not published, want twice (before and after it was)", got)
	}
}

// TestRunWithoutNode: before the informer has the node, nothing is compared and nothing evicted.
func TestRunWithoutNode(t *testing.T) {
	e := newEnv(t, nil, be("free-a", 3500, batchCPU, "50000"))
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(e.Ctx, knobs{cpu: 80, cpuLower: 60}.spec()); err != nil {
		t.Fatal(err)
	}
	if len(e.evictor.Asked()) != 0 {
		t.Errorf("evicted %v without a node", e.evictor.Asked())
	}
}

// TestRunUnreachable: with the API server gone the first failure ends the run: the other pods would fail the same
// way, and nothing is killed locally (requests above the allocatable are no emergency).
func TestRunUnreachable(t *testing.T) {
	e := newEnv(t, node(), be("free-a", 3500, batchCPU, "5000"), be("batch-a", 5500, batchCPU, "5000"),
		mid("mid-a", 7000, midCPU, "5000"))
	e.evictor.Offline = true
	p, err := New(e.deps)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Run(e.Ctx, knobs{cpu: 80, cpuLower: 60}.spec())
	qosmanagertest.ExpectErr(t, err, "evicting pod default/free-a for kubernetes.io/batch-cpu: evicting free-a: the API server cannot be reached")
	if diff := cmp.Diff([]string{"free-a"}, e.evictor.Asked()); diff != "" {
		t.Errorf("pods asked for (-want +got):\n%s", diff)
	}
	if len(e.evictor.Killed()) != 0 {
		t.Errorf("killed %v locally", e.evictor.Killed())
	}
}

func TestNewMissingDeps(t *testing.T) {
	_, err := New(qosmanager.Deps{Clock: clocktesting.NewFakeClock(time.Now())})
	qosmanagertest.ExpectErr(t, err, "building the allocatableevict plugin: missing States, Evictor")
}

func TestValidate(t *testing.T) {
	strategy := func(s slov1alpha1.ResourceThresholdStrategy) *slov1alpha1.NodeSLOSpec {
		return (&slov1alpha1.NodeSLOSpec{ResourceUsedThresholdWithBE: &s}).WithDefaults()
	}
	on, p64 := ptr.To(true), ptr.To[int64]
	tests := []struct {
		name string
		spec *slov1alpha1.NodeSLOSpec
		want []string // substrings of the error; none for a valid spec
	}{
		{name: "defaults (off)", spec: strategy(slov1alpha1.ResourceThresholdStrategy{})},
		{name: "on without the percents: allocatable eviction off", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on})},
		{name: "both resources, lower equal to the threshold", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on,
			CPUAllocatableEvictThresholdPercent: p64(80), CPUAllocatableEvictLowerPercent: p64(80),
			MemoryAllocatableEvictThresholdPercent: p64(100), MemoryAllocatableEvictLowerPercent: p64(1), AllocatableEvictPriorityThreshold: p64(5999)})},
		{name: "above 100: Koordinator's own example, 110 / 100", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on,
			MemoryAllocatableEvictThresholdPercent: p64(110), MemoryAllocatableEvictLowerPercent: p64(100)})},
		{name: "off: anything goes, so that switching off always works", spec: strategy(slov1alpha1.ResourceThresholdStrategy{
			CPUAllocatableEvictThresholdPercent: p64(0), MemoryAllocatableEvictLowerPercent: p64(101)})},
		{
			name: "lower above the threshold", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on,
				CPUAllocatableEvictThresholdPercent: p64(60), CPUAllocatableEvictLowerPercent: p64(65)}),
			want: []string{"resourceUsedThresholdWithBE.cpuAllocatableEvictLowerPercent (65) is above resourceUsedThresholdWithBE.cpuAllocatableEvictThresholdPercent (60)"},
		},
		{
			name: "out of range", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on,
				MemoryAllocatableEvictThresholdPercent: p64(1001), MemoryAllocatableEvictLowerPercent: p64(0)}),
			want: []string{"resourceUsedThresholdWithBE.memoryAllocatableEvictThresholdPercent is 1001, outside [1, 1000]",
				"resourceUsedThresholdWithBE.memoryAllocatableEvictLowerPercent is 0, outside [1, 1000]"},
		},
		{
			name: "a threshold without its lower percent", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on,
				MemoryAllocatableEvictThresholdPercent: p64(80)}),
			want: []string{"resourceUsedThresholdWithBE.memoryAllocatableEvictLowerPercent is unset"},
		},
		{
			name: "a lower percent without its threshold", spec: strategy(slov1alpha1.ResourceThresholdStrategy{Enable: on,
				CPUAllocatableEvictLowerPercent: p64(60)}),
			want: []string{"resourceUsedThresholdWithBE.cpuAllocatableEvictThresholdPercent is unset"},
		},
	}
	p := &Plugin{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qosmanagertest.ExpectValidation(t, p.Validate(tt.spec), true, tt.want...)
		})
	}
}
