package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// Explanation is one node's entry in `kubectl glean explain -o json|yaml`.
type Explanation struct {
	// Node is the node's name.
	Node string `json:"node"`
	// Published are the values on the node now, for the resources the explanation covers.
	Published corev1.ResourceList `json:"published,omitempty"`
	// Explanation is the status of the node's NodeResourceExplanation.
	Explanation slov1alpha1.NodeResourceExplanationStatus `json:"explanation"`
	// Disagreements name the resources whose value on the node is not the one explained, one line each; none when
	// the node carries exactly what the explanation explains.
	Disagreements []string `json:"disagreements,omitempty"`
	// NodeSLO is what the agent on the node reports of its NodeSLO; nil when the node has no NodeSLO, the agent has
	// not written its status, or the NodeSLO could not be read (a warning on stderr says so).
	NodeSLO *SLOStatus `json:"nodeSLO,omitempty"`

	// sloForbidden: the API server refused to give the NodeSLO, so the derivation says nothing of it.
	sloForbidden bool
}

// SLOStatus is the status of a node's NodeSLO next to the generation it describes: the conditions are those of
// the NodeSLO's current spec when ObservedGeneration equals Generation.
type SLOStatus struct {
	// Generation is the NodeSLO's metadata.generation.
	Generation int64 `json:"generation"`
	slov1alpha1.NodeSLOStatus
}

func newExplainCommand(f *Factory) *cobra.Command {
	output := &outputFlags{plain: "the readable derivation"}
	cmd := &cobra.Command{
		Use:   "explain NODE...",
		Short: "Why a node offers the batch and mid resources it does: every term of the calculation",
		Long: `Print how gleaner-manager derived the reclaimed resources (kubernetes.io/batch-cpu, batch-memory, mid-cpu,
mid-memory) it published on a node: the formula, the policy, every input and intermediate term, the NodeMetric it
used and its age, warnings (a NodeMetric quantity outside [0, capacity] that was clamped), or why a resource was
removed (colocation disabled, NodeMetric missing, stale or stamped ahead of the manager's clock). It also shows the
node's CPU normalization ratio and resource amplification ratios (node.koordinator.sh/cpu-normalization-ratio,
node.koordinator.sh/resource-amplification-ratio): each value, how it was found (the CPU model entry, the
hyper-threading and turbo state) and the slo-controller-config key and strategy or node label it came from. Last,
what gleaner-agent applies of the node's NodeSLO: one line per condition of its status (Applied, and each feature
the NodeSLO turns on), with the reason and message of a feature the node does not apply.

It reads the node and its NodeResourceExplanation and NodeSLO (same name): gleaner-manager writes the explanation
after the node's values, gleaner-agent the NodeSLO's status; it needs get on nodes, noderesourceexplanations and
nodeslos. When the values on the node are not the ones the explanation explains, it says so: the explanation lags
behind a newer write, or writing it failed, or something other than gleaner-manager changed the node.`,
		Example: `  kubectl glean explain node-1
  kubectl glean explain node-1 node-2 -o yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExplain(cmd.Context(), f, output, args)
		},
	}
	output.add(cmd.Flags())
	output.complete(cmd)
	cmd.ValidArgsFunction = completeNodes(f)
	return cmd
}

func runExplain(ctx context.Context, f *Factory, flags *outputFlags, names []string) error {
	out, err := flags.parse()
	if err != nil {
		return err
	}
	_, c, err := f.Clients()
	if err != nil {
		return err
	}
	var all []Explanation
	for _, name := range names {
		node := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("node %q not found", name)
			}
			return fmt.Errorf("getting node %s: %w", name, err)
		}
		exp := &slov1alpha1.NodeResourceExplanation{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, exp); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("node %s has no NodeResourceExplanation: gleaner-manager's noderesource controller has not published reclaimed resources on it yet, or not yet written their explanation, which follows the node's write (is gleaner-manager running, and has the slo-controller-config ConfigMap been loaded?)", name)
			}
			return fmt.Errorf("getting the NodeResourceExplanation of node %s: %w", name, err)
		}
		e := explanationOf(node, &exp.Status)
		switch st, err := nodeSLOStatus(ctx, c, name); {
		case apierrors.IsForbidden(err):
			fmt.Fprintf(f.ErrOut, "warning: node %s: its NodeSLO's status is left out: reading NodeSLOs is forbidden (bind the ClusterRole gleaner-glean-reader of this release, which grants get on nodeslos)\n", name)
			e.sloForbidden = true
		case err != nil:
			return err
		default:
			e.NodeSLO = st
		}
		all = append(all, e)
	}
	return printExplanations(f.Out, all, out, f.Clock)
}

// nodeSLOStatus reads the status of the NodeSLO of node name: nil when there is none, or the agent has not written
// its status (an agent older than the status, or none running on the node).
func nodeSLOStatus(ctx context.Context, c client.Client, name string) (*SLOStatus, error) {
	slo := &slov1alpha1.NodeSLO{}
	err := c.Get(ctx, client.ObjectKey{Name: name}, slo)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("getting the NodeSLO of node %s: %w", name, err)
	case slo.Status.ObservedGeneration == 0 && len(slo.Status.Conditions) == 0:
		return nil, nil
	}
	return &SLOStatus{Generation: slo.Generation, NodeSLOStatus: slo.Status}, nil
}

// explanationOf pairs a node's explanation with the values the node carries now, and says where they differ.
func explanationOf(node *corev1.Node, exp *slov1alpha1.NodeResourceExplanationStatus) Explanation {
	e := Explanation{Node: node.Name, Published: corev1.ResourceList{}, Explanation: *exp}
	for _, d := range e.Explanation.Annotations {
		v, ok := node.Annotations[d.Annotation]
		switch {
		case d.Value == nil && ok && !strings.HasPrefix(d.Reason, slov1alpha1.AnnotationKeptPrefix):
			e.Disagreements = append(e.Disagreements, fmt.Sprintf("%s: the node carries %s, explained as removed", d.Annotation, v))
		case d.Value != nil && (!ok || v != *d.Value):
			e.Disagreements = append(e.Disagreements, fmt.Sprintf("%s: the node carries %s, explained as %s", d.Annotation, orNone(v, ok), *d.Value))
		}
	}
	for _, d := range e.Explanation.Resources {
		q, ok := node.Status.Allocatable[d.Resource]
		if ok {
			e.Published[d.Resource] = q
		}
		switch {
		case d.Value == nil && ok:
			e.Disagreements = append(e.Disagreements, fmt.Sprintf("%s: the node carries %s, explained as not offered", d.Resource, q.String()))
		case d.Value != nil && (!ok || q.Cmp(*d.Value) != 0):
			e.Disagreements = append(e.Disagreements, fmt.Sprintf("%s: the node carries %s, explained as %s", d.Resource, publishedOrNone(q, ok), d.Value.String()))
		}
	}
	return e
}

func printExplanations(w io.Writer, all []Explanation, out output, clk clock.PassiveClock) error {
	if done, err := printStructured(w, all, nil, out); done {
		return err
	}
	for i, e := range all {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := printDerivation(w, e, clk); err != nil {
			return err
		}
	}
	return nil
}

// printDerivation writes one node's explanation as a short readable derivation.
func printDerivation(w io.Writer, e Explanation, clk clock.PassiveClock) error {
	exp := e.Explanation
	fmt.Fprintf(w, "Node %s: published %s (%s ago), colocation strategy: %s\n", e.Node,
		exp.UpdateTime.UTC().Format("2006-01-02 15:04:05 MST"), age(clk, exp.UpdateTime.Time), orDash(exp.Strategy))
	if c := meta.FindStatusCondition(exp.Conditions, slov1alpha1.NodeMetricUsable); c != nil {
		fmt.Fprintf(w, "NodeMetric when published: %s since %s: %s\n", c.Reason,
			c.LastTransitionTime.UTC().Format("2006-01-02 15:04:05 MST"), c.Message)
	}
	if len(e.Disagreements) > 0 {
		fmt.Fprintf(w, "warning: the node does not carry the values explained here (%s). gleaner-manager writes the explanation after the node: "+
			"it lags behind a newer write, or writing it failed (gleaner-manager logs the error and retries; "+
			"controller_runtime_reconcile_errors_total{controller=%q} counts the failures). If it stays so, something other than gleaner-manager changed the node.\n",
			strings.Join(e.Disagreements, "; "), "noderesource-explanation")
	}
	printAnnotations(w, exp.Annotations)
	for _, d := range exp.Resources {
		fmt.Fprintln(w)
		if d.Value == nil {
			fmt.Fprintf(w, "%s: not offered (plugin %s)\n  %s\n", d.Resource, d.Plugin, d.Reason)
			if q, ok := e.Published[d.Resource]; ok {
				fmt.Fprintf(w, "  warning: the node carries %s = %s, not nothing (see above)\n", d.Resource, q.String())
			}
			continue
		}
		fmt.Fprintf(w, "%s = %s  (plugin %s", d.Resource, valueText(d.Resource, *d.Value), d.Plugin)
		if d.MetricTime != nil {
			fmt.Fprintf(w, ", NodeMetric of %s, %s before publishing", d.MetricTime.UTC().Format("15:04:05"),
				exp.UpdateTime.Sub(d.MetricTime.Time).Truncate(1e9))
		}
		fmt.Fprintln(w, ")")
		if q, ok := e.Published[d.Resource]; !ok || q.Cmp(*d.Value) != 0 {
			fmt.Fprintf(w, "  warning: the node carries %s, not this value (see above)\n", publishedOrNone(q, ok))
		}
		for _, warning := range d.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", warning)
		}
		fmt.Fprintf(w, "  %s\n", d.Formula)
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		for _, t := range d.Terms {
			fmt.Fprintf(tw, "    %s\t%s\t%s\n", t.Name, termValue(d.Resource, t.Value), t.Detail)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(d.Zones) > 0 {
			var zones []string
			for z, q := range d.Zones {
				zones = append(zones, z+"="+q.String())
			}
			slices.Sort(zones)
			fmt.Fprintf(w, "  per NUMA zone: %s\n", strings.Join(zones, ", "))
		}
	}
	if e.sloForbidden {
		return nil
	}
	fmt.Fprintln(w)
	return printSLOStatus(w, e.NodeSLO, clk)
}

// printSLOStatus writes what the agent applies of the node's NodeSLO: a table of its status's conditions, the
// summary Applied first as the agent writes it.
func printSLOStatus(w io.Writer, st *SLOStatus, clk clock.PassiveClock) error {
	if st == nil {
		fmt.Fprintln(w, "no NodeSLO status: the agent has not written it (an agent older than this release, or not running on the node)")
		return nil
	}
	fmt.Fprintf(w, "NodeSLO (generation %d, observed %d):\n", st.Generation, st.ObservedGeneration)
	if st.ObservedGeneration < st.Generation {
		fmt.Fprintf(w, "  not every QoS plugin of the agent has run with generation %d yet: a condition may describe an older spec\n", st.Generation)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tCHANGED\tMESSAGE")
	for _, c := range st.Conditions {
		changed := "-"
		if !c.LastTransitionTime.IsZero() {
			changed = age(clk, c.LastTransitionTime.Time) + " ago"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", orDash(c.Type), orDash(string(c.Status)), orDash(c.Reason), changed, orDash(oneLine(c.Message)))
	}
	return tw.Flush()
}

// oneLine is s with every run of white space (a joined error's line breaks, tabs that would shift the table's
// columns) made one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// printAnnotations writes the node annotations gleaner-manager explains: the CPU normalization and amplification
// ratios, each with the configuration it came from.
func printAnnotations(w io.Writer, annotations []slov1alpha1.AnnotationDerivation) {
	for _, d := range annotations {
		fmt.Fprintln(w)
		if d.Value == nil {
			fmt.Fprintf(w, "%s: not set (plugin %s)\n", d.Annotation, d.Plugin)
		} else {
			fmt.Fprintf(w, "%s = %s  (plugin %s)\n", d.Annotation, *d.Value, d.Plugin)
		}
		if d.Reason != "" {
			fmt.Fprintf(w, "  %s\n", d.Reason)
		}
		if d.Source != "" {
			fmt.Fprintf(w, "  from %s\n", d.Source)
		}
	}
}

func orNone(v string, ok bool) string {
	if !ok {
		return "none"
	}
	return v
}

// valueText prints a published value with its unit. A reclaimed CPU resource is a count of millicores, which the
// API server writes as "3k": spelled out, it reads "3000 millicores (3 CPU)".
func valueText(r corev1.ResourceName, q resource.Quantity) string {
	if isCPU(r) {
		return fmt.Sprintf("%d millicores (%s CPU)", q.Value(), resource.NewMilliQuantity(q.Value(), resource.DecimalSI).String())
	}
	if approx := approxBytes(q); approx != "" {
		return fmt.Sprintf("%d bytes (%s)", q.Value(), approx)
	}
	return q.String()
}

// termValue prints a term: CPU terms are CPU quantities already; memory terms in bytes get an approximate
// binary-unit reading when they are not a round number.
func termValue(r corev1.ResourceName, q resource.Quantity) string {
	if isCPU(r) {
		return q.String()
	}
	if approx := approxBytes(q); approx != "" {
		return q.String() + " (" + approx + ")"
	}
	return q.String()
}

func isCPU(r corev1.ResourceName) bool { return strings.HasSuffix(string(r), "-cpu") }

// approxBytes renders a byte count that is not a round binary quantity as about so many Mi or Gi; "" when the
// quantity already prints in such units or is small.
func approxBytes(q resource.Quantity) string {
	v := q.Value()
	s := q.String()
	if v < 1<<20 && v > -(1<<20) || strings.HasSuffix(s, "i") {
		return ""
	}
	if v >= 1<<30 || v <= -(1<<30) {
		return fmt.Sprintf("≈%.2fGi", float64(v)/(1<<30))
	}
	return fmt.Sprintf("≈%.1fMi", float64(v)/(1<<20))
}

func publishedOrNone(q resource.Quantity, ok bool) string {
	if !ok {
		return "no value"
	}
	return q.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
