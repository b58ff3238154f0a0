package noderesource

import (
	"strings"
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

	m.observe("n1", nr(derived("cpu", "1200", "capacity", "hpUsed"), derived("mem", "5", "capacity")))
	m.observe("n2", nr(derived("cpu", "300", "capacity", "hpUsed")))
	if n := count("gleaner_noderesource_term"); n != 5 {
		t.Fatalf("%d term series, want 5", n)
	}
	if n := count("gleaner_noderesource_value"); n != 3 {
		t.Fatalf("%d value series, want 3", n)
	}
	// n1's memory is reset and its cpu loses a term: their series go, n2's stay.
	m.observe("n1", nr(derived("cpu", "1100", "capacity"), derived("mem", "")))
	if n := count("gleaner_noderesource_term"); n != 3 {
		t.Errorf("%d term series after the reset, want 3", n)
	}
	if n := count("gleaner_noderesource_value"); n != 2 {
		t.Errorf("%d value series after the reset, want 2", n)
	}
	m.forget("n1")
	m.forget("n2")
	if n := count("gleaner_noderesource_term") + count("gleaner_noderesource_value"); n != 0 {
		t.Errorf("%d series left after the nodes went", n)
	}
}

func TestTermMetricsOff(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry(), false)
	if err != nil {
		t.Fatal(err)
	}
	m.observe("n1", &framework.NodeResource{Derivations: []slov1alpha1.ResourceDerivation{derived("cpu", "1200", "capacity", "hpUsed")}})
	if n := promtest.CollectAndCount(m.derivations, "gleaner_noderesource_term"); n != 0 {
		t.Errorf("%d term series with term metrics off", n)
	}
	if n := promtest.CollectAndCount(m.derivations, "gleaner_noderesource_value"); n != 1 {
		t.Errorf("%d value series, want 1", n)
	}
}
