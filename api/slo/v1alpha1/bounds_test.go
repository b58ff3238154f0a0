package v1alpha1_test

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/config/crd"
)

// TestBoundsMatchTheCRDs: the markers carry the bounds as literals (a marker cannot name a constant); the agent and
// the manager use the constants. The generated schemas and the constants must say the same.
func TestBoundsMatchTheCRDs(t *testing.T) {
	crds, err := crd.Objects()
	if err != nil {
		t.Fatal(err)
	}
	schemaOf := func(kind, path string) *apiextensionsv1.JSONSchemaProps {
		t.Helper()
		for _, c := range crds {
			if c.Spec.Names.Kind != kind {
				continue
			}
			s := c.Spec.Versions[0].Schema.OpenAPIV3Schema
			for _, p := range strings.Split(path, ".") {
				next, ok := s.Properties[p]
				if !ok {
					t.Fatalf("%s has no %s (at %s)", kind, path, p)
				}
				s = &next
			}
			return s
		}
		t.Fatalf("no CRD of kind %s", kind)
		return nil
	}
	tests := []struct {
		kind, path string
		want       int64
	}{
		{"NodeMetric", "spec.metricCollectPolicy.aggregateDurationSeconds", slov1alpha1.MaxMetricAggregateDurationSeconds},
		{"NodeMetric", "spec.metricCollectPolicy.reportIntervalSeconds", slov1alpha1.MaxMetricReportIntervalSeconds},
		{"NodeSLO", "spec.resourceUsedThresholdWithBE.cpuEvictTimeWindowSeconds", slov1alpha1.MaxCPUEvictTimeWindowSeconds},
		{"NodeSLO", "spec.resourceUsedThresholdWithBE.pressureEvictWindowSeconds", slov1alpha1.MaxPressureEvictWindowSeconds},
		{"NodeSLO", "spec.resourceUsedThresholdWithBE.memoryEvictHoldSeconds", slov1alpha1.MaxMemoryEvictHoldSeconds},
		{"NodeSLO", "spec.cpuBurstStrategy.cfsQuotaBurstPeriodSeconds", slov1alpha1.MaxCFSQuotaBurstPeriodSeconds},
		{"NodeSLO", "spec.cpuBurstStrategy.cpuBurstPercent", slov1alpha1.MaxCPUBurstPercent},
		{"NodeSLO", "spec.cpuBurstStrategy.cfsQuotaBurstPercent", slov1alpha1.MaxCPUBurstPercent},
	}
	for _, tt := range tests {
		if s := schemaOf(tt.kind, tt.path); s.Maximum == nil || int64(*s.Maximum) != tt.want {
			t.Errorf("%s %s: schema maximum %v, constant %d", tt.kind, tt.path, s.Maximum, tt.want)
		}
	}
	if evicted := schemaOf("NodeMetric", "status.memoryPressure.evictedPods"); evicted.MaxItems == nil || *evicted.MaxItems != slov1alpha1.MaxMemoryPressurePods {
		t.Errorf("evictedPods: schema maxItems %v, constant %d", evicted.MaxItems, slov1alpha1.MaxMemoryPressurePods)
	}
	durations := schemaOf("NodeMetric", "spec.metricCollectPolicy.nodeAggregatePolicy.durations")
	if durations.MaxItems == nil || *durations.MaxItems != slov1alpha1.MaxAggregateDurations {
		t.Errorf("durations: schema maxItems %v, constant %d", durations.MaxItems, slov1alpha1.MaxAggregateDurations)
	}
	if len(durations.XValidations) != 1 || !strings.Contains(durations.XValidations[0].Rule, "duration('"+strings.TrimSuffix(slov1alpha1.MaxAggregateDuration.String(), "0m0s")+"')") {
		t.Errorf("durations: rule %v does not bound each window by %s", durations.XValidations, slov1alpha1.MaxAggregateDuration)
	}
}
