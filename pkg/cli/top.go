// The top verb: what top nodes (top_nodes.go) and top pods (top_pods.go) share: the command and its flags, the
// state of a NodeMetric (staleness by the manager's rule, reported quantities clamped as the manager clamps them),
// the cells and the table.

package cli

import (
	"cmp"
	"context"
	"fmt"
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
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
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
	output           outputFlags
	allNamespaces    bool
	managerNamespace string
	sloConfigName    string
}

func newTopCommand(f *Factory) *cobra.Command {
	o := &topOptions{output: outputFlags{wide: true, name: true, table: true, plain: "the table"}}
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
	o.output.add(fl)
	o.output.complete(cmd)
	fl.StringVar(&o.managerNamespace, "manager-namespace", defaultManagerNamespace, "namespace of gleaner-manager's slo-controller-config (for degradeTimeMinutes)")
	fl.StringVar(&o.sloConfigName, "slo-config-name", defaultSLOConfigName, "name of gleaner-manager's SLO ConfigMap in --manager-namespace")

	cmd.AddCommand(newTopNodesCommand(f, o), newTopPodsCommand(f, o))
	return cmd
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

func validateTopFlags(o *topOptions, keys []string) (output, error) {
	if !slices.Contains(keys, o.sortBy) {
		return output{}, fmt.Errorf("--sort-by %q: want one of %s", o.sortBy, strings.Join(keys, ", "))
	}
	out, err := o.output.parse()
	if err != nil {
		return out, err
	}
	if o.selector != "" {
		if _, err := metav1.ParseToLabelSelector(o.selector); err != nil {
			return out, fmt.Errorf("-l %q: %w", o.selector, err)
		}
	}
	return out, nil
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

// topTable prints r as out asks when that is not a table (names gives -o name's lines), or, with no rows,
// kubectl's "No KIND found." on stderr and no header; either way done is true. Otherwise it returns the writer for
// the table.
func topTable(f *Factory, r any, names func() []string, out output, rows int, kind string) (tw *tabwriter.Writer, done bool, err error) {
	if done, err := printStructured(f.Out, r, names, out); done {
		return nil, true, err
	}
	if rows == 0 {
		_, err := fmt.Fprintf(f.ErrOut, "No %s found.\n", kind)
		return nil, true, err
	}
	return tabwriter.NewWriter(f.Out, 0, 8, 3, ' ', 0), false, nil
}
