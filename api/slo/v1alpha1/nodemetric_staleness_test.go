package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeMetricProblem(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	reported := func(at time.Time) *NodeMetric {
		mt := metav1.NewTime(at)
		return &NodeMetric{Status: NodeMetricStatus{UpdateTime: &mt, NodeMetric: &NodeMetricInfo{}}}
	}
	tests := []struct {
		name   string
		m      *NodeMetric
		want   string
		reason string
	}{
		{"missing", nil, "NodeMetric n does not exist", ReasonNodeMetricMissing},
		{"no usage yet", &NodeMetric{}, "NodeMetric n has no usage reported yet", ReasonNodeMetricNoUsage},
		{"current", reported(now.Add(-time.Minute)), "", ReasonNodeMetricFresh},
		{"exactly degradeTime old is still current", reported(now.Add(-15 * time.Minute)), "", ReasonNodeMetricFresh},
		{"stale", reported(now.Add(-16 * time.Minute)), "NodeMetric n was last updated 16m0s ago, more than degradeTimeMinutes (15m0s)", ReasonNodeMetricStale},
		{"within the clock skew", reported(now.Add(MaxNodeMetricClockSkew)), "", ReasonNodeMetricFresh},
		{"ahead of the clock", reported(now.Add(10 * time.Minute)), "NodeMetric n was updated at 2026-11-22T12:10:00Z, 10m0s ahead of the manager's clock, more than the clock skew allowed (1m0s)", ReasonNodeMetricAheadOfClock},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NodeMetricProblem("n", tt.m, 15*time.Minute, now); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			reason, message := NodeMetricUsability("n", tt.m, 15*time.Minute, now)
			if reason != tt.reason {
				t.Errorf("reason %q, want %q", reason, tt.reason)
			}
			if tt.want != "" && message != tt.want {
				t.Errorf("message %q, want NodeMetricProblem's %q", message, tt.want)
			}
		})
	}
	if _, message := NodeMetricUsability("n", reported(now.Add(-time.Minute)), 15*time.Minute, now); message != "NodeMetric n was last updated 1m0s ago, within degradeTimeMinutes (15m0s)" {
		t.Errorf("a fresh report's message is %q", message)
	}
}
