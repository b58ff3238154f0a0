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

func derived(r string, value string, terms ...string) slov1alpha1.ResourceDerivation {
	d := slov1alpha1.ResourceDerivation{Resource: corev1.ResourceName("x/" + r)}
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
	count := func(name string) int { return promtest.CollectAndCount(m.derivations, name) }

	m.observe("n1", nr(derived("cpu", "1200", "capacity", "hpUsed"), derived("mem", "5", "capacity")), nodeStatus{})
	m.observe("n2", nr(derived("cpu", "300", "capacity", "hpUsed")), nodeStatus{})
	if n := count("gleaner_noderesource_term"); n != 5 {
		t.Fatalf("%d term series, want 5", n)
	}
	if n := count("gleaner_noderesource_value"); n != 3 {
		t.Fatalf("%d value series, want 3", n)
	}
	// n1's memory is reset and its cpu loses a term: their series go, n2's stay.
	m.observe("n1", nr(derived("cpu", "1100", "capacity"), derived("mem", "")), nodeStatus{})
	if n := count("gleaner_noderesource_term"); n != 3 {
		t.Errorf("%d term series after the reset, want 3", n)
	}
	if n := count("gleaner_noderesource_value"); n != 2 {
		t.Errorf("%d value series after the reset, want 2", n)
	}
	m.forget("n1")
	m.forget("n2")
	if n := count("gleaner_noderesource_term") + count("gleaner_noderesource_value") + count("gleaner_noderesource_degraded"); n != 0 {
		t.Errorf("%d series left after the nodes went", n)
	}
}

func TestTermMetricsOff(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry(), false)
	if err != nil {
		t.Fatal(err)
	}
	m.observe("n1", &framework.NodeResource{Derivations: []slov1alpha1.ResourceDerivation{derived("cpu", "1200", "capacity", "hpUsed")}}, nodeStatus{})
	if n := promtest.CollectAndCount(m.derivations, "gleaner_noderesource_term"); n != 0 {
		t.Errorf("%d term series with term metrics off", n)
	}
	if n := promtest.CollectAndCount(m.derivations, "gleaner_noderesource_value"); n != 1 {
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
