package cli

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CompletionCommand is the name kubectl runs for a plugin's shell completion: `kubectl glean <TAB>` runs
// kubectl_complete-glean with the words typed after "glean", and takes cobra's __complete protocol back (kubectl
// 1.26 and later). kubectl-glean answers under that name too (a link to it, docs/kubectl-glean.md).
const CompletionCommand = "kubectl_complete-glean"

// completionTimeout bounds a completion's API call: the shell waits on it.
const completionTimeout = 5 * time.Second

// completeNodes completes node names from the cluster, leaving out those already on the line.
func completeNodes(f *Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		cs, _, err := f.Clients()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []cobra.Completion
		for _, n := range list.Items {
			if strings.HasPrefix(n.Name, toComplete) && !slices.Contains(args, n.Name) {
				names = append(names, n.Name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completePods completes pod names in the namespace kubectl would use (-n, else the context's); none with -A, which
// takes no names.
func completePods(f *Factory, allNamespaces *bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if *allNamespaces {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cs, _, err := f.Clients()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns, err := f.DefaultNamespace()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []cobra.Completion
		for _, p := range list.Items {
			if strings.HasPrefix(p.Name, toComplete) && !slices.Contains(args, p.Name) {
				names = append(names, p.Name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeOutput completes -o with the formats the verb takes.
func (o *outputFlags) complete(cmd *cobra.Command) {
	formats := o.formats()
	for i, f := range formats {
		formats[i] = strings.TrimSuffix(f, "TEMPLATE")
	}
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}
