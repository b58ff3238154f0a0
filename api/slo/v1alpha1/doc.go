// Package v1alpha1 holds Gleaner's API, group slo.gleaner.sh, version v1alpha1.
//
// Every kind here is cluster-scoped and comes one per Node: it is named after the node and owned by it, so deleting
// the Node deletes it.
//
//   - NodeAllocation: what the pods bound to the node request and limit, per resource, with the same numbers
//     `kubectl describe node` prints under "Allocated resources". Written by gleaner-manager.
//   - NodeSLO: the node's merged QoS strategy (thresholds, per-class QoS, CPU burst, system settings, host
//     applications), projected from the slo-controller-config ConfigMap by gleaner-manager and enforced by
//     gleaner-agent.
//   - NodeMetric: how the agent collects (spec, written by gleaner-manager) and what it measured (status, written by
//     gleaner-agent); the input of the batch and mid resource calculation.
//   - NodeResourceExplanation: how gleaner-manager derived the batch and mid resources it last published on the
//     node, every term of it; read by `kubectl glean explain`, watched by nothing.
//
// +kubebuilder:object:generate=true
// +groupName=slo.gleaner.sh
package v1alpha1
