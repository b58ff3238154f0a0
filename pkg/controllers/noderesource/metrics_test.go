package noderesource

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
)

func derived(r string, value string, terms ...string) slov1alpha1.ResourceDerivation {
	d := slov1alpha1.ResourceDerivation{Resource: corev1.ResourceName("x/" + r)}
	if value != "" {
		q := resource.MustParse(value)
		d.Value = &q
	}
	for _, t := range terms {
		d.Terms = append(d.Terms, slov1alpha1.DerivationTerm{Name: t, Value: resource.MustParse("1")})
	}
	return d
}

func TestMetricsFollowTheCalculation(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	nr := func(ds ...slov1alpha1.ResourceDerivation) *framework.NodeResource {
		return &framework.NodeResource{Derivations: ds}
	}
	m.observe("n1", nr(derived("cpu", "1200", "capacity", "hpUsed"), derived("mem", "5", "capacity")))
	m.observe("n2", nr(derived("cpu", "300", "capacity", "hpUsed")))
	if got := promtest.ToFloat64(m.value.WithLabelValues("n1", "x/cpu")); got != 1200 {
		t.Errorf("value = %v, want 1200", got)
	}
	if n := promtest.CollectAndCount(m.term); n != 5 {
		t.Fatalf("%d term series, want 5", n)
	}
	// n1's memory is reset and its cpu loses a term: their series go, n2's stay.
	m.observe("n1", nr(derived("cpu", "1100", "capacity"), derived("mem", "")))
	if n := promtest.CollectAndCount(m.term); n != 3 {
		t.Errorf("%d term series after the reset, want 3", n)
	}
	if n := promtest.CollectAndCount(m.value); n != 2 {
		t.Errorf("%d value series after the reset, want 2", n)
	}
	m.forget("n1")
	m.forget("n2")
	if n := promtest.CollectAndCount(m.term) + promtest.CollectAndCount(m.value); n != 0 {
		t.Errorf("%d series left after the nodes went", n)
	}
}
