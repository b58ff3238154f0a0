package nodeallocation

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/allocation"
	"github.com/gleaner-sh/gleaner/pkg/controllers/podcache"
	"github.com/gleaner-sh/gleaner/pkg/controllers/retry"
)

// Name is the controller's name in logs, metrics and gleaner-manager's --controllers flag.
const Name = "nodeallocation"

// conflictRetry is how long a reconcile that lost a race against the cache waits before trying again: long enough
// for the watch to deliver the newer NodeAllocation, short enough not to show in the summary's latency.
const conflictRetry = 50 * time.Millisecond

// DefaultWorkers is how many nodes are reconciled at once unless Config.Workers says otherwise.
const DefaultWorkers = 16

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=slo.gleaner.sh,resources=nodeallocations,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=slo.gleaner.sh,resources=nodeallocations/status,verbs=get;update

// Config are the controller's dependencies. Every field is optional.
type Config struct {
	// Clock stamps status.updateTime and times reconciles; nil means the real clock.
	Clock clock.PassiveClock
	// Registerer receives the metrics (the manager passes controller-runtime's registry, which it serves); nil keeps
	// them in a registry of their own that nobody serves, for tests.
	Registerer prometheus.Registerer
	// Workers is how many nodes are reconciled concurrently; 0 means DefaultWorkers.
	Workers int
	// Pods is the pod cache gleaner-manager shares between its controllers; nil gives the controller its own.
	Pods *podcache.Cache
}

// Controller keeps one NodeAllocation per Node.
type Controller struct {
	cfg     Config
	client  client.Client
	metrics *metrics
}

// New returns the controller; SetupWithManager connects it to a manager.
func New(cfg Config) *Controller {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	return &Controller{cfg: cfg, metrics: newMetrics()}
}

// Name implements manager.Controller.
func (c *Controller) Name() string { return Name }

// RegisterMetrics registers the controller's metrics in Config.Registerer. SetupWithManager calls it; the metrics
// reference (internal/metricsref) calls it to list them without a cluster.
func (c *Controller) RegisterMetrics() error {
	reg := c.cfg.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	return c.metrics.register(reg)
}

// SetupWithManager registers the metrics and the watches: Nodes (allocatable changes), pods (the pod cache's changes,
// mapped to their node), and deletions of NodeAllocations (to put back one deleted by hand).
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	c.client = mgr.GetClient()
	pods, err := podcache.ForManager(mgr, c.cfg.Pods)
	if err != nil {
		return err
	}
	c.cfg.Pods = pods
	if err := c.RegisterMetrics(); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		WithOptions(controller.Options{MaxConcurrentReconciles: c.cfg.Workers, RateLimiter: retry.PerNode()}).
		WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Node{},
			&handler.TypedEnqueueRequestForObject[*corev1.Node]{}, nodeChanged())).
		WatchesRawSource(pods.Source(podChanged)).
		Watches(&slov1alpha1.NodeAllocation{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(deletedOnly())).
		Complete(c)
}

// Reconcile recomputes the summary of the node named req.Name from the cache and writes it to the node's
// NodeAllocation when it changed; when the node is gone it deletes the NodeAllocation.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	start := c.cfg.Clock.Now()
	defer func() { c.metrics.duration.Observe(c.cfg.Clock.Since(start).Seconds()) }()

	node := &corev1.Node{}
	if err := c.client.Get(ctx, req.NamespacedName, node); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, c.forget(ctx, req.Name)
		}
		return ctrl.Result{}, fmt.Errorf("getting node %q: %w", req.Name, err)
	}
	var totals allocation.Totals
	for _, pod := range c.cfg.Pods.OnNode(node.Name) {
		if pod.Counted() {
			totals.AddCounted(pod.Requests, pod.Limits)
		}
	}
	summary := allocation.NewSummary(node, totals)

	err := c.write(ctx, node, summary.Status())
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		// The cached NodeAllocation is older than the stored one (usually our own last write) or not in the cache
		// yet: try again once the cache has caught up, without logging an error.
		log.FromContext(ctx).V(1).Info("NodeAllocation changed meanwhile; requeueing", "node", node.Name)
		c.metrics.retries.Inc()
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	c.metrics.set(node.Name, summary)
	return ctrl.Result{}, nil
}

// write makes the node's NodeAllocation exist, owned by the node, with status want. The comparison ignores
// updateTime, which is set to now only when something else changed.
func (c *Controller) write(ctx context.Context, node *corev1.Node, want slov1alpha1.NodeAllocationStatus) error {
	na := &slov1alpha1.NodeAllocation{}
	err := c.client.Get(ctx, client.ObjectKey{Name: node.Name}, na)
	switch {
	case apierrors.IsNotFound(err):
		na = &slov1alpha1.NodeAllocation{ObjectMeta: metav1.ObjectMeta{Name: node.Name, OwnerReferences: []metav1.OwnerReference{ownerRef(node)}}}
		if err := c.client.Create(ctx, na); err != nil {
			return fmt.Errorf("creating NodeAllocation %q: %w", node.Name, err)
		}
	case err != nil:
		return fmt.Errorf("getting NodeAllocation %q: %w", node.Name, err)
	case !ownedBy(na, node):
		// A node deleted and created again under the same name: the old owner reference would let the garbage
		// collector delete the new node's summary.
		na.OwnerReferences = []metav1.OwnerReference{ownerRef(node)}
		if err := c.client.Update(ctx, na); err != nil {
			return fmt.Errorf("setting the owner of NodeAllocation %q: %w", node.Name, err)
		}
	}

	have := na.Status
	have.UpdateTime = nil
	if equality.Semantic.DeepEqual(have, want) {
		return nil
	}
	want.UpdateTime = ptr.To(metav1.NewTime(c.cfg.Clock.Now()))
	na.Status = want
	if err := c.client.Status().Update(ctx, na); err != nil {
		return fmt.Errorf("writing the status of NodeAllocation %q: %w", node.Name, err)
	}
	c.metrics.writes.Inc()
	return nil
}

// forget deletes the NodeAllocation of a node that is gone, and its metrics. The garbage collector would delete it
// too (owner reference); doing it here makes that immediate and independent of the collector.
func (c *Controller) forget(ctx context.Context, name string) error {
	c.metrics.forget(name)
	na := &slov1alpha1.NodeAllocation{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.client.Delete(ctx, na); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting NodeAllocation %q of a deleted node: %w", name, err)
	}
	return nil
}

func ownerRef(node *corev1.Node) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: "v1",
		Kind:       "Node",
		Name:       node.Name,
		UID:        node.UID,
		Controller: ptr.To(true),
	}
}

func ownedBy(na *slov1alpha1.NodeAllocation, node *corev1.Node) bool {
	for _, r := range na.OwnerReferences {
		if r.UID == node.UID {
			return true
		}
	}
	return false
}
