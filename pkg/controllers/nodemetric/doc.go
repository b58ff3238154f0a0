// Package nodemetric is the controller that keeps one NodeMetric per Node: its spec.metricCollectPolicy comes from
// the node's colocation strategy (sloconfig.Snapshot.NodeMetricSpec); its status belongs to gleaner-agent and is
// never written here.
package nodemetric
