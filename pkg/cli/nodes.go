package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// pageSize is how many objects one list call returns, as kubectl's --chunk-size.
const pageSize = 500

// nodesOptions are the flags of `kubectl glean nodes`.
type nodesOptions struct {
	selector string
	sortBy   string
	output   string
	pods     bool
	live     bool
}

func newNodesCommand(f *Factory) *cobra.Command {
	o := &nodesOptions{}
	cmd := &cobra.Command{
		Use:   "nodes [NODE...]",
		Short: "Requests and limits per node, as kubectl describe node's \"Allocated resources\", for many nodes at once",
		Long: `Show, for every node (or the named ones, or those matching -l), what its pods request and limit, per
resource, with the same numbers and percentages as "kubectl describe node": cpu, memory and ephemeral-storage,
then hugepages-*, then extended resources such as kubernetes.io/batch-cpu.

By default the totals come from the NodeAllocation objects gleaner-manager keeps current. With --live, or when
they are not there, they are computed here from one node list and one pod list. --pods adds a row per pod (and is
always live, from the same pod list, so rows and totals agree).`,
		Example: `  kubectl glean nodes
  kubectl glean nodes -l node-role.kubernetes.io/worker= --sort-by cpu.requests
  kubectl glean nodes node-1 --pods -n web
  kubectl glean nodes --live -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runNodes(cmd.Context(), f, o, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.selector, "selector", "l", "", "node label selector, e.g. -l zone=a,tier!=infra")
	fl.StringVar(&o.sortBy, "sort-by", "name", "name, or RESOURCE.requests / RESOURCE.limits (share of allocatable, largest first), e.g. cpu.requests")
	fl.StringVarP(&o.output, "output", "o", "", "output format: wide, json or yaml")
	fl.BoolVar(&o.pods, "pods", false, "also list each counted pod with its requests and limits (-n restricts the list, not the totals)")
	fl.BoolVar(&o.live, "live", false, "compute from the pods now instead of reading NodeAllocation objects")
	return cmd
}

func runNodes(ctx context.Context, f *Factory, o *nodesOptions, names []string) error {
	key, err := parseSortBy(o.sortBy)
	if err != nil {
		return err
	}
	if err := validateOutput(o.output); err != nil {
		return err
	}
	if o.selector != "" {
		if _, err := metav1.ParseToLabelSelector(o.selector); err != nil {
			return fmt.Errorf("-l %q: %w", o.selector, err)
		}
	}
	cs, c, err := f.Clients()
	if err != nil {
		return err
	}
	nodes, err := listNodes(ctx, cs, o.selector, names)
	if err != nil {
		return err
	}

	report := Report{Source: SourceLive}
	if !o.live && !o.pods {
		report.Nodes, err = fromNodeAllocations(ctx, f, c, nodes)
		if err != nil {
			return err
		}
		if report.Nodes != nil {
			report.Source = SourceNodeAllocation
		}
	}
	if report.Source == SourceLive {
		pods, err := listPods(ctx, cs, names)
		if err != nil {
			return err
		}
		report.Nodes = liveReports(nodes, pods, o.pods, f.Namespace())
	}
	sortReports(report.Nodes, key)
	return printReport(f.Out, report, o.output, f.Clock)
}

// fromNodeAllocations reads the nodes' NodeAllocations. It returns nil, after saying why on ErrOut, when they
// cannot serve (the API is not installed, or a node has none yet): the caller computes live instead.
func fromNodeAllocations(ctx context.Context, f *Factory, c client.Client, nodes []corev1.Node) ([]NodeReport, error) {
	list := &slov1alpha1.NodeAllocationList{}
	err := c.List(ctx, list)
	if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
		fmt.Fprintln(f.ErrOut, "warning: the NodeAllocation API is not installed; computing from the pods (--live)")
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing NodeAllocations: %w", err)
	}
	reports, missing := storedReports(nodes, list.Items)
	if len(missing) > 0 {
		fmt.Fprintf(f.ErrOut, "warning: no NodeAllocation for %s (is gleaner-manager running?); computing from the pods (--live)\n", abbreviate(missing))
		return nil, nil
	}
	if reports == nil {
		reports = []NodeReport{}
	}
	return reports, nil
}

// listNodes lists the nodes matching selector, or the named ones: an unknown name is an error.
func listNodes(ctx context.Context, cs kubernetes.Interface, selector string, names []string) ([]corev1.Node, error) {
	var nodes []corev1.Node
	opts := metav1.ListOptions{LabelSelector: selector, Limit: pageSize}
	if len(names) == 1 {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", names[0]).String()
	}
	for {
		list, err := cs.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, reachable(fmt.Errorf("listing nodes: %w", err))
		}
		nodes = append(nodes, list.Items...)
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	if len(names) == 0 {
		return nodes, nil
	}
	var picked []corev1.Node
	var unknown []string
	for _, name := range names {
		i := slices.IndexFunc(nodes, func(n corev1.Node) bool { return n.Name == name })
		if i < 0 {
			unknown = append(unknown, name)
			continue
		}
		picked = append(picked, nodes[i])
	}
	if len(unknown) > 0 {
		what := "not found"
		if selector != "" {
			what = "not found or not matching -l " + selector
		}
		return nil, fmt.Errorf("node %s %s", strings.Join(unknown, ", "), what)
	}
	return picked, nil
}

// listPods lists, in pages, every pod that can count on a node: bound, phase neither Succeeded nor Failed (the
// API server filters). One named node narrows the list to its pods.
func listPods(ctx context.Context, cs kubernetes.Interface, names []string) ([]corev1.Pod, error) {
	sel := []fields.Selector{
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
	}
	if len(names) == 1 {
		sel = append(sel, fields.OneTermEqualSelector("spec.nodeName", names[0]))
	} else {
		sel = append(sel, fields.OneTermNotEqualSelector("spec.nodeName", ""))
	}
	opts := metav1.ListOptions{FieldSelector: fields.AndSelectors(sel...).String(), Limit: pageSize}
	var pods []corev1.Pod
	for {
		list, err := cs.CoreV1().Pods("").List(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" {
			// The list took longer than the API server keeps a snapshot: start over in one piece.
			pods, opts.Continue, opts.Limit = nil, "", 0
			continue
		}
		if err != nil {
			return nil, reachable(fmt.Errorf("listing pods: %w", err))
		}
		pods = append(pods, list.Items...)
		if list.Continue == "" {
			return pods, nil
		}
		opts.Continue = list.Continue
	}
}

// reachable adds a hint to errors that mean the API server could not be reached at all.
func reachable(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return fmt.Errorf("%w (is the cluster reachable? check --kubeconfig and --context)", err)
}

func abbreviate(names []string) string {
	const most = 5
	if len(names) <= most {
		return "node " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("%d nodes (%s, ...)", len(names), strings.Join(names[:most], ", "))
}
