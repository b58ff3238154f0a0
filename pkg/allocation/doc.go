// Package allocation is Gleaner's resource accounting: what a pod requests and limits, what the pods on a node add
// up to, and which cgroup values the kubelet derives from a pod's resources. The manager's nodeallocation
// controller, `kubectl glean` and the node agent all count through it, so they agree with each other and with
// Kubernetes.
//
// Pod requests and limits come from k8s.io/component-helpers/resource, the code the scheduler, the kubelet and
// kubectl share: init containers, restartable sidecars, pod overhead, pod-level resources and in-place resize are
// handled there, not here. On top of it this package adds what `kubectl describe node` does with those numbers:
// which pods count (Counted), the per-node totals (Totals, Summary), the percentages of allocatable truncated the way
// kubectl prints them (Percent) and the rows of its "Allocated resources" table (Summary.Rows).
//
// cgroup.go turns a pod's resources into the values the kubelet writes to its cgroups (cpu.shares, the CFS quota,
// the memory limit and their cgroup v2 forms) and names the pod's cgroup directory for both cgroup drivers.
package allocation
