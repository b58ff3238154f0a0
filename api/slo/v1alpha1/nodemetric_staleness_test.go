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
		name string
		m    *NodeMetric
		want string
	}{
		{"missing", nil, "NodeMetric n does not exist"},
		{"no usage yet", &NodeMetric{}, "NodeMetric n has no usage reported yet"},
		{"current", reported(now.Add(-time.Minute)), ""},
		{"exactly degradeTime old is still current", reported(now.Add(-15 * time.Minute)), ""},
		{"stale", reported(now.Add(-16 * time.Minute)), "NodeMetric n was last updated 16m0s ago, more than degradeTimeMinutes (15m0s)"},
		{"within the clock skew", reported(now.Add(MaxNodeMetricClockSkew)), ""},
		{"ahead of the clock", reported(now.Add(10 * time.Minute)), "NodeMetric n was updated at 2026-11-22T12:10:00Z, 10m0s ahead of the manager's clock, more than the clock skew allowed (1m0s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NodeMetricProblem("n", tt.m, 15*time.Minute, now); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
