// Package cli is `kubectl glean`, Gleaner's kubectl plugin (binary kubectl-glean). NewRootCommand builds the
// command tree; every subcommand lives in its own file, gets the shared Factory (kubeconfig flags, clients, output
// streams, clock) and is added with one line in root.go. The verbs (a test keeps this list complete):
//
//	kubectl glean nodes [NODE...]      the "Allocated resources" table of `kubectl describe node`, for many nodes at
//	                                   once, from the NodeAllocation objects or computed live (--live, --pods)
//	kubectl glean explain NODE...      why a node offers the batch and mid resources it does: every term of the
//	                                   calculation gleaner-manager published with them; and what gleaner-agent
//	                                   applies of the node's NodeSLO (its status's conditions)
//	kubectl glean top nodes|pods       measured usage (from NodeMetric, no metrics-server) next to requests,
//	                                   allocatable and the batch and mid capacity, as `kubectl top` prints usage
//	kubectl glean check                a preflight, before an install and after: whether the cluster and each node
//	                                   (kernel, container runtime, kubelet, architecture, NodeSLO) can run what
//	                                   Gleaner enforces, nodes of the same outcome on one line; exit status 1 on a
//	                                   failed check
//	kubectl glean version              the plugin's version, commit and Go version, as the binaries' --version
//
// nodes, explain, check and version take -o json and -o yaml (nodes also -o wide) for scripts; top takes -o json
// and -o wide.
//
// The kubeconfig flags are kubectl's (--kubeconfig, --context, --cluster, --user, -n/--namespace, --server,
// --request-timeout, ...), bound by client-go's clientcmd rather than k8s.io/cli-runtime's ConfigFlags (root.go
// says why), so a plugin invocation behaves like kubectl's own.
package cli
