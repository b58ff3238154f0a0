package noderesource

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
	"github.com/gleaner-sh/gleaner/pkg/controllers/podcache"
	"github.com/gleaner-sh/gleaner/pkg/controllers/retry"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// Name is the controller's name.
const Name = "noderesource"

// Why each permission: nodes are read and their status patched with the resources; pods and
// NodeMetrics are read (cache) as inputs; NodeResourceTopologies are read and their zones updated when the CRD
// exists; events are recorded on nodes (whose events live in the default namespace) when a plugin fails or a node's
// reservation annotation does not parse.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=slo.gleaner.sh,resources=nodemetrics,verbs=get;list;watch
// +kubebuilder:rbac:groups=topology.node.k8s.io,resources=noderesourcetopologies,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=events.k8s.io,namespace=default,resources=events,verbs=create;patch

// Options configure the controller.
type Options struct {
	// Plugins selects the plugins to run: "*" for all, "name" to add one, "-name" to leave one out.
	Plugins []string
	// Workers is the number of nodes reconciled concurrently.
	Workers int
	// TermMetrics exports every derivation term as the gleaner_noderesource_term_cpu_cores and _memory_bytes gauges
	// (about 50 series per node, as many again in the deprecated gleaner_noderesource_term while it is kept); off
	// (the default), only the values are exported. On, a scrape at 2,000 nodes cost the manager 0.66 s of CPU
	// (100,000 series) before the deprecated copy, more than a minute of NodeMetric updates; kubectl glean explain
	// shows the same terms.
	TermMetrics bool
	// ExplanationQPS is the rate of the requests that write the NodeResourceExplanations, a rate limit of their own
	// beside the manager's: they never hold up a Node write.
	ExplanationQPS float32
}

// DefaultOptions returns the defaults.
func DefaultOptions() Options {
	return Options{Plugins: []string{"*"}, Workers: 8, TermMetrics: false, ExplanationQPS: 10}
}

// Controller publishes reclaimed resources on nodes.
type Controller struct {
	registry   *framework.Registry
	config     *sloconfig.Store
	clock      clock.WithTicker
	metricsReg prometheus.Registerer
	opts       Options

	client   client.Client
	recorder events.EventRecorder
	topology bool
	// cache reads the NodeResourceTopology objects. The manager's client reads typed objects from its cache but
	// unstructured ones from the API server, which cost one GET per reconcile (a 404 for every node without one:
	// 6,000 a pass at 2,000 nodes, more than a 30 QPS client sends, so the queue grew without end). The
	// controller watches them, so the cache holds every one, and a missing one is known to be missing.
	cache client.Reader
	// nodeStore and metricStore are the Node and NodeMetric informers' stores, read without the copy the client
	// makes (a NodeMetric carries every pod's usage: 33 KB of allocations per copy at 30 pods). The reconcile and
	// the plugins only read them; what is written is a copy (Prepare's node).
	nodeStore, metricStore toolscache.Store
	// pods are the cluster's bound pods, the few words of each the plugins read (package podcache).
	pods    *podcache.Cache
	metrics *metrics
	times   *nodeTimes
	// explanations writes each node's NodeResourceExplanation after the node.
	explanations *explanations
}

// New returns the controller, reading each node's colocation strategy from config. Its plugins are chosen by
// opts.Plugins when it is set up. Its metrics go to reg (the manager passes the registry it serves); nil keeps them
// in a registry of their own that nobody serves, for tests.
func New(config *sloconfig.Store, clk clock.WithTicker, reg prometheus.Registerer, opts Options) *Controller {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	exps := newExplanations()
	return &Controller{config: config, clock: clk, metricsReg: reg, opts: opts, times: newNodeTimes(exps.lastPublished), explanations: exps}
}

// WithPods makes the controller read pods from pods, a cache gleaner-manager shares between its controllers.
// Without it, SetupWithManager gives the controller a cache of its own.
func (c *Controller) WithPods(pods *podcache.Cache) *Controller {
	c.pods = pods
	return c
}

// Name implements manager.Controller.
func (c *Controller) Name() string { return Name }

// RegisterMetrics registers the controller's metrics in the registry New was given (the term metrics only with
// Options.TermMetrics). SetupWithManager calls it; the metrics reference (internal/metricsref) calls it to list them
// without a cluster.
func (c *Controller) RegisterMetrics() error {
	m, err := newMetrics(c.metricsReg, c.opts.TermMetrics)
	if err != nil {
		return err
	}
	c.metrics = m
	return nil
}

// SetupWithManager registers the watches and the plugins, on a workqueue that waits on the controller's clock.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	registry, err := NewRegistry(c.opts.Plugins)
	if err != nil {
		return err
	}
	c.registry = registry
	c.client = mgr.GetClient()
	c.cache = mgr.GetCache()
	if c.pods, err = podcache.ForManager(mgr, c.pods); err != nil {
		return err
	}
	if c.nodeStore, err = informerStore(mgr, &corev1.Node{}); err != nil {
		return err
	}
	if c.metricStore, err = informerStore(mgr, &slov1alpha1.NodeMetric{}); err != nil {
		return err
	}
	c.recorder = mgr.GetEventRecorder("gleaner-" + Name)
	if err := c.RegisterMetrics(); err != nil {
		return err
	}
	if err := c.explanations.setup(mgr, c.opts.ExplanationQPS); err != nil {
		return err
	}

	_, err = mgr.GetRESTMapper().RESTMapping(framework.TopologyGVK.GroupKind(), framework.TopologyGVK.Version)
	switch {
	case err == nil:
		c.topology = true
	case meta.IsNoMatchError(err):
		log.FromContext(context.Background()).Info("no NodeResourceTopology CRD in the cluster: zone-level resources are off")
	default:
		return fmt.Errorf("looking up the NodeResourceTopology kind: %w", err)
	}

	b := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&corev1.Node{}, builder.WithPredicates(nodeChanged{})).
		WatchesRawSource(c.pods.Source(podChanged)).
		Watches(&slov1alpha1.NodeMetric{}, handler.EnqueueRequestsFromMapFunc(sameName), builder.WithPredicates(metricChanged{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: c.opts.Workers, NewQueue: c.newQueue, RateLimiter: retry.PerNode()})
	if c.topology {
		b = b.Watches(framework.NewTopologyObject(), handler.EnqueueRequestsFromMapFunc(sameName))
	}
	b = b.WatchesRawSource(c.config.NodeSource(mgr.GetCache(), sloconfig.NodeResourceChanged))

	if err := c.registry.Setup(&framework.SetupOptions{
		Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: c.recorder, Builder: b, Clock: c.clock,
	}); err != nil {
		return err
	}
	return b.Complete(c)
}

// newQueue is controller-runtime's classic queue (client-go's rate-limited workqueue) with its delays, RequeueAfter
// and error back-off alike, measured on the controller's clock.
func (c *Controller) newQueue(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name, Clock: c.clock})
}

// Reconcile runs the framework for one node.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := c.clock.Now()
	defer func() { c.metrics.reconcileDuration.Observe(c.clock.Since(start).Seconds()) }()
	c.explanations.seed(ctx)

	node, err := cached[*corev1.Node](c.nodeStore, req.Name)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("getting node %s: %w", req.Name, err)
	}
	if node == nil {
		c.metrics.forget(req.Name)
		c.times.forget(req.Name)
		c.explanations.forget(req.Name)
		return reconcile.Result{}, nil
	}
	// One snapshot for the whole reconcile. Before the config's first load there is nothing to do: that load
	// enqueues every node.
	snap := c.config.Current()
	if snap == nil {
		return reconcile.Result{}, nil
	}
	in, err := c.input(ctx, node, snap.Colocation(node.Labels))
	if err != nil {
		return reconcile.Result{}, err
	}
	in.Config = snap
	strategy := in.Strategy
	c.reportReservation(node, in)

	disabled := ""
	if !ptr.Deref(strategy.Enable, false) {
		disabled = "colocation is disabled for node " + node.Name
	}
	nr, calcErr := c.registry.Calculate(in, disabled)
	if calcErr != nil {
		log.FromContext(ctx).Error(calcErr, "calculating node resources")
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, "CalculationFailed", "Calculate", "%v", calcErr)
	}
	if err := c.registry.Annotate(in, nr); err != nil {
		log.FromContext(ctx).Error(err, "calculating node annotations")
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, "AnnotationFailed", "Annotate", "%v", err)
	}
	status := statusOf(in)
	c.metrics.observe(node.Name, nr, status)
	if err := c.registry.PreUpdate(ctx, in, nr); err != nil {
		log.FromContext(ctx).Error(err, "pre-update of node resources")
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, "PreUpdateFailed", "PreUpdate", "%v", err)
	}

	updated := node.DeepCopy()
	if err := c.registry.Prepare(in, updated, nr); err != nil {
		return reconcile.Result{}, err
	}
	framework.PrepareAnnotations(updated, nr)
	legacy := dropLegacyExplanation(updated)
	last, written := c.times.lastWrite(node)
	why := framework.AnnotationsDiffer(node, updated, nr)
	if why == "" {
		why = c.needWrite(strategy, node, updated, nr, in.Now, last, written)
	}
	if why == "" && legacy {
		why = "removing the " + slov1alpha1.LegacyAnnotationResourceExplanation + " annotation of an earlier gleaner-manager"
	}
	degradedBy := degradedReport(in, status)
	if why == "" && degradedBy != "" && c.times.explainedDegraded(node) != degradedBy {
		// A degraded node that has nothing to remove (it never published, its first NodeMetric is stamped ahead,
		// or its resources are gone already) would otherwise never be written, and `kubectl glean explain` could
		// not say why gleaner_noderesource_degraded is 1 for it, or would give the reason of an earlier report.
		why = "degraded, and its explanation does not say why yet: " + in.MetricProblem()
	}
	if why == "" {
		return requeueAt(in.Now, nextDue(in, last, written)), nil
	}
	patch := client.MergeFrom(node)
	data, err := patch.Data(updated)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("computing the patch of node %s: %w", node.Name, err)
	}
	// An empty patch (only the explanation was due) is not sent: the node already holds what it explains.
	if string(data) != "{}" {
		if err := c.client.Status().Patch(ctx, updated, client.RawPatch(patch.Type(), data)); err != nil {
			return reconcile.Result{}, fmt.Errorf("writing resources of node %s (%s): %w", node.Name, why, err)
		}
		c.metrics.writes.Inc()
	}
	stamp := in.Now.Truncate(time.Second)
	c.times.wrote(node.Name, stamp, degradedBy, nr.Urgent)
	// The explanation only for a write, and after it: most reconciles (a NodeMetric report that moves nothing
	// much) end above. It is written by a queue of its own (explanation.go) and cannot hold this write up.
	reason, message := in.MetricUsability()
	c.explanations.set(node, stamp, strategyName(snap, node), nr, metricUsable(reason, message))
	log.FromContext(ctx).V(1).Info("published node resources", "why", why)
	return requeueAt(in.Now, nextDue(in, stamp, true)), nil
}

// metricUsable is the NodeMetricUsable condition of a NodeMetric with the usability reason and message, without its
// transition time.
func metricUsable(reason, message string) metav1.Condition {
	status := metav1.ConditionFalse
	if reason == slov1alpha1.ReasonNodeMetricFresh {
		status = metav1.ConditionTrue
	}
	return metav1.Condition{Type: slov1alpha1.NodeMetricUsable, Status: status, Reason: reason, Message: message}
}

// statusOf is the state of the node's NodeMetric that the metrics export: degraded only where colocation is on (a
// node without it has nothing to lose).
func statusOf(in *framework.Input) nodeStatus {
	st := nodeStatus{degraded: ptr.Deref(in.Strategy.Enable, false) && in.MetricProblem() != ""}
	if in.Metric != nil && in.Metric.Status.UpdateTime != nil {
		st.metricUpdated = in.Metric.Status.UpdateTime.Time
	}
	return st
}

// degradedReport names the NodeMetric report a degraded node is degraded by ("missing", or its updateTime), or is
// "" when the node is not degraded: an explanation handed over for one report need not be written again until
// another report comes (a stale report stays the same; one stamped ahead is replaced at each report interval).
func degradedReport(in *framework.Input, st nodeStatus) string {
	switch {
	case !st.degraded:
		return ""
	case in.Metric == nil:
		return "missing"
	case in.Metric.Status.UpdateTime == nil:
		return "no updateTime"
	}
	return in.Metric.Status.UpdateTime.UTC().Format(time.RFC3339Nano)
}

// informerStore returns the store of the manager's informer for obj's kind.
func informerStore(mgr ctrl.Manager, obj client.Object) (toolscache.Store, error) {
	inf, err := mgr.GetCache().GetInformer(context.Background(), obj)
	if err != nil {
		return nil, fmt.Errorf("getting the %T informer: %w", obj, err)
	}
	withStore, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return nil, fmt.Errorf("the %T informer (%T) has no store to read", obj, inf)
	}
	return withStore.GetStore(), nil
}

// cached returns the cluster-scoped object named name from store, itself and not a copy (read-only), or nil when
// the store has none.
func cached[T client.Object](store toolscache.Store, name string) (T, error) {
	var none T
	obj, found, err := store.GetByKey(name)
	if err != nil || !found {
		return none, err
	}
	t, ok := obj.(T)
	if !ok {
		return none, fmt.Errorf("the cache holds a %T", obj)
	}
	return t, nil
}

// requeueAt asks for the node again at due; a zero due asks for nothing.
func requeueAt(now, due time.Time) reconcile.Result {
	if due.IsZero() {
		return reconcile.Result{}
	}
	return reconcile.Result{RequeueAfter: due.Sub(now)}
}

// reportReservation records a Warning event when the node's reservation annotations stop parsing or say something
// else that does not parse, not on every reconcile: the explanation carries the reason all the while.
func (c *Controller) reportReservation(node *corev1.Node, in *framework.Input) {
	var msg string
	for i, err := range in.ReservationProblems() {
		if i > 0 {
			msg += "; "
		}
		msg += err.Error()
	}
	if !c.times.reservationProblemChanged(node, msg) || msg == "" {
		return
	}
	c.recorder.Eventf(node, nil, corev1.EventTypeWarning, "InvalidNodeReservation", "Calculate",
		"%s; the calculation goes on as if it were absent", msg)
}

// input gathers what the plugins see of a node.
func (c *Controller) input(ctx context.Context, node *corev1.Node, strategy *sloconfig.ColocationStrategy) (*framework.Input, error) {
	in := &framework.Input{Node: node, Strategy: strategy, Now: c.clock.Now()}

	in.Pods = c.pods.OnNode(node.Name)

	metric, err := cached[*slov1alpha1.NodeMetric](c.metricStore, node.Name)
	if err != nil {
		return nil, fmt.Errorf("getting NodeMetric %s: %w", node.Name, err)
	}
	in.Metric = metric // nil when there is none

	if c.topology {
		u := framework.NewTopologyObject()
		switch err := c.cache.Get(ctx, client.ObjectKey{Name: node.Name}, u); {
		case err == nil:
			t, err := framework.TopologyFrom(u)
			if err != nil {
				return nil, err
			}
			in.Topology = t
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("getting NodeResourceTopology %s: %w", node.Name, err)
		}
	}
	return in, nil
}

// needWrite says why the prepared node must be written, or "" when it must not: a value that must reach the node at
// once moved (nr's urgent resources, and those urgent at the last write), a plugin's NeedSync says so, or the
// forced update is due. last is when the controller last wrote the node, if written.
func (c *Controller) needWrite(strategy *sloconfig.ColocationStrategy, node, updated *corev1.Node, nr *framework.NodeResource, now, last time.Time, written bool) string {
	if why := nr.UrgentChange(node, updated); why != "" {
		return why
	}
	if why := nr.UrgencyOver(c.times.urgent(node), node, updated); why != "" {
		return why
	}
	if need, why := c.registry.NeedSync(strategy, node, updated); need {
		return why
	}
	threshold := time.Duration(ptr.Deref(strategy.UpdateTimeThresholdSeconds, 0)) * time.Second
	if written && now.Sub(last) >= threshold && resourcesMoved(node, updated) {
		return fmt.Sprintf("last update %s ago, at least updateTimeThresholdSeconds (%s)", now.Sub(last).Truncate(time.Second), threshold)
	}
	return ""
}

// resourcesMoved reports whether any allocatable value differs at all between the two nodes.
func resourcesMoved(node, updated *corev1.Node) bool {
	if len(node.Status.Allocatable) != len(updated.Status.Allocatable) {
		return true
	}
	for name, q := range updated.Status.Allocatable {
		if old, ok := node.Status.Allocatable[name]; !ok || old.Cmp(q) != 0 {
			return true
		}
	}
	return false
}

// strategyName says which part of colocation-config applies to the node.
func strategyName(snap *sloconfig.Snapshot, node *corev1.Node) string {
	if name := snap.Override(sloconfig.ColocationConfigKey, node.Labels); name != "" {
		return "nodeConfigs " + name
	}
	return "cluster"
}

// nextDue is when the node must be looked at again even if nothing happens: when its NodeMetric goes stale, when a
// NodeMetric stamped too far ahead of the clock stops being ahead, or when its forced update comes due, whichever is
// first and still ahead. A time already past is no reason to look again:
// the reconcile that just ran saw it.
func nextDue(in *framework.Input, last time.Time, written bool) time.Time {
	var due time.Time
	consider := func(t time.Time) {
		if t.After(in.Now) && (due.IsZero() || t.Before(due)) {
			due = t
		}
	}
	if d := in.MetricDeadline(); !d.IsZero() {
		consider(d.Add(time.Second))
	}
	if d := in.MetricUsableFrom(); !d.IsZero() {
		consider(d.Add(time.Second))
	}
	if written {
		consider(last.Add(time.Duration(ptr.Deref(in.Strategy.UpdateTimeThresholdSeconds, 0)) * time.Second))
	}
	return due
}

func sameName(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetName()}}}
}

// nodeTimes remembers, per node, when the controller last wrote it and what it last said about the node's
// reservation annotations. The last write comes from the node's NodeResourceExplanation as listed at start-up
// (published), then is kept here.
type nodeTimes struct {
	mu        sync.Mutex
	nodes     map[string]*times
	published func(node string) (time.Time, bool)
}

type times struct {
	lastWrite time.Time
	written   bool
	// degradedBy is the degradedReport of the node when its explanation was last handed over ("" when it was not
	// degraded): the explanation says why. Unknown after a restart: a degraded node's explanation is written once
	// more.
	degradedBy string
	// reservationProblem is what was last said about the node's reservation annotations.
	reservationProblem string
	// urgent are the resources that were urgent at the last write (framework.ResourceItem.Urgent), with the
	// reasons: when one no longer is, its change is written at once. Unknown after a restart: the change then
	// waits for resourceDiffThreshold or the forced update, as any other.
	urgent map[corev1.ResourceName]string
}

func newNodeTimes(published func(node string) (time.Time, bool)) *nodeTimes {
	return &nodeTimes{nodes: map[string]*times{}, published: published}
}

// get returns the node's record, creating it from the published time on first use. The caller holds mu.
func (d *nodeTimes) get(node *corev1.Node) *times {
	t, ok := d.nodes[node.Name]
	if !ok {
		t = &times{}
		t.lastWrite, t.written = d.published(node.Name)
		d.nodes[node.Name] = t
	}
	return t
}

func (d *nodeTimes) lastWrite(node *corev1.Node) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.get(node)
	return t.lastWrite, t.written
}

// reservationProblemChanged records msg as the node's reservation problem ("" for none) and says whether it differs
// from the one recorded before.
func (d *nodeTimes) reservationProblemChanged(node *corev1.Node, msg string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.get(node)
	changed := t.reservationProblem != msg
	t.reservationProblem = msg
	return changed
}

// wrote records that the node was written (and its explanation handed over) at at, degraded by degradedBy ("" when
// not degraded), with the urgent resources of the write.
func (d *nodeTimes) wrote(node string, at time.Time, degradedBy string, urgent map[corev1.ResourceName]string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.nodes[node]; ok {
		t.lastWrite, t.written, t.degradedBy, t.urgent = at, true, degradedBy, maps.Clone(urgent)
	}
}

// urgent are the resources that were urgent at the node's last write, with the reasons (read-only).
func (d *nodeTimes) urgent(node *corev1.Node) map[corev1.ResourceName]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.get(node).urgent
}

// explainedDegraded is the degradedReport the explanation last handed over for the node was written with.
func (d *nodeTimes) explainedDegraded(node *corev1.Node) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.get(node).degradedBy
}

func (d *nodeTimes) forget(node string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.nodes, node)
}
