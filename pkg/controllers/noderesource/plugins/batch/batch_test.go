package batch

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
	"github.com/gleaner-sh/gleaner/pkg/controllers/podcache"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// The node: 10 cores and 20Gi, of which the kubelet reserves 1 core and 1Gi.
func node() *corev1.Node {
	return testutil.Node("n1").Capacity("cpu", "10", "memory", "20Gi").Allocatable("cpu", "9", "memory", "19Gi").Obj()
}

// The pods: every kind the classification must tell apart.
var (
	prod      = testutil.Pod("prod").Node("n1").Priority(9500).Requests("cpu", "2", "memory", "4Gi").Obj()
	noPrio    = testutil.Pod("noprio").Node("n1").Requests("cpu", "1", "memory", "2Gi").Obj()
	midPod    = testutil.Pod("mid").Node("n1").Priority(7500).Requests(string(slov1alpha1.MidCPU), "1000", string(slov1alpha1.MidMemory), "1Gi").Obj()
	noMetric  = testutil.Pod("nometric").Node("n1").Priority(9000).Requests("cpu", "500m", "memory", "512Mi").Obj()
	pending   = testutil.Pod("pending").Node("n1").Priority(9000).Phase(corev1.PodPending).Requests("cpu", "250m", "memory", "256Mi").Obj()
	batchPod  = testutil.Pod("batch").Node("n1").Priority(5500).Requests(string(slov1alpha1.BatchCPU), "2000", string(slov1alpha1.BatchMemory), "2Gi").Obj()
	freePod   = testutil.Pod("free").Node("n1").Priority(3500).Requests("cpu", "1").Obj()
	succeeded = testutil.Pod("done").Node("n1").Priority(9500).Phase(corev1.PodSucceeded).Requests("cpu", "4", "memory", "8Gi").Obj()
)

func pods() []*corev1.Pod {
	return []*corev1.Pod{prod, noPrio, midPod, noMetric, pending, batchPod, freePod, succeeded}
}

// metric: system 500m/1Gi, an LS host app 300m/512Mi and a batch host app that must not count.
func metric() *testutil.NodeMetricBuilder {
	return testutil.NodeMetric("n1").Updated(now.Add(-time.Minute)).
		NodeUsage("cpu", "5", "memory", "10Gi").SystemUsage("cpu", "500m", "memory", "1Gi").
		HostApp("nginx", slov1alpha1.PriorityProd, "cpu", "300m", "memory", "512Mi").
		HostApp("spark-history", slov1alpha1.PriorityBatch, "cpu", "1", "memory", "4Gi").
		Pod(prod, "cpu", "500m", "memory", "3Gi").
		Pod(noPrio, "cpu", "200m", "memory", "1Gi").
		Pod(midPod, "cpu", "300m", "memory", "768Mi").
		Pod(pending, "cpu", "0", "memory", "0").
		Pod(batchPod, "cpu", "1500m", "memory", "2Gi").
		Pod(freePod, "cpu", "900m", "memory", "1Gi")
}

func strategy(mutate func(*sloconfig.ColocationStrategy)) *sloconfig.ColocationStrategy {
	s := sloconfig.DefaultColocationStrategy()
	s.Enable = ptr.To(true)
	if mutate != nil {
		mutate(&s)
	}
	return &s
}

func TestCalculate(t *testing.T) {
	tests := []struct {
		name     string
		strategy *sloconfig.ColocationStrategy
		pods     []*corev1.Pod
		metric   *slov1alpha1.NodeMetric
		topology *framework.Topology
		wantCPU  string // batch-cpu, millicores
		wantMem  string // batch-memory
		wantZone map[string]string
		// wantTerms checks some derivation terms of batch-cpu.
		wantTerms map[string]string
	}{
		{
			// cpu: 10000 - 4000 margin - 1000 systemUsed (reserved 1000 > 500 + 300) - hpUsed
			//      hpUsed = 500 prod + 200 noprio + 300 mid + 500 nometric (request) + 0 pending = 1500 -> 3500
			// mem: 20Gi - 7Gi margin (35%) - 1.5Gi systemUsed (1Gi + 512Mi > 1Gi reserved)
			//      - (3Gi + 1Gi + 768Mi + 512Mi + 0) = 20480 - 7168 - 1536 - 5376 = 6400Mi
			name: "usage policy", strategy: strategy(nil), pods: pods(), metric: metric().Obj(),
			wantCPU: "3500", wantMem: "6400Mi",
			wantTerms: map[string]string{"capacity": "10", "safetyMargin": "4", "systemUsage": "500m", "hostApplications": "300m",
				"reserved": "1", "systemUsed": "1", "hpUsed": "1500m", "hpRequests": "4750m", "calculated": "3500m", "batchHeld": "2"},
		},
		{
			// cpu hpUsed = max(500,2000) + max(200,1000) + max(300,1000 mid-cpu) + 500 + max(0,250) = 4750 -> 250
			// mem hpUsed = 4Gi + 2Gi + 1Gi + 512Mi + 256Mi = 7936Mi -> 20480 - 7168 - 1536 - 7936 = 3840Mi
			name: "maxUsageRequest policy",
			strategy: strategy(func(s *sloconfig.ColocationStrategy) {
				s.CPUCalculatePolicy = ptr.To(sloconfig.CalculateByMaxUsageRequest)
				s.MemoryCalculatePolicy = ptr.To(sloconfig.CalculateByMaxUsageRequest)
			}),
			pods: pods(), metric: metric().Obj(),
			// batch pods hold 2000: the floor lifts 250 to 2000.
			wantCPU: "2000", wantMem: "3840Mi",
			wantTerms: map[string]string{"hpUsed": "4750m", "calculated": "250m"},
		},
		{
			// mem: requests only, systemUsed = reserved 1Gi: 20480 - 7168 - 1024 - 7936 = 4352Mi
			name:     "request policy for memory",
			strategy: strategy(func(s *sloconfig.ColocationStrategy) { s.MemoryCalculatePolicy = ptr.To(sloconfig.CalculateByRequest) }),
			pods:     pods(), metric: metric().Obj(),
			wantCPU: "3500", wantMem: "4352Mi",
		},
		{
			name:     "cap by batch threshold",
			strategy: strategy(func(s *sloconfig.ColocationStrategy) { s.BatchCPUThresholdPercent = ptr.To[int64](25) }),
			pods:     pods(), metric: metric().Obj(),
			wantCPU: "2500", wantMem: "6400Mi",
			wantTerms: map[string]string{"cap": "2500m"},
		},
		{
			name:     "clamped at zero when services use everything",
			strategy: strategy(nil),
			pods:     []*corev1.Pod{prod},
			metric:   testutil.NodeMetric("n1").Updated(now).SystemUsage("cpu", "3", "memory", "8Gi").Pod(prod, "cpu", "9", "memory", "16Gi").Obj(),
			wantCPU:  "0", wantMem: "0",
			wantTerms: map[string]string{"calculated": "-6"},
		},
		{
			name:     "never below what batch pods hold",
			strategy: strategy(nil),
			pods:     []*corev1.Pod{prod, batchPod},
			metric:   testutil.NodeMetric("n1").Updated(now).SystemUsage("cpu", "3", "memory", "8Gi").Pod(prod, "cpu", "9", "memory", "16Gi").Obj(),
			wantCPU:  "2000", wantMem: "2Gi",
		},
		{
			// system usage above reserved: systemUsed = 2500 + 300 = 2800 -> 10000 - 4000 - 2800 - 1500 = 1700
			name:     "system usage larger than reserved",
			strategy: strategy(nil), pods: pods(), metric: metric().SystemUsage("cpu", "2500m").Obj(),
			wantCPU: "2000", wantMem: "6400Mi", // 1700 lifted to the 2000 batch pods hold
			wantTerms: map[string]string{"systemUsed": "2800m", "calculated": "1700m"},
		},
		{
			// Two zones of 5 cores: 5000 - 2000 margin - (1000 + 1500) / 2 = 1750 each.
			name: "zones split in proportion to capacity", strategy: strategy(nil), pods: pods(), metric: metric().Obj(),
			topology: &framework.Topology{Zones: []framework.Zone{
				{Name: "node-0", Capacity: corev1.ResourceList{"cpu": resource.MustParse("5"), "memory": resource.MustParse("10Gi")}},
				{Name: "node-1", Capacity: corev1.ResourceList{"cpu": resource.MustParse("5"), "memory": resource.MustParse("10Gi")}},
			}},
			wantCPU: "3500", wantMem: "6400Mi",
			wantZone: map[string]string{"node-0": "1750", "node-1": "1750"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &framework.Input{Node: node(), Pods: podcache.FromPods(tt.pods...), Metric: tt.metric, Topology: tt.topology, Strategy: tt.strategy, Now: now}
			items, err := New().Calculate(in)
			if err != nil {
				t.Fatal(err)
			}
			got := map[corev1.ResourceName]*framework.ResourceItem{}
			for i := range items {
				got[items[i].Name] = &items[i]
			}
			cpu, mem := got[slov1alpha1.BatchCPU], got[slov1alpha1.BatchMemory]
			if cpu == nil || mem == nil || cpu.Reset || mem.Reset {
				t.Fatalf("want both resources calculated, got %+v", items)
			}
			if want := resource.MustParse(tt.wantCPU); cpu.Quantity.Cmp(want) != 0 {
				t.Errorf("batch-cpu = %s, want %s (%s)", cpu.Quantity, tt.wantCPU, terms(cpu))
			}
			if want := resource.MustParse(tt.wantMem); mem.Quantity.Cmp(want) != 0 {
				t.Errorf("batch-memory = %s, want %s (%s)", mem.Quantity, tt.wantMem, terms(mem))
			}
			for name, want := range tt.wantTerms {
				if got := term(cpu, name); got.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("batch-cpu term %s = %s, want %s", name, got.String(), want)
				}
			}
			if tt.wantZone != nil {
				gotZone := map[string]string{}
				for z, q := range cpu.ZoneQuantity {
					gotZone[z] = q.String()
				}
				if diff := cmp.Diff(tt.wantZone, gotZone); diff != "" {
					t.Errorf("zones (-want +got):\n%s", diff)
				}
			}
			if cpu.Derivation == nil || cpu.Derivation.Value.Cmp(*cpu.Quantity) != 0 || cpu.Derivation.MetricTime == nil {
				t.Errorf("derivation does not carry the published value and metric time: %+v", cpu.Derivation)
			}
		})
	}
}

func TestCPURequestPolicyIsAnError(t *testing.T) {
	s := strategy(func(s *sloconfig.ColocationStrategy) { s.CPUCalculatePolicy = ptr.To(sloconfig.CalculateByRequest) })
	in := &framework.Input{Node: node(), Pods: podcache.FromPods(pods()...), Metric: metric().Obj(), Strategy: s, Now: now}
	if _, err := New().Calculate(in); err == nil || !strings.Contains(err.Error(), "not supported for cpu") {
		t.Fatalf("want an error for the request policy on cpu, got %v", err)
	}
}

func TestDegrade(t *testing.T) {
	tests := []struct {
		name   string
		metric *slov1alpha1.NodeMetric
		reason string
	}{
		{"missing", nil, "degraded: NodeMetric n1 does not exist"},
		{"never reported", testutil.NodeMetric("n1").Obj(), "degraded: NodeMetric n1 has no usage reported yet"},
		{"stale", metric().Updated(now.Add(-16 * time.Minute)).Obj(),
			"degraded: NodeMetric n1 was last updated 16m0s ago, more than degradeTimeMinutes (15m0s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &framework.Input{Node: node(), Pods: podcache.FromPods(pods()...), Metric: tt.metric, Strategy: strategy(nil), Now: now}
			items, err := New().Calculate(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != 2 {
				t.Fatalf("want 2 items, got %d", len(items))
			}
			for _, it := range items {
				if !it.Reset || it.Quantity != nil || it.Message != tt.reason || it.Derivation.Reason != tt.reason {
					t.Errorf("%s: want reset with reason %q, got %+v", it.Name, tt.reason, it)
				}
			}
		})
	}
	// Fifteen minutes exactly is still fresh.
	in := &framework.Input{Node: node(), Pods: podcache.FromPods(pods()...), Metric: metric().Updated(now.Add(-15 * time.Minute)).Obj(), Strategy: strategy(nil), Now: now}
	items, _ := New().Calculate(in)
	if items[0].Reset {
		t.Errorf("a metric exactly degradeTimeMinutes old must still be used: %s", items[0].Message)
	}
}

func TestNeedSync(t *testing.T) {
	s := strategy(nil) // resourceDiffThreshold 0.1
	withBatch := func(cpu string) *corev1.Node {
		n := node()
		if cpu != "" {
			n.Status.Allocatable[slov1alpha1.BatchCPU] = resource.MustParse(cpu)
		}
		return n
	}
	tests := []struct {
		name     string
		old, new string
		want     bool
	}{
		{"unchanged", "1000", "1000", false},
		{"small change", "1000", "1090", false},
		{"change above threshold", "1000", "1200", true},
		{"drop above threshold", "1000", "800", true},
		{"appears", "", "1000", true},
		{"disappears", "1000", "", true},
		{"from zero", "0", "1", true},
	}
	for _, tt := range tests {
		got, why := New().NeedSync(s, withBatch(tt.old), withBatch(tt.new))
		if got != tt.want {
			t.Errorf("%s: NeedSync = %v (%s), want %v", tt.name, got, why, tt.want)
		}
	}
}

func term(it *framework.ResourceItem, name string) resource.Quantity {
	for _, t := range it.Derivation.Terms {
		if t.Name == name {
			return t.Value
		}
	}
	return resource.MustParse("-999999")
}

func terms(it *framework.ResourceItem) string {
	var b strings.Builder
	for _, t := range it.Derivation.Terms {
		b.WriteString(t.Name + "=" + t.Value.String() + " ")
	}
	return b.String()
}

// TestAccountingRules checks who counts as high-priority, usage no listed pod claims, LSE cores, node reservations
// and host applications, each against one base node:
//
//	node 10 cores / 20Gi, allocatable 9 / 19Gi (kubelet reserves 1000m / 1024Mi)
//	one prod pod "p" (priority 9500) requesting 2 cores / 4Gi, using 500m / 3Gi; system usage 500m / 1Gi
//	cpu: 10000 - 4000 margin (60%) - max(500, 1000) - 500 = 4500
//	mem: 20480Mi - 7168Mi margin (65%) - max(1024, 1024) - 3072 = 9216Mi
func TestAccountingRules(t *testing.T) {
	pod := func(name string) *testutil.PodBuilder { return testutil.Pod(name).Node("n1") }
	base := pod("p").Priority(9500).Requests("cpu", "2", "memory", "4Gi").Obj()
	type rule struct {
		name        string
		strategy    func(*sloconfig.ColocationStrategy)
		annotations map[string]string
		pods        []*corev1.Pod // besides the base pod
		usage       map[string][]string
		records     func(*testutil.NodeMetricBuilder) // records of pods that are not in pods, host applications
		wantCPU     string
		wantMem     string
		wantTerms   map[string]string // batch-cpu terms
		wantDetail  map[string]string // batch-cpu term -> part of its detail
	}
	beLabelled := pod("be-label").Label(slov1alpha1.LabelQoSClassAlias, "BE").Requests("cpu", "1", "memory", "1Gi").Obj()
	beGleaner := pod("be-gleaner").Label(slov1alpha1.LabelQoSClass, "BE").Requests("cpu", "1", "memory", "1Gi").Obj()
	bestEffort := pod("besteffort").Obj()
	koordBatch := pod("koord-batch").Priority(9500).Label(slov1alpha1.LabelPriorityClassAlias, "koord-batch").Requests("cpu", "1").Obj()
	prodOverBE := pod("prod-over-be").Label(slov1alpha1.LabelPriorityClass, "prod").Label(slov1alpha1.LabelQoSClass, "BE").Obj()
	unknown := pod("gold").Priority(5500).Label(slov1alpha1.LabelPriorityClassAlias, "koord-gold").Obj()
	done := pod("done").Priority(9500).Phase(corev1.PodSucceeded).Requests("cpu", "1").Obj()
	web2 := pod("web").UID("uid-web-2").Priority(9500).Requests("cpu", "1", "memory", "1Gi").Obj()
	lse := pod("lse").Priority(9500).Label(slov1alpha1.LabelQoSClass, "LSE").Requests("cpu", "2", "memory", "2Gi").Limits("cpu", "2", "memory", "2Gi").Obj()
	ghost := func(m *testutil.NodeMetricBuilder) {
		m.PodRecord("default", "ghost", "uid-ghost", slov1alpha1.PriorityProd, slov1alpha1.QoSLS, "cpu", "1", "memory", "2Gi")
	}
	tests := []rule{
		{name: "base", wantCPU: "4500", wantMem: "9216Mi",
			wantTerms:  map[string]string{"hpUsed": "500m", "hpUnattributed": "0", "reserved": "1", "annotationReserved": "0"},
			wantDetail: map[string]string{"annotationReserved": "no node reservation annotation"}},

		// Who is high-priority (slov1alpha1.ClassOf).
		{name: "a pod labelled BE without priority is batch", pods: []*corev1.Pod{beLabelled, beGleaner},
			usage: map[string][]string{"be-label": {"cpu", "2", "memory", "2Gi"}, "be-gleaner": {"cpu", "1", "memory", "1Gi"}},
			// Counted as high-priority, they would take 3000 / 3Gi: 1500 / 6144Mi.
			wantCPU: "4500", wantMem: "9216Mi", wantTerms: map[string]string{"hpRequests": "2"}},
		{name: "a BestEffort pod without labels or priority is batch", pods: []*corev1.Pod{bestEffort},
			usage: map[string][]string{"besteffort": {"cpu", "1", "memory", "1Gi"}}, wantCPU: "4500", wantMem: "9216Mi"},
		{name: "koord-batch label over a prod priority", pods: []*corev1.Pod{koordBatch},
			usage: map[string][]string{"koord-batch": {"cpu", "1", "memory", "1Gi"}}, wantCPU: "4500", wantMem: "9216Mi"},
		{name: "prod label over a BE QoS label", pods: []*corev1.Pod{prodOverBE},
			usage:   map[string][]string{"prod-over-be": {"cpu", "1", "memory", "1Gi"}},
			wantCPU: "3500", wantMem: "8192Mi"}, // 4500 - 1000; 9216Mi - 1024Mi
		{name: "an unknown priority-class value is prod", pods: []*corev1.Pod{unknown},
			usage:   map[string][]string{"gold": {"cpu", "1", "memory", "1Gi"}},
			wantCPU: "3500", wantMem: "8192Mi", // 4500 - 1000; 9216Mi - 1024Mi
			wantDetail: map[string]string{"hpRequests": "1 class labels of unknown value, such as koordinator.sh/priority-class=koord-gold"}},

		// Usage no active pod claims.
		{name: "a pod the manager does not hold counts", records: ghost,
			wantCPU: "3500", wantMem: "7168Mi", // 4500 - 1000; 9216Mi - 2048Mi
			wantTerms:  map[string]string{"hpUnattributed": "1", "hpUsed": "1500m"},
			wantDetail: map[string]string{"hpUnattributed": "usage of 1 NodeMetric pods not active in the manager's cache (0 batch/free left out)"}},
		{name: "records that say batch or free are left out",
			records: func(m *testutil.NodeMetricBuilder) {
				m.PodRecord("default", "b", "uid-b", slov1alpha1.PriorityBatch, slov1alpha1.QoSLS, "cpu", "1", "memory", "1Gi").
					PodRecord("default", "f", "uid-f", slov1alpha1.PriorityFree, "", "cpu", "1", "memory", "1Gi").
					PodRecord("default", "old-agent-be", "uid-o", slov1alpha1.PriorityNone, slov1alpha1.QoSBE, "cpu", "1", "memory", "1Gi")
			},
			wantCPU: "4500", wantMem: "9216Mi", wantTerms: map[string]string{"hpUnattributed": "0"},
			wantDetail: map[string]string{"hpUnattributed": "(3 batch/free left out)"}},
		{name: "a record without any class counts",
			records: func(m *testutil.NodeMetricBuilder) {
				m.PodRecord("default", "n", "uid-n", slov1alpha1.PriorityNone, slov1alpha1.QoSNone, "cpu", "1", "memory", "1Gi")
			},
			wantCPU: "3500", wantMem: "8192Mi"}, // 4500 - 1000; 9216Mi - 1024Mi
		{name: "the record of a Succeeded pod counts", pods: []*corev1.Pod{done},
			usage:   map[string][]string{"done": {"cpu", "1", "memory", "1Gi"}},
			wantCPU: "3500", wantMem: "8192Mi", wantTerms: map[string]string{"hpUnattributed": "1"}},
		{name: "a recreated pod: the old record counts, the new pod at its request", pods: []*corev1.Pod{web2},
			records: func(m *testutil.NodeMetricBuilder) {
				m.PodRecord("default", "web", "uid-web-1", slov1alpha1.PriorityProd, slov1alpha1.QoSLS, "cpu", "2", "memory", "1Gi")
			},
			// 4500 - 1000 (request of the new pod) - 2000 (old record); 9216Mi - 1024Mi - 1024Mi
			wantCPU: "1500", wantMem: "7168Mi", wantTerms: map[string]string{"hpUnattributed": "2"}},
		{name: "a record without UID is the pod of its name", pods: []*corev1.Pod{web2},
			records: func(m *testutil.NodeMetricBuilder) {
				m.PodRecord("default", "web", "", slov1alpha1.PriorityProd, slov1alpha1.QoSLS, "cpu", "300m", "memory", "512Mi")
			},
			wantCPU: "4200", wantMem: "8704Mi", // 4500 - 300; 9216Mi - 512Mi
			wantTerms: map[string]string{"hpUnattributed": "0"}},
		{name: "maxUsageRequest counts unattributed usage", records: ghost,
			strategy: func(s *sloconfig.ColocationStrategy) {
				s.CPUCalculatePolicy = ptr.To(sloconfig.CalculateByMaxUsageRequest)
				s.MemoryCalculatePolicy = ptr.To(sloconfig.CalculateByMaxUsageRequest)
			},
			// 10000 - 4000 - 1000 - max(500, 2000) - 1000; 20480 - 7168 - 1024 - max(3072, 4096) - 2048
			wantCPU: "2000", wantMem: "6144Mi"},
		{name: "the request policy does not count unattributed usage", records: ghost,
			strategy: func(s *sloconfig.ColocationStrategy) { s.MemoryCalculatePolicy = ptr.To(sloconfig.CalculateByRequest) },
			// cpu by usage: 4500 - 1000; mem: 20480 - 7168 - 1024 reserved - 4096 requested
			wantCPU: "3500", wantMem: "8192Mi"},

		// LSE pods hold their cores.
		{name: "an LSE pod's CPU counts at its request, its memory at usage", pods: []*corev1.Pod{lse},
			usage:   map[string][]string{"lse": {"cpu", "300m", "memory", "1Gi"}},
			wantCPU: "2500", wantMem: "8192Mi", // 4500 - 2000 request (not 300 used); 9216Mi - 1024Mi used
			wantDetail: map[string]string{"hpUsed": "usage of 2 high-priority pods (1 LSE at CPU request)"}},
		{name: "an LSE pod under maxUsageRequest", pods: []*corev1.Pod{lse},
			usage: map[string][]string{"lse": {"cpu", "300m", "memory", "1Gi"}},
			strategy: func(s *sloconfig.ColocationStrategy) {
				s.CPUCalculatePolicy = ptr.To(sloconfig.CalculateByMaxUsageRequest)
			},
			wantCPU: "1000", wantMem: "8192Mi"}, // 10000 - 4000 - 1000 - max(500, 2000) - max(300, 2000)

		// Node reservations: reserved = max(capacity - allocatable, annotation).
		{name: "an annotation above the kubelet's reservation",
			annotations: map[string]string{slov1alpha1.AnnotationNodeReservationAlias: `{"resources": {"cpu": "2", "memory": "3Gi"}}`},
			// 10000 - 4000 - max(500, 2000) - 500; 20480 - 7168 - max(1024, 3072) - 3072
			wantCPU: "3500", wantMem: "7168Mi",
			wantTerms:  map[string]string{"kubeletReserved": "1", "annotationReserved": "2", "reserved": "2", "systemUsed": "2"},
			wantDetail: map[string]string{"annotationReserved": "node annotation node.koordinator.sh/reservation"}},
		{name: "the kubelet's reservation above the annotation",
			annotations: map[string]string{slov1alpha1.AnnotationNodeReservation: `{"resources": {"cpu": "500m"}}`},
			wantCPU:     "4500", wantMem: "9216Mi", wantTerms: map[string]string{"annotationReserved": "500m", "reserved": "1"}},
		{name: "a reserved CPU list counts as that many cores",
			annotations: map[string]string{slov1alpha1.AnnotationNodeReservation: `{"reservedCPUs": "0-1,4"}`},
			wantCPU:     "2500", wantMem: "9216Mi", // 10000 - 4000 - max(500, 3000) - 500
			wantTerms: map[string]string{"annotationReserved": "3"}},
		{name: "a malformed annotation is treated as absent",
			annotations: map[string]string{slov1alpha1.AnnotationNodeReservationAlias: `{"reservedCPUs": 3}`},
			wantCPU:     "4500", wantMem: "9216Mi", wantTerms: map[string]string{"annotationReserved": "0", "reserved": "1"},
			wantDetail: map[string]string{"annotationReserved": "no node reservation annotation; node annotation node.koordinator.sh/reservation ignored: decoding"}},
		{name: "the request policy uses the annotation",
			annotations: map[string]string{slov1alpha1.AnnotationNodeReservation: `{"resources": {"memory": "3Gi"}}`},
			strategy:    func(s *sloconfig.ColocationStrategy) { s.MemoryCalculatePolicy = ptr.To(sloconfig.CalculateByRequest) },
			wantCPU:     "4500", wantMem: "6144Mi"}, // 20480 - 7168 - max(1024, 3072) - 4096

		// Host applications.
		{name: "a host application without priority or QoS class counts",
			records: func(m *testutil.NodeMetricBuilder) {
				m.HostAppQoS("agentd", slov1alpha1.PriorityNone, slov1alpha1.QoSNone, "cpu", "1", "memory", "1Gi")
			},
			// 10000 - 4000 - max(500 + 1000, 1000) - 500; 20480 - 7168 - max(1024 + 1024, 1024) - 3072
			wantCPU: "4000", wantMem: "8192Mi",
			wantDetail: map[string]string{"hostApplications": "1 host applications outside batch/free (1 without priority or QoS class)"}},
		{name: "a host application with QoS class BE and no priority is batch",
			records: func(m *testutil.NodeMetricBuilder) {
				m.HostAppQoS("yarn", "", slov1alpha1.QoSBE, "cpu", "1", "memory", "1Gi")
			},
			wantCPU: "4500", wantMem: "9216Mi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := node()
			n.Annotations = tt.annotations
			pods := append([]*corev1.Pod{base}, tt.pods...)
			m := testutil.NodeMetric("n1").Updated(now).SystemUsage("cpu", "500m", "memory", "1Gi").Pod(base, "cpu", "500m", "memory", "3Gi")
			for _, p := range tt.pods {
				if u, ok := tt.usage[p.Name]; ok {
					m.Pod(p, u...)
				}
			}
			if tt.records != nil {
				tt.records(m)
			}
			in := &framework.Input{Node: n, Pods: podcache.FromPods(pods...), Metric: m.Obj(), Strategy: strategy(tt.strategy), Now: now}
			items, err := New().Calculate(in)
			if err != nil {
				t.Fatal(err)
			}
			cpu, mem := &items[0], &items[1]
			if want := resource.MustParse(tt.wantCPU); cpu.Quantity.Cmp(want) != 0 {
				t.Errorf("batch-cpu = %s, want %s (%s)", cpu.Quantity, tt.wantCPU, terms(cpu))
			}
			if want := resource.MustParse(tt.wantMem); mem.Quantity.Cmp(want) != 0 {
				t.Errorf("batch-memory = %s, want %s (%s)", mem.Quantity, tt.wantMem, terms(mem))
			}
			for name, want := range tt.wantTerms {
				if got := term(cpu, name); got.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("batch-cpu term %s = %s, want %s", name, got.String(), want)
				}
			}
			for name, want := range tt.wantDetail {
				if got := detail(cpu, name); !strings.Contains(got, want) {
					t.Errorf("batch-cpu term %s detail = %q, want it to contain %q", name, got, want)
				}
			}
		})
	}
}

func detail(it *framework.ResourceItem, name string) string {
	for _, t := range it.Derivation.Terms {
		if t.Name == name {
			return t.Detail
		}
	}
	return "(no term " + name + ")"
}

// TestOutOfRangeReport: every usage the NodeMetric reports is held to [0, capacity] before it counts, and the
// derivation warns that it was. The base is TestAccountingRules's node (cpu 4500, memory 9216Mi). Unclamped, a
// negative usage would raise batch, and a quantity too large for an int64 of milli-units would read as 0.
func TestOutOfRangeReport(t *testing.T) {
	pod := testutil.Pod("p").Node("n1").Priority(9500).Requests("cpu", "2", "memory", "4Gi").Obj()
	tests := []struct {
		name        string
		metric      *testutil.NodeMetricBuilder
		wantCPU     string
		wantMem     string
		wantTerms   map[string]string // batch-cpu terms
		wantWarning string            // part of batch-cpu's warning; "" for none
	}{
		{name: "in range: no warning",
			metric:  testutil.NodeMetric("n1").Updated(now).SystemUsage("cpu", "500m", "memory", "1Gi").Pod(pod, "cpu", "500m", "memory", "3Gi"),
			wantCPU: "4500", wantMem: "9216Mi"},
		{name: "a negative pod usage counts as 0",
			// Unclamped: hpUsed -50000, calculated 55000, published at the 10000 cap.
			metric:  testutil.NodeMetric("n1").Updated(now).SystemUsage("cpu", "500m", "memory", "1Gi").Pod(pod, "cpu", "-50", "memory", "3Gi"),
			wantCPU: "5000", wantMem: "9216Mi", // 10000 - 4000 - 1000
			wantTerms:   map[string]string{"hpUsed": "0", "calculated": "5"},
			wantWarning: "NodeMetric n1 reports cpu outside [0, capacity 10]; clamped pod default/p -50 to 0"},
		{name: "a negative record of a pod the manager does not hold counts as 0",
			metric: testutil.NodeMetric("n1").Updated(now).SystemUsage("cpu", "500m", "memory", "1Gi").Pod(pod, "cpu", "500m", "memory", "3Gi").
				PodRecord("default", "ghost", "uid-ghost", slov1alpha1.PriorityProd, slov1alpha1.QoSLS, "cpu", "-8", "memory", "-8Gi"),
			wantCPU: "4500", wantMem: "9216Mi", wantTerms: map[string]string{"hpUnattributed": "0"},
			wantWarning: "clamped pod default/ghost -8 to 0"},
		{name: "a usage too large for int64 milli-units counts as the whole node",
			// 1E CPU and 1e30 bytes wrap to 0 in MilliValue and Value: unclamped, the pod would count as using nothing
			// (cpu 5000, memory 12288Mi).
			metric:  testutil.NodeMetric("n1").Updated(now).SystemUsage("cpu", "500m", "memory", "1Gi").Pod(pod, "cpu", "1E", "memory", "1e30"),
			wantCPU: "0", wantMem: "0",
			wantTerms:   map[string]string{"hpUsed": "10", "calculated": "-5"},
			wantWarning: "clamped pod default/p 1E to 10"},
		{name: "system and host application usage",
			// systemUsed = max(0 + 0, 1000 reserved); the warning lists the first three and counts the rest.
			metric: testutil.NodeMetric("n1").Updated(now).SystemUsage("cpu", "-3", "memory", "1Gi").Pod(pod, "cpu", "500m", "memory", "3Gi").
				NodeUsage("cpu", "-1").
				HostApp("a", slov1alpha1.PriorityProd, "cpu", "-1").HostApp("b", slov1alpha1.PriorityProd, "cpu", "-1"),
			wantCPU: "4500", wantMem: "9216Mi", wantTerms: map[string]string{"systemUsage": "0", "hostApplications": "0"},
			wantWarning: "clamped nodeUsage -1 to 0, systemUsage -3 to 0, host application a -1 to 0 and 1 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &framework.Input{Node: node(), Pods: podcache.FromPods(pod), Metric: tt.metric.Obj(), Strategy: strategy(nil), Now: now}
			items, err := New().Calculate(in)
			if err != nil {
				t.Fatal(err)
			}
			cpu, mem := &items[0], &items[1]
			if want := resource.MustParse(tt.wantCPU); cpu.Quantity.Cmp(want) != 0 {
				t.Errorf("batch-cpu = %s, want %s (%s)", cpu.Quantity, tt.wantCPU, terms(cpu))
			}
			if want := resource.MustParse(tt.wantMem); mem.Quantity.Cmp(want) != 0 {
				t.Errorf("batch-memory = %s, want %s (%s)", mem.Quantity, tt.wantMem, terms(mem))
			}
			for name, want := range tt.wantTerms {
				if got := term(cpu, name); got.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("batch-cpu term %s = %s, want %s", name, got.String(), want)
				}
			}
			got := strings.Join(cpu.Derivation.Warnings, "; ")
			if tt.wantWarning == "" && got != "" || !strings.Contains(got, tt.wantWarning) {
				t.Errorf("batch-cpu warnings = %q, want %q", got, tt.wantWarning)
			}
		})
	}
}

// TestMetricAheadOfTheClock: a report stamped more than framework.MaxClockSkew ahead of the manager's clock is not
// used; within the skew it is.
func TestMetricAheadOfTheClock(t *testing.T) {
	in := &framework.Input{Node: node(), Pods: podcache.FromPods(pods()...), Metric: metric().Updated(now.Add(10 * time.Minute)).Obj(), Strategy: strategy(nil), Now: now}
	items, err := New().Calculate(in)
	if err != nil {
		t.Fatal(err)
	}
	want := "degraded: NodeMetric n1 was updated at 2026-11-22T12:10:00Z, 10m0s ahead of the manager's clock, more than the clock skew allowed (1m0s)"
	for _, it := range items {
		if !it.Reset || it.Derivation.Reason != want {
			t.Errorf("%s: want reset with reason %q, got %+v", it.Name, want, it)
		}
	}
	in = &framework.Input{Node: node(), Pods: podcache.FromPods(pods()...), Metric: metric().Updated(now.Add(framework.MaxClockSkew)).Obj(), Strategy: strategy(nil), Now: now}
	if items, _ := New().Calculate(in); items[0].Reset {
		t.Errorf("a metric exactly MaxClockSkew ahead must still be used: %s", items[0].Message)
	}
}

// TestMemoryPressure: while the NodeMetric reports memory pressure, batch-memory is what the active batch pods
// request, less the pods the agent lists as evicted, whatever the calculation gives, and must reach the node at
// once (Urgent); batch-cpu is calculated as ever.
func TestMemoryPressure(t *testing.T) {
	holder := testutil.Pod("holder").Node("n1").Priority(5500).Requests(string(slov1alpha1.BatchMemory), "2Gi").Obj()
	queued := testutil.Pod("queued").Node("n1").Priority(5500).Phase(corev1.PodPending).Requests(string(slov1alpha1.BatchMemory), "512Mi").Obj()
	ended := testutil.Pod("ended").Node("n1").Priority(5500).Phase(corev1.PodFailed).Requests(string(slov1alpha1.BatchMemory), "4Gi").Obj()
	all := append(pods(), holder, queued, ended)
	since := now.Add(-10 * time.Second)
	busy := testutil.NodeMetric("n1").Updated(now).SystemUsage("cpu", "3", "memory", "8Gi").Pod(prod, "cpu", "9", "memory", "16Gi")
	tests := []struct {
		name       string
		metric     *slov1alpha1.NodeMetric
		wantMem    string
		wantKept   string // the batchKept term; "" for none
		wantUrgent bool
	}{
		// 6400Mi as in TestCalculate: the batch pods (2Gi + 2Gi + 512Mi) fit under it.
		{name: "no pressure", metric: metric().Obj(), wantMem: "6400Mi"},
		// batchPod 2Gi + holder 2Gi + queued 512Mi; the ended pod holds nothing.
		{name: "pressure, nothing evicted yet", metric: metric().MemoryPressure(since).Obj(), wantMem: "4608Mi", wantKept: "4608Mi", wantUrgent: true},
		{name: "pressure, the holder evicted", metric: metric().MemoryPressure(since, "uid-holder").Obj(), wantMem: "2560Mi", wantKept: "2560Mi", wantUrgent: true},
		{name: "pods listed that are gone change nothing", metric: metric().MemoryPressure(since, "uid-holder", "uid-gone").Obj(), wantMem: "2560Mi", wantKept: "2560Mi", wantUrgent: true},
		// The calculation gives 0, the floor lifts it to what the batch pods hold (4608Mi): under pressure the
		// evicted holder's share is not kept for it.
		{name: "pressure below the floor", metric: busy.MemoryPressure(since, "uid-holder").Obj(), wantMem: "2560Mi", wantKept: "2560Mi", wantUrgent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &framework.Input{Node: node(), Pods: podcache.FromPods(all...), Metric: tt.metric, Strategy: strategy(nil), Now: now}
			items, err := New().Calculate(in)
			if err != nil {
				t.Fatal(err)
			}
			cpu, mem := items[0], items[1]
			if want := resource.MustParse(tt.wantMem); mem.Quantity.Cmp(want) != 0 {
				t.Errorf("batch-memory = %s, want %s (%s)", mem.Quantity, tt.wantMem, terms(&mem))
			}
			if got := mem.Urgent != ""; got != tt.wantUrgent {
				t.Errorf("batch-memory urgent %q, want urgent %v", mem.Urgent, tt.wantUrgent)
			}
			if cpu.Urgent != "" {
				t.Errorf("batch-cpu urgent %q: memory pressure is not about CPU", cpu.Urgent)
			}
			if tt.wantKept == "" {
				if got := term(&mem, "batchKept"); got.Cmp(resource.MustParse("-999999")) != 0 {
					t.Errorf("batchKept term %s without memory pressure", got.String())
				}
				return
			}
			if got := term(&mem, "batchKept"); got.Cmp(resource.MustParse(tt.wantKept)) != 0 {
				t.Errorf("batchKept = %s, want %s", got.String(), tt.wantKept)
			}
			if want := "NodeMetric n1 reports memory pressure since 2026-11-22T11:59:50Z"; mem.Urgent != want || !strings.Contains(mem.Message, want) {
				t.Errorf("urgent %q, message %q; want both to say %q", mem.Urgent, mem.Message, want)
			}
			if !strings.HasPrefix(mem.Derivation.Formula, "at most batchKept while the NodeMetric reports memory pressure") {
				t.Errorf("formula %q does not say memory pressure caps it", mem.Derivation.Formula)
			}
		})
	}
	// batch-cpu does not move with memory pressure.
	in := func(m *slov1alpha1.NodeMetric) *framework.Input {
		return &framework.Input{Node: node(), Pods: podcache.FromPods(all...), Metric: m, Strategy: strategy(nil), Now: now}
	}
	without, _ := New().Calculate(in(metric().Obj()))
	with, _ := New().Calculate(in(metric().MemoryPressure(since, "uid-holder").Obj()))
	if without[0].Quantity.Cmp(*with[0].Quantity) != 0 {
		t.Errorf("batch-cpu %s under memory pressure, %s without", with[0].Quantity, without[0].Quantity)
	}
}
