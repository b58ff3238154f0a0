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

// The reasons of NodeMetricUsability, which are the reasons of a NodeResourceExplanation's NodeMetricUsable
// condition: ReasonNodeMetricFresh when the report can be used, one of the others when it cannot.
const (
	// ReasonNodeMetricFresh: the report exists, carries node usage and is young enough.
	ReasonNodeMetricFresh = "Fresh"
	// ReasonNodeMetricMissing: the node has no NodeMetric.
	ReasonNodeMetricMissing = "Missing"
	// ReasonNodeMetricNoUsage: the agent has not reported the node's usage yet.
	ReasonNodeMetricNoUsage = "NoUsage"
	// ReasonNodeMetricAheadOfClock: the report is stamped further ahead of the reader's clock than
	// MaxNodeMetricClockSkew.
	ReasonNodeMetricAheadOfClock = "AheadOfClock"
	// ReasonNodeMetricStale: the report is older than degradeTimeMinutes.
	ReasonNodeMetricStale = "Stale"
)

// NodeMetricProblem says why the NodeMetric m of node cannot be used as the node's usage at now, or "" when it can
// (NodeMetricUsability).
//
// It is the one rule: gleaner-manager removes a node's batch and mid resources by it, and `kubectl glean top`
// reports a node's NodeMetric as stale by it.
func NodeMetricProblem(node string, m *NodeMetric, degradeTime time.Duration, now time.Time) string {
	if reason, message := NodeMetricUsability(node, m, degradeTime, now); reason != ReasonNodeMetricFresh {
		return message
	}
	return ""
}

// NodeMetricUsability says whether the NodeMetric m of node can be used as the node's usage at now, as a reason
// (ReasonNodeMetric...) and a message: it must exist (m nil means it does not), carry node usage, be no older than
// degradeTime (the colocation strategy's degradeTimeMinutes), and not be stamped further ahead of now than
// MaxNodeMetricClockSkew.
func NodeMetricUsability(node string, m *NodeMetric, degradeTime time.Duration, now time.Time) (reason, message string) {
	switch {
	case m == nil:
		return ReasonNodeMetricMissing, "NodeMetric " + node + " does not exist"
	case m.Status.UpdateTime == nil || m.Status.NodeMetric == nil:
		return ReasonNodeMetricNoUsage, "NodeMetric " + node + " has no usage reported yet"
	}
	if ahead := m.Status.UpdateTime.Sub(now); ahead > MaxNodeMetricClockSkew {
		return ReasonNodeMetricAheadOfClock, fmt.Sprintf("NodeMetric %s was updated at %s, %s ahead of the manager's clock, more than the clock skew allowed (%s)",
			node, m.Status.UpdateTime.UTC().Format(time.RFC3339), ahead.Truncate(time.Second), MaxNodeMetricClockSkew)
	}
	age := now.Sub(m.Status.UpdateTime.Time)
	if age > degradeTime {
		return ReasonNodeMetricStale, fmt.Sprintf("NodeMetric %s was last updated %s ago, more than degradeTimeMinutes (%s)",
			node, age.Truncate(time.Second), degradeTime)
	}
	return ReasonNodeMetricFresh, fmt.Sprintf("NodeMetric %s was last updated %s ago, within degradeTimeMinutes (%s)",
		node, max(age, 0).Truncate(time.Second), degradeTime)
}
