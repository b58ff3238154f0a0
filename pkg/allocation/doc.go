// Package allocation is Gleaner's resource accounting: what a pod requests and limits and what the pods on a node
// add up to. The manager's nodeallocation controller and `kubectl glean` count through it, so they agree with each
// other and with Kubernetes. (The cgroup values the kubelet derives from a pod's resources are the node agent's
// business: pkg/agent/system/cgroup.)
//
// Pod requests and limits come from k8s.io/component-helpers/resource, the code the scheduler, the kubelet and
// kubectl share: init containers, restartable sidecars, pod overhead, pod-level resources and in-place resize are
// handled there, not here. On top of it this package adds what `kubectl describe node` does with those numbers:
// which pods count (Counted), the per-node totals (Totals, Summary), the percentages of allocatable truncated the way
// kubectl prints them (Percent) and the rows of its "Allocated resources" table (Summary.Rows).
package allocation
