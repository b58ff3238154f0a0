// Package slostatus writes the status of the node's NodeSLO: for each feature the spec turns on (a QoS plugin's
// strategy, the runtime hook), whether the node applies it, and if not why — the kernel lacks it, the runtime has
// no NRI, the agent lacks a privilege, the plugin refused a value — with NodeSLOApplied summing them up and
// observedGeneration naming the spec they describe. `kubectl get nodeslo` shows the summary, `kubectl glean explain`
// every condition, and the metric gleaner_agent_nodeslo_applied feeds the alert GleanerNodeSLONotApplied.
//
// The writer compares the conditions with the status every DefaultInterval and patches it only when they differ,
// keeping each condition's lastTransitionTime while its status holds; the agent is the status's only writer.
package slostatus
