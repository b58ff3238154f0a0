package cli

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/allocation"
)

// newTopPodsCommand is `kubectl glean top pods`; o holds the flags it shares with top nodes.
func newTopPodsCommand(f *Factory, o *topOptions) *cobra.Command {
	pods := &cobra.Command{
		Use:   "pods [POD...]",
		Short: "Per pod: measured usage, requests, QoS and priority class",
		Example: `  kubectl glean top pods -A --sort-by cpu
  kubectl glean top pods -n spark -l spark-role=executor -o wide`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTopPods(cmd.Context(), f, o, args)
		},
	}
	pods.Flags().StringVar(&o.sortBy, "sort-by", "name", "name, cpu, memory (measured), cpu.requests or memory.requests; largest first")
	_ = pods.RegisterFlagCompletionFunc("sort-by", cobra.FixedCompletions(topPodKeys, cobra.ShellCompDirectiveNoFileComp))
	pods.ValidArgsFunction = completePods(f, &o.allNamespaces)
	pods.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list the pods of every namespace")
	return pods
}

// TopPodsReport is what `kubectl glean top pods -o json` prints.
type TopPodsReport struct {
	// Pods are the selected pods, in the --sort-by order.
	Pods []TopPod `json:"pods"`
}

// TopPod is one pod's line. CPU quantities are millicores, memory quantities bytes.
type TopPod struct {
	// Namespace and Name identify the pod.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Node is the node the pod is bound to.
	Node string `json:"node"`
	// QoS is the pod's Gleaner QoS class (LSE, LSR, LS, BE, SYSTEM) and Priority its priority class (prod, mid,
	// batch, free), as gleaner-manager and gleaner-agent decide them; KubeQoS is its Kubernetes QoS class.
	QoS      slov1alpha1.QoSClass      `json:"qos"`
	Priority slov1alpha1.PriorityClass `json:"priority"`
	KubeQoS  corev1.PodQOSClass        `json:"kubeQoS"`
	// CPU is the pod's measured usage and requests of cpu, in millicores; the requests count cpu,
	// kubernetes.io/batch-cpu and kubernetes.io/mid-cpu alike, whichever the pod requests.
	CPU PodUse `json:"cpuMillicores"`
	// Memory is the same for memory, batch-memory and mid-memory, in bytes.
	Memory PodUse `json:"memoryBytes"`
	// Requests are the pod's requests as its spec states them.
	Requests corev1.ResourceList `json:"requests"`
	// Metric is the state of the NodeMetric of the pod's node.
	Metric MetricState `json:"metric"`
}

// PodUse is one resource of a pod.
type PodUse struct {
	// Used is the measured usage; nil when the node's NodeMetric has no record of the pod (it started less than an
	// aggregate duration ago, or there is no NodeMetric).
	Used *int64 `json:"used"`
	// Requests is what the pod requests.
	Requests int64 `json:"requests"`
}

// topPodKeys are the --sort-by keys of top pods.
var topPodKeys = []string{"name", "cpu", "memory", "cpu.requests", "memory.requests"}

func runTopPods(ctx context.Context, f *Factory, o *topOptions, names []string) error {
	out, err := validateTopFlags(o, topPodKeys)
	if err != nil {
		return err
	}
	if o.allNamespaces && len(names) > 0 {
		return fmt.Errorf("a pod name cannot be given with -A: pod names are looked up in one namespace")
	}
	cs, c, err := f.Clients()
	if err != nil {
		return err
	}
	namespace := ""
	if !o.allNamespaces {
		if namespace, err = f.DefaultNamespace(); err != nil {
			return err
		}
	}
	pods, err := selectPods(ctx, cs, namespace, o.selector, names)
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
	nodes, err := listNodes(ctx, cs, "", nil)
	if err != nil {
		return err
	}
	report, warnings := topPods(pods, nodes, metrics, judge)
	sortTopPods(report.Pods, o.sortBy)
	for _, w := range warnings {
		fmt.Fprintln(f.ErrOut, w)
	}
	return printTopPods(f, report, out, o.allNamespaces)
}

// selectPods lists the running pods of namespace ("" for all) matching selector, only the named ones when names are
// given: a name no such pod has is an error.
func selectPods(ctx context.Context, cs kubernetes.Interface, namespace, selector string, names []string) ([]*corev1.Pod, error) {
	var pods []*corev1.Pod
	opts := metav1.ListOptions{LabelSelector: selector, FieldSelector: fields.AndSelectors(
		fields.OneTermNotEqualSelector("spec.nodeName", ""),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
	).String()}
	if err := listPodsIn(ctx, cs, namespace, opts, func(p *corev1.Pod) {
		if len(names) == 0 || slices.Contains(names, p.Name) {
			pods = append(pods, p)
		}
	}); err != nil {
		return nil, err
	}
	return pods, checkPodNames(names, pods, namespace)
}

// topPods builds the pods' lines, and the warning lines, sorted by node, about their nodes' NodeMetrics.
func topPods(pods []*corev1.Pod, nodes []corev1.Node, metrics map[string]*slov1alpha1.NodeMetric, judge *staleness) (TopPodsReport, []string) {
	byName := make(map[string]*corev1.Node, len(nodes))
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	report := TopPodsReport{Pods: make([]TopPod, 0, len(pods))}
	type nodeOfPods struct {
		rd    reading
		state MetricState
		index podIndex
	}
	seen := map[string]*nodeOfPods{}
	for _, pod := range pods {
		nodeName := pod.Spec.NodeName
		n, ok := seen[nodeName]
		if !ok {
			rd := reading{node: byName[nodeName], metric: metrics[nodeName], known: true}
			if rd.node == nil {
				// Bound to a node that is gone; the manager's staleness rule needs only its name and labels.
				rd.node, rd.known = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, false
			}
			n = &nodeOfPods{rd: rd, state: judge.state(rd), index: newPodIndex(rd.metric)}
			seen[nodeName] = n
		}
		report.Pods = append(report.Pods, topPod(pod, n.rd, n.index.record(pod), n.state))
	}
	var warnings []string
	for _, name := range slices.Sorted(maps.Keys(seen)) {
		warnings = append(warnings, metricWarnings(name, seen[name].state, "the usage of its pods")...)
	}
	return report, warnings
}

// checkPodNames reports the names no listed pod has, worded as kubectl words it.
func checkPodNames(names []string, pods []*corev1.Pod, namespace string) error {
	var unknown []string
	for _, name := range names {
		if !slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return p.Name == name }) {
			unknown = append(unknown, strconv.Quote(name))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	kind := "pod"
	if len(unknown) > 1 {
		kind = "pods"
	}
	return fmt.Errorf("%s %s not found in namespace %q (or not running on a node, or not matching -l)", kind, strings.Join(unknown, ", "), namespace)
}

// podIndex finds a pod's record in a NodeMetric by the manager's rule (framework.Input.PodUsage): by UID, or, for a
// record without one, by namespace and name, so a record of an earlier pod of the same name is never taken for the
// new one's. Records are the status's podUsages, or podsMetric for an agent from before them.
type podIndex map[string]*slov1alpha1.PodRecord

func newPodIndex(m *slov1alpha1.NodeMetric) podIndex {
	idx := podIndex{}
	if m == nil {
		return idx
	}
	for i := range m.Status.PodRecords() {
		pm := m.Status.PodRecord(i)
		if pm.UID != "" {
			idx["uid/"+pm.UID] = &pm
		} else {
			idx["name/"+pm.Namespace+"/"+pm.Name] = &pm
		}
	}
	return idx
}

func (idx podIndex) record(pod *corev1.Pod) *slov1alpha1.PodRecord {
	if pm, ok := idx["uid/"+string(pod.UID)]; ok {
		return pm
	}
	return idx["name/"+pod.Namespace+"/"+pod.Name]
}

// topPod is one pod's line, from its record pm (nil when there is none) in its node's NodeMetric.
func topPod(pod *corev1.Pod, rd reading, pm *slov1alpha1.PodRecord, state MetricState) TopPod {
	class := slov1alpha1.ClassOf(pod)
	reqs, _ := allocation.EffectivePodRequestsAndLimits(pod)
	t := TopPod{Namespace: pod.Namespace, Name: pod.Name, Node: pod.Spec.NodeName, QoS: class.QoS,
		Priority: class.Priority, KubeQoS: class.KubeQoS, Requests: reqs, Metric: state}
	t.CPU.Requests = slov1alpha1.AmountOf(reqs[corev1.ResourceCPU], corev1.ResourceCPU) +
		reqs.Name(slov1alpha1.BatchCPU, resource.DecimalSI).Value() + reqs.Name(slov1alpha1.MidCPU, resource.DecimalSI).Value()
	t.Memory.Requests = slov1alpha1.AmountOf(reqs[corev1.ResourceMemory], corev1.ResourceMemory) +
		reqs.Name(slov1alpha1.BatchMemory, resource.BinarySI).Value() + reqs.Name(slov1alpha1.MidMemory, resource.BinarySI).Value()
	if pm != nil {
		if q, ok := pm.Usage(corev1.ResourceCPU); ok {
			t.CPU.Used = ptr.To(rd.amount(q, corev1.ResourceCPU))
		}
		if q, ok := pm.Usage(corev1.ResourceMemory); ok {
			t.Memory.Used = ptr.To(rd.amount(q, corev1.ResourceMemory))
		}
	}
	return t
}

func sortTopPods(pods []TopPod, key string) {
	value := func(p TopPod) *int64 {
		switch key {
		case "cpu":
			return p.CPU.Used
		case "memory":
			return p.Memory.Used
		case "cpu.requests":
			return &p.CPU.Requests
		case "memory.requests":
			return &p.Memory.Requests
		}
		return nil
	}
	slices.SortStableFunc(pods, func(a, b TopPod) int {
		return cmp.Or(largestFirst(value(a), value(b)), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}

func printTopPods(f *Factory, r TopPodsReport, out output, allNamespaces bool) error {
	names := func() []string { // kubectl's -o name: pod/NAME, without the namespace
		var n []string
		for _, p := range r.Pods {
			n = append(n, "pod/"+p.Name)
		}
		return n
	}
	tw, done, err := topTable(f, r, names, out, len(r.Pods), "pods")
	if done {
		return err
	}
	wide := out.wide()
	header := "NAME\tCPU(cores)\tCPU REQUESTS\tMEMORY(bytes)\tMEMORY REQUESTS\tQOS\tPRIORITY"
	if allNamespaces {
		header = "NAMESPACE\t" + header
	}
	if wide {
		header += "\tKUBERNETES QOS\tNODE\tNODEMETRIC"
	}
	out.header(tw, header)
	for _, p := range r.Pods {
		cells := []string{p.Name, cpuCell(p.CPU.Used), cpuCell(&p.CPU.Requests), memoryCell(p.Memory.Used),
			memoryCell(&p.Memory.Requests), string(p.QoS), string(p.Priority)}
		if allNamespaces {
			cells = append([]string{p.Namespace}, cells...)
		}
		if wide {
			cells = append(cells, string(p.KubeQoS), p.Node, metricCell(f, p.Metric))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}
