// Package cli is `kubectl glean`, Gleaner's kubectl plugin (binary kubectl-glean). NewRootCommand builds the
// command tree; every subcommand lives in its own file, gets the shared Factory (kubeconfig flags, clients, output
// streams, clock) and is added with one line in root.go:
//
//	kubectl glean nodes [NODE...]    the "Allocated resources" table of `kubectl describe node`, for many nodes at once
//
// The kubeconfig flags are kubectl's (--kubeconfig, --context, --cluster, --user, -n/--namespace, --server,
// --request-timeout, ...), read through client-go's clientcmd, so a plugin invocation behaves like kubectl's own.
package cli
