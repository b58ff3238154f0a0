package cli

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/allocation"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// Where gleaner-manager's SLO ConfigMap is by default: the manager's --namespace and --slo-config-name.
const (
	defaultManagerNamespace = "gleaner-system"
	defaultSLOConfigName    = "slo-controller-config"
)

// topOptions are the flags of `kubectl glean top nodes` and `top pods`.
type topOptions struct {
	selector         string
	sortBy           string
	output           string
	allNamespaces    bool
	managerNamespace string
	sloConfigName    string
}

func newTopCommand(f *Factory) *cobra.Command {
	o := &topOptions{}
	cmd := &cobra.Command{
		Use:   "top nodes|pods",
		Short: "Measured CPU and memory next to requests, allocatable and the batch and mid capacity, from NodeMetric",
		Long: `Show measured usage as "kubectl top" does, but from the NodeMetric objects gleaner-agent writes (no
metrics-server needed), next to what the pods request, what the node can allocate, and the batch and mid capacity
gleaner-manager publishes on it (kubernetes.io/batch-cpu, batch-memory, mid-cpu, mid-memory) with what batch and mid
pods request and use of it.

Usage is averaged over the NodeMetric's aggregate duration (5 minutes by default). A node whose NodeMetric is
missing, has no usage yet, or is stale is said so: stale by gleaner-manager's own rule, older than the node's
degradeTimeMinutes in slo-controller-config (read from --manager-namespace; 15 minutes when it cannot be read).`,
	}
	fl := cmd.PersistentFlags()
	fl.StringVarP(&o.selector, "selector", "l", "", "label selector (nodes for top nodes, pods for top pods), e.g. -l app=spark")
	fl.StringVarP(&o.output, "output", "o", "", "output format: wide or json")
	fl.StringVar(&o.managerNamespace, "manager-namespace", defaultManagerNamespace, "namespace of gleaner-manager's slo-controller-config (for degradeTimeMinutes)")
	fl.StringVar(&o.sloConfigName, "slo-config-name", defaultSLOConfigName, "name of gleaner-manager's SLO ConfigMap in --manager-namespace")

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
	pods.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list the pods of every namespace")

	cmd.AddCommand(nodes, pods)
	return cmd
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

// MetricState says whether a NodeMetric's usage is current.
type MetricState struct {
	// State is "current", "stale" (it exists but gleaner-manager would not use it: too old, no usage yet, or stamped
	// ahead of the clock) or "missing".
	State string `json:"state"`
	// UpdateTime is when gleaner-agent last wrote it.
	UpdateTime *metav1.Time `json:"updateTime,omitempty"`
	// Problem says why it is not current, in gleaner-manager's words.
	Problem string `json:"problem,omitempty"`
	// Corrected says, per resource, which reported quantities lay outside [0, the node's capacity] and what they
	// were clamped to, in gleaner-manager's words: the numbers shown are the clamped ones, as the manager
	// calculates with them (slov1alpha1.ClampReported).
	Corrected []string `json:"corrected,omitempty"`
}

// States of a MetricState.
const (
	MetricCurrent = "current"
	MetricStale   = "stale"
	MetricMissing = "missing"
)

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

// topNodeKeys and topPodKeys are the --sort-by keys.
var (
	topNodeKeys = []string{"name", "cpu", "memory", "cpu.requests", "memory.requests", "batch-cpu", "batch-memory"}
	topPodKeys  = []string{"name", "cpu", "memory", "cpu.requests", "memory.requests"}
)

func validateTopFlags(o *topOptions, keys []string) error {
	if !slices.Contains(keys, o.sortBy) {
		return fmt.Errorf("--sort-by %q: want one of %s", o.sortBy, strings.Join(keys, ", "))
	}
	if o.output != outputTable && o.output != outputWide && o.output != outputJSON {
		return fmt.Errorf("-o %q: want wide or json (or nothing for the table)", o.output)
	}
	if o.selector != "" {
		if _, err := metav1.ParseToLabelSelector(o.selector); err != nil {
			return fmt.Errorf("-l %q: %w", o.selector, err)
		}
	}
	return nil
}

func runTopNodes(ctx context.Context, f *Factory, o *topOptions, names []string) error {
	if err := validateTopFlags(o, topNodeKeys); err != nil {
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
	return printTopNodes(f, report, o.output)
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

// reading is a node's NodeMetric read as gleaner-manager reads it: every quantity held to [0, the node's capacity]
// (slov1alpha1.ClampReported), so that a report of negative usage, or of more than an int64 of millicores holds,
// shows what the manager calculates with, and says so (corrections).
type reading struct {
	node *corev1.Node
	// metric is the node's NodeMetric, nil when it has none.
	metric *slov1alpha1.NodeMetric
	// known says whether node is the Node object; a pod bound to a node that is gone has only its name, and nothing
	// bounds the report but what an int64 holds.
	known bool
}

func (rd reading) bound(r corev1.ResourceName) int64 {
	if !rd.known {
		return math.MaxInt64
	}
	return slov1alpha1.ReportBound(rd.node, r)
}

// amount is a reported quantity of r in millicores (cpu) or bytes, clamped.
func (rd reading) amount(q resource.Quantity, r corev1.ResourceName) int64 {
	v, _ := slov1alpha1.ClampReported(q, r, rd.bound(r))
	return v
}

// corrections says, for cpu and memory, which reported quantities were clamped (slov1alpha1.NodeMetricOutOfRange).
func (rd reading) corrections() []string {
	var out []string
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if w := slov1alpha1.NodeMetricOutOfRange(rd.node.Name, rd.metric, r, rd.bound(r)); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// tierUsage is the measured usage of r (cpu or memory) of the pods of one priority class the NodeMetric reports.
func (rd reading) tierUsage(class slov1alpha1.PriorityClass, r corev1.ResourceName) int64 {
	var sum int64
	for _, pm := range rd.metric.Status.PodsMetric {
		if pm.EffectivePriority() == class {
			sum += rd.amount(pm.Usage[r], r)
		}
	}
	return sum
}

// listNodeMetrics returns the NodeMetrics by node name.
func listNodeMetrics(ctx context.Context, c client.Client) (map[string]*slov1alpha1.NodeMetric, error) {
	list := &slov1alpha1.NodeMetricList{}
	err := c.List(ctx, list)
	if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("listing NodeMetrics: the NodeMetric API (nodemetrics.slo.gleaner.sh) is not installed; is Gleaner installed in this cluster? %w", err)
	}
	if err != nil {
		return nil, reachable(fmt.Errorf("listing NodeMetrics: %w", err))
	}
	out := make(map[string]*slov1alpha1.NodeMetric, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// staleness judges NodeMetrics by gleaner-manager's rule (slov1alpha1.NodeMetricProblem) with each node's
// degradeTimeMinutes, taken from slo-controller-config as the manager takes it (sloconfig: defaults, the cluster
// strategy, the first matching nodeConfigs entry; a rejected value falls back on the last good one).
// pkg/sloconfig makes kubectl-glean 3.3 MB larger (38.7 MB to 42.0 MB, measured); parsing colocation-config here
// would be a second reading of the config that could drift from the manager's.
type staleness struct {
	config *sloconfig.Snapshot
	now    time.Time
}

// loadStaleness reads the SLO ConfigMap and its last good copy. One that does not exist is the manager's case too
// (the defaults apply); when the user may not read them, it says so and the defaults apply.
func loadStaleness(ctx context.Context, f *Factory, cs kubernetes.Interface, o *topOptions) (*staleness, error) {
	forbidden := false
	get := func(name string) (*corev1.ConfigMap, error) {
		cm, err := cs.CoreV1().ConfigMaps(o.managerNamespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil
		case apierrors.IsForbidden(err):
			forbidden = true
			return nil, nil
		case err != nil:
			return nil, reachable(fmt.Errorf("getting ConfigMap %s/%s: %w", o.managerNamespace, name, err))
		}
		return cm, nil
	}
	store := sloconfig.NewStore()
	lastGood, err := get(o.sloConfigName + "-last-good")
	if err != nil {
		return nil, err
	}
	if lastGood != nil {
		// A saved value that no longer passes is left out, as the manager leaves it out.
		_ = store.Restore(lastGood.Data)
	}
	cm, err := get(o.sloConfigName)
	if err != nil {
		return nil, err
	}
	if forbidden {
		fmt.Fprintf(f.ErrOut, "warning: cannot read ConfigMap %s/%s (forbidden: bind the Role gleaner-glean-config-reader); judging NodeMetrics stale by the default degradeTimeMinutes (%d)\n",
			o.managerNamespace, o.sloConfigName, *sloconfig.DefaultColocationStrategy().DegradeTimeMinutes)
		store = sloconfig.NewStore()
		cm = nil
	}
	store.Apply(cm)
	return &staleness{config: store.Current(), now: f.Clock.Now()}, nil
}

// state is the state of the node's NodeMetric, with what reading it corrected.
func (s *staleness) state(rd reading) MetricState {
	node, m := rd.node, rd.metric
	limit := time.Duration(ptr.Deref(s.config.Colocation(node.Labels).DegradeTimeMinutes, 0)) * time.Minute
	problem := slov1alpha1.NodeMetricProblem(node.Name, m, limit, s.now)
	switch {
	case m == nil:
		return MetricState{State: MetricMissing, Problem: problem}
	case problem != "":
		return MetricState{State: MetricStale, UpdateTime: m.Status.UpdateTime, Problem: problem, Corrected: rd.corrections()}
	}
	return MetricState{State: MetricCurrent, UpdateTime: m.Status.UpdateTime, Corrected: rd.corrections()}
}

// warnNodes says, once per node, why its NodeMetric's numbers are not current and what reading them corrected.
func warnNodes(f *Factory, nodes []TopNode) {
	for _, n := range nodes {
		for _, w := range metricWarnings(n.Name, n.Metric, "its usage") {
			fmt.Fprintln(f.ErrOut, w)
		}
	}
}

// metricWarnings are the warning lines about one node's NodeMetric; what names the numbers they concern.
func metricWarnings(node string, m MetricState, what string) []string {
	var out []string
	if m.Problem != "" {
		out = append(out, fmt.Sprintf("warning: node %s: %s; %s is not current", node, m.Problem, what))
	}
	for _, c := range m.Corrected {
		out = append(out, fmt.Sprintf("warning: node %s: %s; %s is shown clamped, as gleaner-manager reads it", node, c, what))
	}
	return out
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

// largestFirst orders larger values first and unknown (nil) ones last.
func largestFirst(a, b *int64) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return cmp.Compare(*b, *a)
}

func runTopPods(ctx context.Context, f *Factory, o *topOptions, names []string) error {
	if err := validateTopFlags(o, topPodKeys); err != nil {
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
	return printTopPods(f, report, o.output, o.allNamespaces)
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
// new one's.
type podIndex map[string]*slov1alpha1.PodMetricInfo

func newPodIndex(m *slov1alpha1.NodeMetric) podIndex {
	idx := podIndex{}
	if m == nil {
		return idx
	}
	for i := range m.Status.PodsMetric {
		pm := &m.Status.PodsMetric[i]
		if pm.UID != "" {
			idx["uid/"+pm.UID] = pm
		} else {
			idx["name/"+pm.Namespace+"/"+pm.Name] = pm
		}
	}
	return idx
}

func (idx podIndex) record(pod *corev1.Pod) *slov1alpha1.PodMetricInfo {
	if pm, ok := idx["uid/"+string(pod.UID)]; ok {
		return pm
	}
	return idx["name/"+pod.Namespace+"/"+pod.Name]
}

// topPod is one pod's line, from its record pm (nil when there is none) in its node's NodeMetric.
func topPod(pod *corev1.Pod, rd reading, pm *slov1alpha1.PodMetricInfo, state MetricState) TopPod {
	class := slov1alpha1.ClassOf(pod)
	reqs, _ := allocation.EffectivePodRequestsAndLimits(pod)
	t := TopPod{Namespace: pod.Namespace, Name: pod.Name, Node: pod.Spec.NodeName, QoS: class.QoS,
		Priority: class.Priority, KubeQoS: class.KubeQoS, Requests: reqs, Metric: state}
	t.CPU.Requests = slov1alpha1.AmountOf(reqs[corev1.ResourceCPU], corev1.ResourceCPU) +
		reqs.Name(slov1alpha1.BatchCPU, resource.DecimalSI).Value() + reqs.Name(slov1alpha1.MidCPU, resource.DecimalSI).Value()
	t.Memory.Requests = slov1alpha1.AmountOf(reqs[corev1.ResourceMemory], corev1.ResourceMemory) +
		reqs.Name(slov1alpha1.BatchMemory, resource.BinarySI).Value() + reqs.Name(slov1alpha1.MidMemory, resource.BinarySI).Value()
	if pm != nil {
		if q, ok := pm.Usage[corev1.ResourceCPU]; ok {
			t.CPU.Used = ptr.To(rd.amount(q, corev1.ResourceCPU))
		}
		if q, ok := pm.Usage[corev1.ResourceMemory]; ok {
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

// The units of kubectl top: cpu in millicores ("250m"), memory in mebibytes ("128Mi"), truncated.
func cpuCell(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v, 10) + "m"
}

func memoryCell(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v/(1024*1024), 10) + "Mi"
}

func percentCell(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10) + "%"
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

// metricCell is the NodeMetric's age, or what is wrong with it. A report stamped ahead of the clock (by less than
// the clock skew gleaner-manager allows, or stale for more) says how far ahead.
func metricCell(f *Factory, m MetricState) string {
	if m.State == MetricMissing {
		return "missing"
	}
	if m.UpdateTime == nil {
		return "stale (no usage yet)"
	}
	when := age(f.Clock, m.UpdateTime.Time)
	if ahead := m.UpdateTime.Sub(f.Clock.Now()); ahead > 0 {
		when = duration.HumanDuration(ahead) + " ahead"
	}
	if m.State == MetricStale {
		return "stale (" + when + ")"
	}
	return when
}

// topTable prints r encoded when format asks for it, or, with no rows, kubectl's "No KIND found." on stderr and no
// header; either way done is true. Otherwise it returns the writer for the table.
func topTable(f *Factory, r any, format string, rows int, kind string) (tw *tabwriter.Writer, done bool, err error) {
	if done, err := printEncoded(f.Out, r, format); done {
		return nil, true, err
	}
	if rows == 0 {
		_, err := fmt.Fprintf(f.ErrOut, "No %s found.\n", kind)
		return nil, true, err
	}
	return tabwriter.NewWriter(f.Out, 0, 8, 3, ' ', 0), false, nil
}

func printTopNodes(f *Factory, r TopNodesReport, format string) error {
	tw, done, err := topTable(f, r, format, len(r.Nodes), "nodes")
	if done {
		return err
	}
	wide := format == outputWide
	header := "NODE\tCPU(cores)\tCPU%\tCPU REQUESTS\tMEMORY(bytes)\tMEMORY%\tMEMORY REQUESTS\tBATCH CPU USED/REQ/CAP\tBATCH MEMORY USED/REQ/CAP"
	if wide {
		header += "\tCPU ALLOCATABLE\tMEMORY ALLOCATABLE\tMID CPU USED/REQ/CAP\tMID MEMORY USED/REQ/CAP"
	}
	fmt.Fprintln(tw, header+"\tNODEMETRIC")
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

func printTopPods(f *Factory, r TopPodsReport, format string, allNamespaces bool) error {
	tw, done, err := topTable(f, r, format, len(r.Pods), "pods")
	if done {
		return err
	}
	wide := format == outputWide
	header := "NAME\tCPU(cores)\tCPU REQUESTS\tMEMORY(bytes)\tMEMORY REQUESTS\tQOS\tPRIORITY"
	if allNamespaces {
		header = "NAMESPACE\t" + header
	}
	if wide {
		header += "\tKUBERNETES QOS\tNODE\tNODEMETRIC"
	}
	fmt.Fprintln(tw, header)
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
