package cli

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/allocation"
)

// newTopNodesCommand is `kubectl glean top nodes`; o holds the flags it shares with top pods.
func newTopNodesCommand(f *Factory, o *topOptions) *cobra.Command {
	nodes := &cobra.Command{
		Use:   "nodes [NODE...]",
		Short: "Per node: measured usage, requests and allocatable; batch and mid capacity, requests and use",
		Example: `  kubectl glean top nodes
  kubectl glean top nodes -l pool=batch --sort-by batch-cpu
  kubectl glean top nodes node-1 -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTopNodes(cmd.Context(), f, o, args)
		},
	}
	nodes.Flags().StringVar(&o.sortBy, "sort-by", "name", "name, cpu, memory (measured), cpu.requests, memory.requests, batch-cpu or batch-memory (measured use of batch pods); largest first")
	_ = nodes.RegisterFlagCompletionFunc("sort-by", cobra.FixedCompletions(topNodeKeys, cobra.ShellCompDirectiveNoFileComp))
	nodes.ValidArgsFunction = completeNodes(f)
	return nodes
}

// TopNodesReport is what `kubectl glean top nodes -o json` prints.
type TopNodesReport struct {
	// RequestsSource is where the requests come from: "NodeAllocation" or "live" (see Report.Source).
	RequestsSource string `json:"requestsSource"`
	// Nodes are the selected nodes, in the --sort-by order.
	Nodes []TopNode `json:"nodes"`
}

// TopNode is one node's line. CPU quantities are millicores and memory quantities bytes, whatever the resource
// (kubernetes.io/batch-cpu counts millicores already).
type TopNode struct {
	// Name is the node's name.
	Name string `json:"name"`
	// Metric is the state of the node's NodeMetric, where the measured values come from.
	Metric MetricState `json:"metric"`
	// CPU is the node's cpu: measured, requested (the sum of its pods' requests) and allocatable, in millicores.
	CPU NodeUse `json:"cpuMillicores"`
	// Memory is the node's memory, in bytes.
	Memory NodeUse `json:"memoryBytes"`
	// Batch is the batch capacity gleaner-manager publishes on the node, and what batch pods request and use.
	Batch TierUse `json:"batch"`
	// Mid is the same for the mid tier.
	Mid TierUse `json:"mid"`
}

// NodeUse is one resource of a node.
type NodeUse struct {
	// Used is the measured usage; nil without a NodeMetric that reports it.
	Used *int64 `json:"used"`
	// UsedPercent is Used as a percentage of Allocatable, truncated as kubectl top prints it.
	UsedPercent *int64 `json:"usedPercent,omitempty"`
	// Requests is the sum of the node's pods' requests.
	Requests int64 `json:"requests"`
	// RequestsPercent is Requests as a percentage of Allocatable, truncated as kubectl describe node prints it.
	RequestsPercent *int64 `json:"requestsPercent,omitempty"`
	// Allocatable is the node's allocatable.
	Allocatable int64 `json:"allocatable"`
}

// TierUse is a reclaimed tier (batch or mid) on a node.
type TierUse struct {
	// CPU is kubernetes.io/batch-cpu (or mid-cpu), in millicores.
	CPU TierResource `json:"cpuMillicores"`
	// Memory is kubernetes.io/batch-memory (or mid-memory), in bytes.
	Memory TierResource `json:"memoryBytes"`
}

// TierResource is one reclaimed resource of a node.
type TierResource struct {
	// Capacity is what the node's allocatable offers; nil when gleaner-manager publishes none on it.
	Capacity *int64 `json:"capacity"`
	// Requests is the sum of the node's pods' requests of the resource.
	Requests int64 `json:"requests"`
	// Used is what the tier's pods (priority class batch, or mid) use, measured; nil without a NodeMetric.
	Used *int64 `json:"used"`
}

// topNodeKeys are the --sort-by keys of top nodes.
var topNodeKeys = []string{"name", "cpu", "memory", "cpu.requests", "memory.requests", "batch-cpu", "batch-memory"}

func runTopNodes(ctx context.Context, f *Factory, o *topOptions, names []string) error {
	out, err := validateTopFlags(o, topNodeKeys)
	if err != nil {
		return err
	}
	cs, c, err := f.Clients()
	if err != nil {
		return err
	}
	nodes, err := listNodes(ctx, cs, o.selector, names)
	if err != nil {
		return err
	}
	metrics, err := listNodeMetrics(ctx, c)
	if err != nil {
		return err
	}
	judge, err := loadStaleness(ctx, f, cs, o)
	if err != nil {
		return err
	}
	alloc, err := allocationReport(ctx, f, cs, c, nodes, names, false, false)
	if err != nil {
		return err
	}
	summaries := make(map[string]allocation.Summary, len(alloc.Nodes))
	for _, n := range alloc.Nodes {
		summaries[n.Name] = n.summary
	}
	report := TopNodesReport{RequestsSource: alloc.Source, Nodes: make([]TopNode, 0, len(nodes))}
	for i := range nodes {
		node := &nodes[i]
		rd := reading{node: node, metric: metrics[node.Name], known: true}
		report.Nodes = append(report.Nodes, topNode(rd, judge.state(rd), summaries[node.Name]))
	}
	sortTopNodes(report.Nodes, o.sortBy)
	warnNodes(f, report.Nodes)
	return printTopNodes(f, report, out)
}

// topNode is one node's line, from its NodeMetric and its allocation summary.
func topNode(rd reading, state MetricState, s allocation.Summary) TopNode {
	node, m := rd.node, rd.metric
	t := TopNode{Name: node.Name, Metric: state}
	var usage corev1.ResourceList
	if m != nil && m.Status.NodeMetric != nil {
		usage = m.Status.NodeMetric.NodeUsage
	}
	for _, r := range []struct {
		name corev1.ResourceName
		use  *NodeUse
	}{{corev1.ResourceCPU, &t.CPU}, {corev1.ResourceMemory, &t.Memory}} {
		alloc := s.Allocatable[r.name]
		r.use.Allocatable = slov1alpha1.AmountOf(alloc, r.name)
		r.use.Requests = slov1alpha1.AmountOf(s.Requests[r.name], r.name)
		if p, ok := allocation.Percent(r.name, s.Requests[r.name], alloc); ok {
			r.use.RequestsPercent = &p
		}
		if q, ok := usage[r.name]; ok {
			r.use.Used = ptr.To(rd.amount(q, r.name))
			if r.use.Allocatable > 0 {
				r.use.UsedPercent = ptr.To(*r.use.Used * 100 / r.use.Allocatable)
			}
		}
	}
	tier := func(cpu, memory corev1.ResourceName, class slov1alpha1.PriorityClass) TierUse {
		var u TierUse
		for _, r := range []struct {
			name, base corev1.ResourceName
			res        *TierResource
		}{{cpu, corev1.ResourceCPU, &u.CPU}, {memory, corev1.ResourceMemory, &u.Memory}} {
			if q, ok := node.Status.Allocatable[r.name]; ok {
				r.res.Capacity = ptr.To(q.Value())
			}
			r.res.Requests = s.Requests.Name(r.name, resource.DecimalSI).Value()
			if m != nil && m.Status.NodeMetric != nil {
				r.res.Used = ptr.To(rd.tierUsage(class, r.base))
			}
		}
		return u
	}
	t.Batch = tier(slov1alpha1.BatchCPU, slov1alpha1.BatchMemory, slov1alpha1.PriorityBatch)
	t.Mid = tier(slov1alpha1.MidCPU, slov1alpha1.MidMemory, slov1alpha1.PriorityMid)
	return t
}

// tierUsage is the measured usage of r (cpu or memory) of the pods of one priority class the NodeMetric reports.
func (rd reading) tierUsage(class slov1alpha1.PriorityClass, r corev1.ResourceName) int64 {
	var sum int64
	for i := range rd.metric.Status.PodRecords() {
		if pm := rd.metric.Status.PodRecord(i); pm.Priority == class {
			q, _ := pm.Usage(r)
			sum += rd.amount(q, r)
		}
	}
	return sum
}

// warnNodes says, once per node, why its NodeMetric's numbers are not current and what reading them corrected.
func warnNodes(f *Factory, nodes []TopNode) {
	for _, n := range nodes {
		for _, w := range metricWarnings(n.Name, n.Metric, "its usage") {
			fmt.Fprintln(f.ErrOut, w)
		}
	}
}

func sortTopNodes(nodes []TopNode, key string) {
	value := func(n TopNode) *int64 {
		switch key {
		case "cpu":
			return n.CPU.Used
		case "memory":
			return n.Memory.Used
		case "cpu.requests":
			return &n.CPU.Requests
		case "memory.requests":
			return &n.Memory.Requests
		case "batch-cpu":
			return n.Batch.CPU.Used
		case "batch-memory":
			return n.Batch.Memory.Used
		}
		return nil
	}
	slices.SortStableFunc(nodes, func(a, b TopNode) int {
		return cmp.Or(largestFirst(value(a), value(b)), cmp.Compare(a.Name, b.Name))
	})
}

// withPercentCell is "750m (37%)", as kubectl describe node prints requests.
func withPercentCell(value string, p *int64) string {
	if p == nil {
		return value
	}
	return fmt.Sprintf("%s (%d%%)", value, *p)
}

// tierCell is USED/REQUESTED/CAPACITY of a reclaimed resource.
func tierCell(r TierResource, cell func(*int64) string) string {
	return cell(r.Used) + "/" + cell(&r.Requests) + "/" + cell(r.Capacity)
}

func printTopNodes(f *Factory, r TopNodesReport, out output) error {
	names := func() []string {
		var n []string
		for _, node := range r.Nodes {
			n = append(n, "node/"+node.Name)
		}
		return n
	}
	tw, done, err := topTable(f, r, names, out, len(r.Nodes), "nodes")
	if done {
		return err
	}
	wide := out.wide()
	header := "NODE\tCPU(cores)\tCPU%\tCPU REQUESTS\tMEMORY(bytes)\tMEMORY%\tMEMORY REQUESTS\tBATCH CPU USED/REQ/CAP\tBATCH MEMORY USED/REQ/CAP"
	if wide {
		header += "\tCPU ALLOCATABLE\tMEMORY ALLOCATABLE\tMID CPU USED/REQ/CAP\tMID MEMORY USED/REQ/CAP"
	}
	out.header(tw, header+"\tNODEMETRIC")
	for _, n := range r.Nodes {
		line := strings.Join([]string{n.Name,
			cpuCell(n.CPU.Used), percentCell(n.CPU.UsedPercent), withPercentCell(cpuCell(&n.CPU.Requests), n.CPU.RequestsPercent),
			memoryCell(n.Memory.Used), percentCell(n.Memory.UsedPercent), withPercentCell(memoryCell(&n.Memory.Requests), n.Memory.RequestsPercent),
			tierCell(n.Batch.CPU, cpuCell), tierCell(n.Batch.Memory, memoryCell)}, "\t")
		if wide {
			line += "\t" + strings.Join([]string{cpuCell(&n.CPU.Allocatable), memoryCell(&n.Memory.Allocatable),
				tierCell(n.Mid.CPU, cpuCell), tierCell(n.Mid.Memory, memoryCell)}, "\t")
		}
		fmt.Fprintln(tw, line+"\t"+metricCell(f, n.Metric))
	}
	return tw.Flush()
}
