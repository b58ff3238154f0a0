package v1alpha1

import (
	"fmt"
	"time"
)

// MaxNodeMetricClockSkew is how far a NodeMetric's updateTime may be ahead of the reader's clock and still be used.
// The agent stamps its report with its node's clock; an NTP-synchronised node is off by milliseconds, so a minute
// forgives a badly kept clock, and it is the most a wrong or hostile clock can add to a report's life beyond
// degradeTimeMinutes (15 by default). Without the bound, a report stamped a year ahead would never go stale.
const MaxNodeMetricClockSkew = time.Minute

// NodeMetricProblem says why the NodeMetric m of node cannot be used as the node's usage at now, or "" when it can:
// it must exist (m nil means it does not), carry node usage, be no older than degradeTime (the colocation
// strategy's degradeTimeMinutes), and not be stamped further ahead of now than MaxNodeMetricClockSkew.
//
// It is the one rule: gleaner-manager removes a node's batch and mid resources by it, and `kubectl glean top`
// reports a node's NodeMetric as stale by it.
func NodeMetricProblem(node string, m *NodeMetric, degradeTime time.Duration, now time.Time) string {
	switch {
	case m == nil:
		return "NodeMetric " + node + " does not exist"
	case m.Status.UpdateTime == nil || m.Status.NodeMetric == nil:
		return "NodeMetric " + node + " has no usage reported yet"
	}
	if ahead := m.Status.UpdateTime.Sub(now); ahead > MaxNodeMetricClockSkew {
		return fmt.Sprintf("NodeMetric %s was updated at %s, %s ahead of the manager's clock, more than the clock skew allowed (%s)",
			node, m.Status.UpdateTime.UTC().Format(time.RFC3339), ahead.Truncate(time.Second), MaxNodeMetricClockSkew)
	}
	if age := now.Sub(m.Status.UpdateTime.Time); age > degradeTime {
		return fmt.Sprintf("NodeMetric %s was last updated %s ago, more than degradeTimeMinutes (%s)",
			node, age.Truncate(time.Second), degradeTime)
	}
	return ""
}
