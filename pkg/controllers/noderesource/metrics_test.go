package noderesource

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// derived is a derivation of batch-cpu ("cpu"), batch-memory ("mem") or mid-cpu ("mid-cpu"), published as value
// ("" for removed), with a term of 1.5 cores (1.5 bytes for memory) for each name in terms.
func derived(r string, value string, terms ...string) slov1alpha1.ResourceDerivation {
	name := map[string]corev1.ResourceName{"cpu": slov1alpha1.BatchCPU, "mem": slov1alpha1.BatchMemory, "mid-cpu": slov1alpha1.MidCPU}[r]
	d := slov1alpha1.ResourceDerivation{Resource: name}
	if value != "" {
		q := resource.MustParse(value)
		d.Value = &q
	}
	for _, t := range terms {
		d.Terms = append(d.Terms, slov1alpha1.DerivationTerm{Name: t, Value: resource.MustParse("1500m")})
	}
	return d
}

func TestMetricsFollowTheCalculation(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg, true)
	if err != nil {
		t.Fatal(err)
	}
	// Registries are per controller (injected); a second controller in the same one is a wiring mistake, said clearly.
	if _, err := newMetrics(reg, true); err == nil || !strings.Contains(err.Error(), "registering the noderesource metrics: duplicate") {
		t.Fatalf("second registration in one registry: want a duplicate-registration error, got %v", err)
	}
	nr := func(ds ...slov1alpha1.ResourceDerivation) *framework.NodeResource {
		return &framework.NodeResource{Derivations: ds}
	}
	count := func(names ...string) int {
		n := 0
		for _, name := range names {
			n += promtest.CollectAndCount(m.derivations, name)
		}
		return n
	}
	const (
		cpu, mem, termCPU, termMem = "gleaner_noderesource_cpu_cores", "gleaner_noderesource_memory_bytes",
			"gleaner_noderesource_term_cpu_cores", "gleaner_noderesource_term_memory_bytes"
		oldValue, oldTerm = "gleaner_noderesource_value", "gleaner_noderesource_term"
	)

	m.observe("n1", nr(derived("cpu", "1200", "capacity", "hpUsed"), derived("mem", "5", "capacity")), nodeStatus{})
	m.observe("n2", nr(derived("cpu", "300", "capacity", "hpUsed")), nodeStatus{})
	for _, c := range []struct {
		names []string
		want  int
	}{{[]string{cpu}, 2}, {[]string{mem}, 1}, {[]string{termCPU}, 4}, {[]string{termMem}, 1}, {[]string{oldValue}, 3}, {[]string{oldTerm}, 5}} {
		if n := count(c.names...); n != c.want {
			t.Errorf("%d %v series, want %d", n, c.names, c.want)
		}
	}
	// Each family in its one unit; the deprecated one as it was (CPU in millicores).
	want := `
# HELP gleaner_noderesource_cpu_cores CPU a node-resource plugin calculated for a node, in cores, by resource (kubernetes.io/batch-cpu, kubernetes.io/mid-cpu); absent when removed.
# TYPE gleaner_noderesource_cpu_cores gauge
gleaner_noderesource_cpu_cores{node="n1",resource="kubernetes.io/batch-cpu"} 1.2
gleaner_noderesource_cpu_cores{node="n2",resource="kubernetes.io/batch-cpu"} 0.3
# HELP gleaner_noderesource_memory_bytes Memory a node-resource plugin calculated for a node, in bytes, by resource (kubernetes.io/batch-memory, kubernetes.io/mid-memory); absent when removed.
# TYPE gleaner_noderesource_memory_bytes gauge
gleaner_noderesource_memory_bytes{node="n1",resource="kubernetes.io/batch-memory"} 5
`
	if err := promtest.CollectAndCompare(m.derivations, strings.NewReader(want), cpu, mem); err != nil {
		t.Error(err)
	}
	if err := promtest.CollectAndCompare(m.derivations, strings.NewReader(`
# HELP gleaner_noderesource_term_memory_bytes One term of the derivation of a memory resource of a node, in bytes, as kubectl glean explain shows it (with --noderesource-term-metrics).
# TYPE gleaner_noderesource_term_memory_bytes gauge
gleaner_noderesource_term_memory_bytes{node="n1",resource="kubernetes.io/batch-memory",term="capacity"} 1.5
# HELP gleaner_noderesource_value Deprecated: use gleaner_noderesource_cpu_cores and gleaner_noderesource_memory_bytes, one unit each; removed after one release. Reclaimed resource calculated for a node (CPU in millicores, memory in bytes); absent when removed.
# TYPE gleaner_noderesource_value gauge
gleaner_noderesource_value{node="n1",resource="kubernetes.io/batch-cpu"} 1200
gleaner_noderesource_value{node="n1",resource="kubernetes.io/batch-memory"} 5
gleaner_noderesource_value{node="n2",resource="kubernetes.io/batch-cpu"} 300
`), termMem, oldValue); err != nil {
		t.Error(err)
	}

	// n1's memory is reset and its cpu loses a term: their series go, n2's stay.
	m.observe("n1", nr(derived("cpu", "1100", "capacity"), derived("mem", "")), nodeStatus{})
	if n, o := count(cpu, mem, termCPU, termMem), count(oldValue, oldTerm); n != 5 || o != 5 {
		t.Errorf("%d series, %d deprecated after the reset, want 5 and 5", n, o)
	}
	m.forget("n1")
	m.forget("n2")
	if n := count(cpu, mem, termCPU, termMem, oldValue, oldTerm, "gleaner_noderesource_degraded"); n != 0 {
		t.Errorf("%d series left after the nodes went", n)
	}
}

func TestTermMetricsOff(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry(), false)
	if err != nil {
		t.Fatal(err)
	}
	m.observe("n1", &framework.NodeResource{Derivations: []slov1alpha1.ResourceDerivation{derived("cpu", "1200", "capacity", "hpUsed")}}, nodeStatus{})
	for _, name := range []string{"gleaner_noderesource_term_cpu_cores", "gleaner_noderesource_term"} {
		if n := promtest.CollectAndCount(m.derivations, name); n != 0 {
			t.Errorf("%d %s series with term metrics off", n, name)
		}
	}
	if n := promtest.CollectAndCount(m.derivations, "gleaner_noderesource_cpu_cores"); n != 1 {
		t.Errorf("%d value series, want 1", n)
	}
}

// TestNodeStatusSeries: every reconciled node has a degraded series, also one whose resources are all reset (the
// degraded node itself), and an update timestamp only while its NodeMetric has one.
func TestNodeStatusSeries(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry(), false)
	if err != nil {
		t.Fatal(err)
	}
	updated := time.Unix(1700000000, 500_000_000)
	m.observe("ok", &framework.NodeResource{Derivations: []slov1alpha1.ResourceDerivation{derived("cpu", "1200")}}, nodeStatus{metricUpdated: updated})
	m.observe("bad", &framework.NodeResource{Derivations: []slov1alpha1.ResourceDerivation{derived("cpu", "")}}, nodeStatus{degraded: true})
	want := `
# HELP gleaner_noderesource_degraded 1 when colocation is on for a node but its NodeMetric cannot be used (missing, without usage, older than degradeTimeMinutes, stamped ahead): its batch and mid resources are removed; else 0.
# TYPE gleaner_noderesource_degraded gauge
gleaner_noderesource_degraded{node="bad"} 1
gleaner_noderesource_degraded{node="ok"} 0
# HELP gleaner_noderesource_nodemetric_update_timestamp_seconds Unix time of the node's NodeMetric status.updateTime as the controller last read it; absent while the NodeMetric has none.
# TYPE gleaner_noderesource_nodemetric_update_timestamp_seconds gauge
gleaner_noderesource_nodemetric_update_timestamp_seconds{node="ok"} 1.7000000005e+09
`
	if err := promtest.CollectAndCompare(m.derivations, strings.NewReader(want),
		"gleaner_noderesource_degraded", "gleaner_noderesource_nodemetric_update_timestamp_seconds"); err != nil {
		t.Error(err)
	}
	m.forget("bad")
	if n := promtest.CollectAndCount(m.derivations, "gleaner_noderesource_degraded"); n != 1 {
		t.Errorf("%d degraded series after node bad went, want 1", n)
	}
}

// TestStatusOf: a node is degraded only with colocation on and an unusable NodeMetric.
func TestStatusOf(t *testing.T) {
	now := time.Now()
	fresh := &slov1alpha1.NodeMetric{Status: slov1alpha1.NodeMetricStatus{UpdateTime: &metav1.Time{Time: now.Add(-time.Minute)}, NodeMetric: &slov1alpha1.NodeMetricInfo{}}}
	old := &slov1alpha1.NodeMetric{Status: slov1alpha1.NodeMetricStatus{UpdateTime: &metav1.Time{Time: now.Add(-time.Hour)}, NodeMetric: &slov1alpha1.NodeMetricInfo{}}}
	strategy := func(on bool) *sloconfig.ColocationStrategy {
		return &sloconfig.ColocationStrategy{Enable: ptr.To(on), DegradeTimeMinutes: ptr.To[int64](15)}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	for _, tt := range []struct {
		name   string
		on     bool
		metric *slov1alpha1.NodeMetric
		want   bool
	}{
		{"fresh", true, fresh, false},
		{"stale", true, old, true},
		{"missing", true, nil, true},
		{"stale but colocation off", false, old, false},
		{"missing and colocation off", false, nil, false},
	} {
		st := statusOf(&framework.Input{Node: node, Strategy: strategy(tt.on), Metric: tt.metric, Now: now})
		if st.degraded != tt.want {
			t.Errorf("%s: degraded = %v, want %v", tt.name, st.degraded, tt.want)
		}
		if (tt.metric == nil) != st.metricUpdated.IsZero() {
			t.Errorf("%s: metricUpdated = %v", tt.name, st.metricUpdated)
		}
	}
}
