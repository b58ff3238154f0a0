package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// pageSize is how many objects one list call returns, as kubectl's --chunk-size.
const pageSize = 500

// nodesOptions are the flags of `kubectl glean nodes`.
type nodesOptions struct {
	selector string
	sortBy   string
	output   outputFlags
	pods     bool
	live     bool
}

func newNodesCommand(f *Factory) *cobra.Command {
	o := &nodesOptions{output: outputFlags{wide: true, name: true, table: true, plain: "the table"}}
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
	o.output.add(fl)
	o.output.complete(cmd)
	cmd.ValidArgsFunction = completeNodes(f)
	fl.BoolVar(&o.pods, "pods", false, "also list each counted pod with its requests and limits (-n restricts the list, not the totals)")
	fl.BoolVar(&o.live, "live", false, "compute from the pods now instead of reading NodeAllocation objects")
	return cmd
}

func runNodes(ctx context.Context, f *Factory, o *nodesOptions, names []string) error {
	key, err := parseSortBy(o.sortBy)
	if err != nil {
		return err
	}
	out, err := o.output.parse()
	if err != nil {
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

	report, err := allocationReport(ctx, f, cs, c, nodes, names, o.live || o.pods, o.pods)
	if err != nil {
		return err
	}
	sortReports(report.Nodes, key)
	return printReport(f.Out, report, out, f.Clock)
}

// allocationReport is the allocation of nodes (selected by names, when given): from their NodeAllocations unless
// live is set or they cannot serve, else computed from the pods, with each node's pod rows when withPods.
func allocationReport(ctx context.Context, f *Factory, cs kubernetes.Interface, c client.Client, nodes []corev1.Node,
	names []string, live, withPods bool) (Report, error) {
	report := Report{Source: SourceLive}
	if !live {
		stored, err := fromNodeAllocations(ctx, f, c, nodes)
		if err != nil {
			return Report{}, err
		}
		if stored != nil {
			return Report{Source: SourceNodeAllocation, Nodes: stored}, nil
		}
	}
	totals := newLiveTotals(nodes, withPods, f.Namespace())
	if err := eachPod(ctx, cs, names, totals.add); err != nil {
		return Report{}, err
	}
	report.Nodes = totals.reports(nodes)
	return report, nil
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
		// Worded as kubectl words it (and as explain does): node "x" not found.
		kind := "node"
		if len(unknown) > 1 {
			kind = "nodes"
		}
		quoted := make([]string, len(unknown))
		for i, name := range unknown {
			quoted[i] = strconv.Quote(name)
		}
		return nil, fmt.Errorf("%s %s %s", kind, strings.Join(quoted, ", "), what)
	}
	return picked, nil
}

// eachPod calls visit with every pod that can count on a node: bound, phase neither Succeeded nor Failed (the API
// server filters). One named node narrows the pods to its own.
//
// It is one pod list: a watch-list (the API server streams the collection as watch events from its cache, which
// is how client-go's informers list since Kubernetes 1.35) when the server supports it, so decoding and counting
// overlap with the transfer; a paginated list, as kubectl's, otherwise.
func eachPod(ctx context.Context, cs kubernetes.Interface, names []string, visit func(*corev1.Pod)) error {
	sel := []fields.Selector{
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
	}
	if len(names) == 1 {
		sel = append(sel, fields.OneTermEqualSelector("spec.nodeName", names[0]))
	} else {
		sel = append(sel, fields.OneTermNotEqualSelector("spec.nodeName", ""))
	}
	selector := fields.AndSelectors(sel...).String()
	started, err := watchListPods(ctx, cs, selector, visit)
	if err == nil || started {
		return reachable(err)
	}
	return listPods(ctx, cs, selector, visit)
}

// watchListPods streams the pods matching selector, returning at the bookmark that ends the initial events.
// started reports whether any pod was visited: a failure before that can be retried with a plain list.
func watchListPods(ctx context.Context, cs kubernetes.Interface, selector string, visit func(*corev1.Pod)) (started bool, err error) {
	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{
		FieldSelector:        selector,
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	if err != nil {
		return false, fmt.Errorf("streaming pods: %w", err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Added:
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				visit(pod)
				started = true
			}
		case watch.Bookmark:
			if pod, ok := ev.Object.(*corev1.Pod); ok && pod.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
				return started, nil
			}
		case watch.Error:
			return started, fmt.Errorf("streaming pods: %w", apierrors.FromObject(ev.Object))
		}
	}
	if err := ctx.Err(); err != nil {
		return started, fmt.Errorf("streaming pods: %w", err)
	}
	return started, errors.New("streaming pods: the API server closed the stream before sending every pod")
}

// listPods lists the pods matching selector in pages, as kubectl's --chunk-size.
func listPods(ctx context.Context, cs kubernetes.Interface, selector string, visit func(*corev1.Pod)) error {
	return listPodsIn(ctx, cs, "", metav1.ListOptions{FieldSelector: selector}, visit)
}

// listPodsIn lists the pods of namespace ("" for all) matching opts' selectors in pages.
func listPodsIn(ctx context.Context, cs kubernetes.Interface, namespace string, opts metav1.ListOptions, visit func(*corev1.Pod)) error {
	opts.Limit = pageSize
	for {
		list, err := cs.CoreV1().Pods(namespace).List(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" {
			// The list took longer than the API server keeps a snapshot, and pods are already counted: a
			// partial count would be wrong, so give up with a clear message.
			return errors.New("listing pods: the list took too long and the API server expired it; try again")
		}
		if err != nil {
			return reachable(fmt.Errorf("listing pods: %w", err))
		}
		for i := range list.Items {
			visit(&list.Items[i])
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}

// reachable adds a hint to errors that mean the API server could not be reached at all.
func reachable(err error) error {
	if err == nil {
		return nil
	}
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
