package noderesource

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
	"github.com/gleaner-sh/gleaner/pkg/controllers/retry"
)

// ExplanationWriterName is the name of the controller that writes the NodeResourceExplanations, in logs and in
// controller-runtime's metrics (its reconcile errors are the failed writes, its queue depth the explanations not yet
// written).
const ExplanationWriterName = Name + "-explanation"

// seedPageSize is how many NodeResourceExplanations one page of the start-up list holds (about 3 KiB each).
const seedPageSize = 500

// Why each permission: the explanations are listed once at start-up (when each node was last published, and which
// objects exist), created owned by their node, their status replaced, and deleted with their node (or when the node
// was created again under the same name and the object still names the old one as its owner).
// +kubebuilder:rbac:groups=slo.gleaner.sh,resources=noderesourceexplanations,verbs=list;create;delete
// +kubebuilder:rbac:groups=slo.gleaner.sh,resources=noderesourceexplanations/status,verbs=patch

// explanations keeps one NodeResourceExplanation per node, written after the node's resources and only when they
// were written. The node reconcile hands over the derivation (set) and returns; a controller of its own writes it,
// with a client of its own whose rate limit (Options.ExplanationQPS) is not the node writes': a slow, failing or
// throttled explanation write never holds up or fails a Node write. Its queue keeps one entry per node, so a node
// written twice before its explanation was written gets only the latest; a failed write is logged and counted by
// controller-runtime (controller_runtime_reconcile_errors_total{controller="noderesource-explanation"}) and retried
// with its back-off.
//
// Nothing watches the objects, so they cost the manager no memory. What the controller must know of them — whether
// one exists, the node UID it is owned by, and when its node was last published (the forced-update clock after a
// restart) — it reads once, in one paginated list before the first node reconcile, and keeps up to date itself.
type explanations struct {
	client client.Client

	seeded atomic.Bool
	// seedMu makes the reconciles that arrive before the seed is done wait for it.
	seedMu sync.Mutex

	mu sync.Mutex
	// pending is what is to be written per node; an entry leaves when it has been written.
	pending map[string]*pendingExplanation
	// owners are the objects known to exist, by node name, with the UID of the node that owns each.
	owners map[string]types.UID
	// published are the seeded publication times, for nodeTimes; an entry leaves when read.
	published map[string]time.Time
	// usable is the NodeMetricUsable condition last handed over per node (seeded from the listed objects), whose
	// lastTransitionTime the next one keeps when its status is the same.
	usable map[string]transition
	// queue is the writer's workqueue, set when it starts; before, set only records.
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// transition is a condition's status and its lastTransitionTime.
type transition struct {
	status metav1.ConditionStatus
	at     metav1.Time
}

// pendingExplanation is one node's explanation to write, or the deletion of its object (gone).
type pendingExplanation struct {
	nodeUID types.UID
	status  slov1alpha1.NodeResourceExplanationStatus
	gone    bool
}

func newExplanations() *explanations {
	return &explanations{pending: map[string]*pendingExplanation{}, owners: map[string]types.UID{}, published: map[string]time.Time{}, usable: map[string]transition{}}
}

// setup registers the writer with the manager, with a client that has a rate limit of its own (qps, burst 2 x qps).
func (e *explanations) setup(mgr ctrl.Manager, qps float32) error {
	cfg := rest.CopyConfig(mgr.GetConfig())
	cfg.QPS, cfg.Burst = qps, max(1, int(2*qps))
	c, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("creating the client of the explanation writer: %w", err)
	}
	e.client = c
	// One worker per 5 requests a second: a write takes about one round trip, so more would only wait on the limiter.
	return ctrl.NewControllerManagedBy(mgr).
		Named(ExplanationWriterName).
		WatchesRawSource(source.TypedFunc[reconcile.Request](e.start)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, int(qps/5)), RateLimiter: retry.PerNode()}).
		Complete(e)
}

// start receives the writer's queue and enqueues what was set before it started.
func (e *explanations) start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queue = q
	for name := range e.pending {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	}
	return nil
}

// set hands over the explanation of what was just written on node, published at now, with the node's
// NodeMetricUsable condition, whose lastTransitionTime set sets. The derivations are copied: the caller's
// NodeResource is its own again when set returns.
func (e *explanations) set(node *corev1.Node, now time.Time, strategy string, nr *framework.NodeResource, usable metav1.Condition) {
	p := &pendingExplanation{nodeUID: node.UID}
	p.status.UpdateTime = metav1.NewTime(now)
	p.status.Strategy = strategy
	usable.LastTransitionTime = e.transitioned(node.Name, usable.Status, p.status.UpdateTime)
	p.status.Conditions = []metav1.Condition{usable}
	p.status.Resources = make([]slov1alpha1.ResourceDerivation, len(nr.Derivations))
	for i := range nr.Derivations {
		nr.Derivations[i].DeepCopyInto(&p.status.Resources[i])
	}
	if len(nr.AnnotationDerivations) > 0 {
		p.status.Annotations = make([]slov1alpha1.AnnotationDerivation, len(nr.AnnotationDerivations))
		for i := range nr.AnnotationDerivations {
			nr.AnnotationDerivations[i].DeepCopyInto(&p.status.Annotations[i])
		}
	}
	e.put(node.Name, p)
}

// transitioned records that node's NodeMetricUsable condition has status at now and returns its
// lastTransitionTime: the one recorded when the status is the same, else now.
func (e *explanations) transitioned(node string, status metav1.ConditionStatus, now metav1.Time) metav1.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	if last, ok := e.usable[node]; ok && last.status == status {
		return last.at
	}
	e.usable[node] = transition{status: status, at: now}
	return now
}

// forget deletes the object of a node that is gone, if there is one; the garbage collector would too (owner
// reference), this makes it immediate and independent of the collector.
func (e *explanations) forget(name string) {
	e.mu.Lock()
	_, exists := e.owners[name]
	_, queued := e.pending[name]
	delete(e.usable, name)
	e.mu.Unlock()
	if exists || queued {
		e.put(name, &pendingExplanation{gone: true})
	}
}

func (e *explanations) put(name string, p *pendingExplanation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pending[name] = p
	if e.queue != nil {
		e.queue.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	}
}

// Reconcile writes the pending explanation of one node. An error is logged, counted and retried by
// controller-runtime; the entry stays pending until written, unless a newer one replaces it.
func (e *explanations) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	name := req.Name
	e.mu.Lock()
	p, ok := e.pending[name]
	owner, exists := e.owners[name]
	e.mu.Unlock()
	if !ok {
		return reconcile.Result{}, nil
	}
	var err error
	if p.gone {
		err = e.delete(ctx, name)
	} else {
		err = e.write(ctx, name, p, owner, exists)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if p.gone {
		delete(e.owners, name)
	} else {
		e.owners[name] = p.nodeUID
	}
	if e.pending[name] == p {
		delete(e.pending, name)
	}
	return reconcile.Result{}, nil
}

// write makes the node's object exist, owned by the node, and replaces its status with p's: one request when the
// object exists, two when it must be created (the status subresource ignores the status of a create).
func (e *explanations) write(ctx context.Context, name string, p *pendingExplanation, owner types.UID, exists bool) error {
	if exists && owner != p.nodeUID {
		// The node was deleted and created again under this name: the old owner reference would let the garbage
		// collector delete the new node's explanation.
		if err := e.delete(ctx, name); err != nil {
			return err
		}
		exists = false
	}
	if !exists {
		if err := e.create(ctx, name, p.nodeUID); err != nil {
			return err
		}
	}
	err := e.patchStatus(ctx, name, &p.status)
	if apierrors.IsNotFound(err) {
		// Deleted since it was listed or written (by hand, or by the garbage collector).
		if err := e.create(ctx, name, p.nodeUID); err != nil {
			return err
		}
		err = e.patchStatus(ctx, name, &p.status)
	}
	return err
}

func (e *explanations) create(ctx context.Context, name string, nodeUID types.UID) error {
	obj := &slov1alpha1.NodeResourceExplanation{ObjectMeta: metav1.ObjectMeta{
		Name: name,
		// BlockOwnerDeletion stays unset: setting it needs permission to update nodes/finalizers, and nothing has to
		// wait for this object before a node goes.
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: nodeUID, Controller: ptr.To(true)}},
	}}
	if err := e.client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating NodeResourceExplanation %s: %w", name, err)
	}
	return nil
}

// patchStatus replaces the whole status (a JSON patch "add" replaces a member that exists): a merge patch would
// keep the zones of a map that lost some.
func (e *explanations) patchStatus(ctx context.Context, name string, st *slov1alpha1.NodeResourceExplanationStatus) error {
	data, err := json.Marshal([]jsonPatchOp{{Op: "add", Path: "/status", Value: st}})
	if err != nil {
		return fmt.Errorf("encoding the explanation of node %s: %w", name, err)
	}
	obj := &slov1alpha1.NodeResourceExplanation{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.client.Status().Patch(ctx, obj, client.RawPatch(types.JSONPatchType, data)); err != nil {
		return fmt.Errorf("writing the status of NodeResourceExplanation %s: %w", name, err)
	}
	return nil
}

type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

func (e *explanations) delete(ctx context.Context, name string) error {
	obj := &slov1alpha1.NodeResourceExplanation{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting NodeResourceExplanation %s: %w", name, err)
	}
	return nil
}

// seed lists the existing explanations once, before the first node reconcile uses what it learns: which exist,
// their owners, and when each node was last published. Reconciles that arrive meanwhile wait. A failed list is
// logged and not tried again: the nodes then count as never published by this manager (the forced update waits
// for their first write) and each first write tries a create first.
func (e *explanations) seed(ctx context.Context) {
	if e.seeded.Load() {
		return
	}
	e.seedMu.Lock()
	defer e.seedMu.Unlock()
	if e.seeded.Load() {
		return
	}
	defer e.seeded.Store(true)
	owners, published, usable := map[string]types.UID{}, map[string]time.Time{}, map[string]transition{}
	list := &slov1alpha1.NodeResourceExplanationList{}
	for {
		if err := e.client.List(ctx, list, client.Limit(seedPageSize), client.Continue(list.Continue)); err != nil {
			log.FromContext(ctx).Error(err, "listing the NodeResourceExplanations at start-up; every node counts as not yet published")
			return
		}
		for i := range list.Items {
			x := &list.Items[i]
			for _, r := range x.OwnerReferences {
				if r.Kind == "Node" && r.APIVersion == "v1" {
					owners[x.Name] = r.UID
				}
			}
			if !x.Status.UpdateTime.IsZero() {
				published[x.Name] = x.Status.UpdateTime.Time
			}
			if c := meta.FindStatusCondition(x.Status.Conditions, slov1alpha1.NodeMetricUsable); c != nil {
				usable[x.Name] = transition{status: c.Status, at: c.LastTransitionTime}
			}
		}
		if list.Continue == "" {
			break
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, uid := range owners {
		if _, ok := e.owners[name]; !ok {
			e.owners[name] = uid
		}
	}
	for name, tr := range usable {
		if _, ok := e.usable[name]; !ok {
			e.usable[name] = tr
		}
	}
	e.published = published
}

// lastPublished returns, once per node, when the listed explanation says the node was last published.
func (e *explanations) lastPublished(name string) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.published[name]
	delete(e.published, name)
	return t, ok
}

// dropLegacyExplanation removes the explanation annotation an earlier gleaner-manager wrote on the node, and says
// whether there was one: its presence alone makes the node due for a write, so that an upgrade leaves none behind.
func dropLegacyExplanation(updated *corev1.Node) bool {
	if _, ok := updated.Annotations[slov1alpha1.LegacyAnnotationResourceExplanation]; !ok {
		return false
	}
	delete(updated.Annotations, slov1alpha1.LegacyAnnotationResourceExplanation)
	return true
}
