// Package reporter writes the node's NodeMetric status from the metric cache: the node's usage over the aggregate
// duration and its statistics over each configured window, the system usage, each pod's usage with its priority and
// QoS class, and each host application's usage. gleaner-manager's batch and mid plugins read it.
//
// It reports every reportIntervalSeconds of the NodeMetric's spec, leaves out series whose samples do not reach far
// enough back (after the agent restarted, or for a pod that just started), bounds the number of pods it lists,
// retries on conflict, and sends nothing when the status would not change.
package reporter
