package mid

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
	"github.com/gleaner-sh/gleaner/pkg/controllers/podcache"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func input(mutate func(*sloconfig.ColocationStrategy), m *slov1alpha1.NodeMetric) *framework.Input {
	s := sloconfig.DefaultColocationStrategy()
	s.Enable = ptr.To(true)
	if mutate != nil {
		mutate(&s)
	}
	prod := testutil.Pod("prod").Node("n1").Priority(9500).Requests("cpu", "2", "memory", "4Gi").Obj()
	prod2 := testutil.Pod("prod2").Node("n1").Priority(9000).Phase(corev1.PodPending).Requests("cpu", "750m", "memory", "768Mi").Obj()
	// No priority, Burstable: LS, so prod. Labelled BE: batch. Labelled koord-mid: mid.
	ls := testutil.Pod("ls").Node("n1").Requests("cpu", "1", "memory", "1Gi").Obj()
	be := testutil.Pod("be").Node("n1").Label(slov1alpha1.LabelQoSClassAlias, "BE").Requests("cpu", "1", "memory", "1Gi").Obj()
	midPod := testutil.Pod("mid").Node("n1").Label(slov1alpha1.LabelPriorityClassAlias, "koord-mid").Requests("cpu", "1").Obj()
	done := testutil.Pod("done").Node("n1").Priority(9500).Phase(corev1.PodFailed).Requests("cpu", "4").Obj()
	return &framework.Input{
		Node:     testutil.Node("n1").Capacity("cpu", "10", "memory", "20Gi").Allocatable("cpu", "9", "memory", "19Gi").Obj(),
		Pods:     podcache.FromPods(prod, prod2, ls, be, midPod, done),
		Metric:   m,
		Strategy: &s,
		Now:      now,
	}
}

func metric() *testutil.NodeMetricBuilder {
	return testutil.NodeMetric("n1").Updated(now.Add(-time.Minute)).
		NodeUsage("cpu", "5", "memory", "10Gi").SystemUsage("cpu", "500m", "memory", "1536Mi").
		ProdReclaimable("cpu", "3", "memory", "6Gi")
}

func TestCalculate(t *testing.T) {
	// cpu: unallocated = 10000 - max(1000 reserved, 500 system) - (2000 + 750 + 1000 prod requests) = 5250
	// mem: unallocated = 20480Mi - max(1024, 1536) - (4096 + 768 + 1024) = 13056Mi
	tests := []struct {
		name             string
		mutate           func(*sloconfig.ColocationStrategy)
		metric           *slov1alpha1.NodeMetric
		nodeAnnotations  map[string]string
		wantCPU, wantMem string
	}{
		{name: "reclaimable only", metric: metric().Obj(), wantCPU: "3000", wantMem: "6Gi"},
		{
			name:   "plus a share of unallocated",
			mutate: func(s *sloconfig.ColocationStrategy) { s.MidUnallocatedPercent = ptr.To[int64](50) },
			metric: metric().Obj(), wantCPU: "5625", wantMem: "12672Mi", // 3000 + 2625; 6144Mi + 6528Mi
		},
		{
			name: "capped by mid threshold",
			mutate: func(s *sloconfig.ColocationStrategy) {
				s.MidUnallocatedPercent = ptr.To[int64](50)
				s.MidCPUThresholdPercent = ptr.To[int64](50)
				s.MidMemoryThresholdPercent = ptr.To[int64](10)
			},
			metric: metric().Obj(), wantCPU: "5000", wantMem: "2048Mi",
		},
		{
			// cpu: reserved = max(1000 kubelet, 4 cores "0-3") = 4000; unallocated = 10000 - 4000 - 3750 = 2250
			//      -> 3000 + 1125 = 4125
			// mem: reserved = max(1Gi kubelet, 2Gi) = 2048Mi; unallocated = 20480 - max(2048, 1536) - 5888 = 12544Mi
			//      -> 6144Mi + 6272Mi = 12416Mi
			name:            "node reservation annotation",
			mutate:          func(s *sloconfig.ColocationStrategy) { s.MidUnallocatedPercent = ptr.To[int64](50) },
			nodeAnnotations: map[string]string{slov1alpha1.AnnotationNodeReservationAlias: `{"resources": {"memory": "2Gi"}, "reservedCPUs": "0-3"}`},
			metric:          metric().Obj(), wantCPU: "4125", wantMem: "12416Mi",
		},
		{
			name:   "reclaimable above what is free",
			metric: metric().NodeUsage("cpu", "9", "memory", "18Gi").Obj(), wantCPU: "1000", wantMem: "2Gi",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input(tt.mutate, tt.metric)
			in.Node.Annotations = tt.nodeAnnotations
			items, err := New().Calculate(in)
			if err != nil {
				t.Fatal(err)
			}
			want := map[corev1.ResourceName]string{slov1alpha1.MidCPU: tt.wantCPU, slov1alpha1.MidMemory: tt.wantMem}
			if len(items) != 2 {
				t.Fatalf("want 2 items, got %+v", items)
			}
			for _, it := range items {
				if it.Reset {
					t.Fatalf("%s reset: %s", it.Name, it.Message)
				}
				if it.Quantity.Cmp(resource.MustParse(want[it.Name])) != 0 {
					t.Errorf("%s = %s, want %s", it.Name, it.Quantity, want[it.Name])
				}
				if it.Derivation.Value.Cmp(*it.Quantity) != 0 {
					t.Errorf("%s derivation value %s differs from the item", it.Name, it.Derivation.Value)
				}
			}
		})
	}
}

func TestResetWhenInputsMissing(t *testing.T) {
	tests := []struct {
		name   string
		metric *slov1alpha1.NodeMetric
		reason string
	}{
		{"no NodeMetric", nil, "does not exist"},
		{"stale NodeMetric", metric().Updated(now.Add(-20 * time.Minute)).Obj(), "more than degradeTimeMinutes"},
		{"no prod reclaimable", testutil.NodeMetric("n1").Updated(now).NodeUsage("cpu", "1").Obj(), "reports no prod reclaimable"},
	}
	for _, tt := range tests {
		items, err := New().Calculate(input(nil, tt.metric))
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if !it.Reset || !strings.Contains(it.Message, tt.reason) {
				t.Errorf("%s: %s: want reset with %q, got %+v", tt.name, it.Name, tt.reason, it)
			}
		}
	}
}

// TestPredictionTerms: the agent's prediction inputs are explained after prodReclaimable, and a cold start says
// until when nothing is reclaimable.
func TestPredictionTerms(t *testing.T) {
	m := metric().Obj()
	until := now.Add(3 * time.Hour)
	m.Status.ProdReclaimableMetric.Prediction = &slov1alpha1.ReclaimablePrediction{
		ProdRequest:         corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3750m"), corev1.ResourceMemory: resource.MustParse("5888Mi")},
		ProdPeak:            corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("600m"), corev1.ResourceMemory: resource.MustParse("2Gi")},
		SystemPeak:          corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		SafetyMarginPercent: 10,
		ColdStartUntil:      &metav1.Time{Time: until},
	}
	items, err := New().Calculate(input(nil, m))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		terms := map[string]slov1alpha1.DerivationTerm{}
		var names []string
		for _, term := range it.Derivation.Terms {
			terms[term.Name] = term
			names = append(names, term.Name)
		}
		if got := strings.Join(names[:5], ","); got != "capacity,prodReclaimable,predictedProdRequest,prodPeak,systemPeak" {
			t.Errorf("%s: terms start %s", it.Name, got)
		}
		if !strings.Contains(terms["prodReclaimable"].Detail, "cold start until "+until.Format(time.RFC3339)) {
			t.Errorf("%s: prodReclaimable detail %q does not name the cold start", it.Name, terms["prodReclaimable"].Detail)
		}
		if !strings.Contains(terms["prodPeak"].Detail, "10% safety margin") {
			t.Errorf("%s: prodPeak detail %q", it.Name, terms["prodPeak"].Detail)
		}
		want := map[corev1.ResourceName]string{slov1alpha1.MidCPU: "600m", slov1alpha1.MidMemory: "2Gi"}[it.Name]
		if v := terms["prodPeak"].Value; v.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("%s: prodPeak = %v, want %s", it.Name, v, want)
		}
	}
}

// TestOutOfRangeReclaimable: prodReclaimable and node usage are held to [0, capacity] like every NodeMetric quantity.
// Unclamped, a negative prodReclaimable would eat the unallocated share (mid-cpu 0), and one too large for int64
// milli-units would read as 0.
func TestOutOfRangeReclaimable(t *testing.T) {
	unallocated := func(s *sloconfig.ColocationStrategy) { s.MidUnallocatedPercent = ptr.To[int64](50) }
	tests := []struct {
		name        string
		mutate      func(*sloconfig.ColocationStrategy)
		metric      *slov1alpha1.NodeMetric
		wantCPU     string
		wantWarning string
	}{
		// 0 reclaimable + 2625 unallocated share.
		{"negative reclaimable counts as none", unallocated, metric().ProdReclaimable("cpu", "-3", "memory", "6Gi").Obj(), "2625",
			"NodeMetric n1 reports cpu outside [0, capacity 10]; clamped prodReclaimable -3 to 0"},
		// 10000 reclaimable, bounded by the 5000 free.
		{"reclaimable too large for int64 counts as the whole node", nil, metric().ProdReclaimable("cpu", "1E", "memory", "6Gi").Obj(), "5000",
			"clamped prodReclaimable 1E to 10"},
		// free = 10000 - 0, not 15000: a negative node usage frees nothing beyond the node.
		{"negative node usage counts as 0", nil, metric().NodeUsage("cpu", "-5").ProdReclaimable("cpu", "20", "memory", "6Gi").Obj(), "10000",
			"clamped nodeUsage -5 to 0, prodReclaimable 20 to 10"},
	}
	wantTerms := map[string]map[string]string{
		"negative node usage counts as 0": {"nodeUsage": "0", "free": "10", "prodReclaimable": "10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, err := New().Calculate(input(tt.mutate, tt.metric))
			if err != nil {
				t.Fatal(err)
			}
			cpu := items[0]
			if cpu.Reset || cpu.Quantity.Cmp(resource.MustParse(tt.wantCPU)) != 0 {
				t.Errorf("mid-cpu = %v (%s), want %s", cpu.Quantity, cpu.Message, tt.wantCPU)
			}
			if got := strings.Join(cpu.Derivation.Warnings, "; "); !strings.Contains(got, tt.wantWarning) {
				t.Errorf("mid-cpu warnings = %q, want %q", got, tt.wantWarning)
			}
			for _, term := range cpu.Derivation.Terms {
				if want, ok := wantTerms[tt.name][term.Name]; ok && term.Value.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("mid-cpu term %s = %s, want %s", term.Name, term.Value.String(), want)
				}
			}
			if len(items[1].Derivation.Warnings) != 0 {
				t.Errorf("mid-memory warns of an in-range report: %v", items[1].Derivation.Warnings)
			}
		})
	}
}

// TestMemoryPressure: while the NodeMetric reports memory pressure, mid-memory is at most what the active mid pods
// request, less the pods the agent lists as evicted, and must reach the node at once; mid-cpu does not move.
func TestMemoryPressure(t *testing.T) {
	since := now.Add(-10 * time.Second)
	midPods := []*corev1.Pod{
		testutil.Pod("mid-a").Node("n1").Priority(7500).Requests(string(slov1alpha1.MidMemory), "1Gi").Obj(),
		testutil.Pod("mid-b").Node("n1").Priority(7500).Requests(string(slov1alpha1.MidMemory), "512Mi").Obj(),
	}
	tests := []struct {
		name       string
		metric     *slov1alpha1.NodeMetric
		wantMem    string
		wantUrgent bool
	}{
		{name: "no pressure", metric: metric().Obj(), wantMem: "6Gi"},
		{name: "pressure: what the mid pods request", metric: metric().MemoryPressure(since).Obj(), wantMem: "1536Mi", wantUrgent: true},
		{name: "pressure, mid-a evicted", metric: metric().MemoryPressure(since, "uid-mid-a").Obj(), wantMem: "512Mi", wantUrgent: true},
		// Never raised by pressure: a calculation below what the mid pods request (1Gi reclaimable) stays.
		{name: "pressure below what mid pods request", metric: metric().ProdReclaimable("cpu", "3", "memory", "1Gi").MemoryPressure(since).Obj(),
			wantMem: "1Gi", wantUrgent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input(nil, tt.metric)
			in.Pods = append(in.Pods, podcache.FromPods(midPods...)...)
			items, err := New().Calculate(in)
			if err != nil {
				t.Fatal(err)
			}
			cpu, mem := items[0], items[1]
			if cpu.Quantity.Cmp(resource.MustParse("3000")) != 0 || cpu.Urgent != "" {
				t.Errorf("mid-cpu = %s (urgent %q), want 3000 as without pressure", cpu.Quantity, cpu.Urgent)
			}
			if mem.Quantity.Cmp(resource.MustParse(tt.wantMem)) != 0 {
				t.Errorf("mid-memory = %s, want %s", mem.Quantity, tt.wantMem)
			}
			if got := mem.Urgent != ""; got != tt.wantUrgent {
				t.Errorf("mid-memory urgent %q, want urgent %v", mem.Urgent, tt.wantUrgent)
			}
			if tt.wantUrgent && !strings.HasPrefix(mem.Derivation.Formula, "at most midKept") {
				t.Errorf("formula %q does not say memory pressure caps it", mem.Derivation.Formula)
			}
		})
	}
}
