package pernode

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gleaner-sh/gleaner/pkg/controllers/retry"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// Kind describes the objects one per-node controller keeps: of type T (a pointer to a cluster-scoped API type),
// with a spec of type S computed from the SLO config.
type Kind[T client.Object, S any] struct {
	// Name is the controller's name.
	Name string
	// New returns an empty object.
	New func() T
	// Spec returns a pointer to obj's spec, to read or replace it.
	Spec func(obj T) *S
	// Desired computes the spec a node with these labels gets from a snapshot. The result is the caller's.
	Desired func(s *sloconfig.Snapshot, nodeLabels map[string]string) *S
	// Changed reports whether Desired differs between two snapshots for a node; it selects the nodes a config
	// change enqueues.
	Changed sloconfig.NodeChangedFunc
}

// Controller keeps one object of its Kind per Node: created with the node (named after it, with the node as its
// controlling owner, so the garbage collector deletes it with the node), its spec patched whenever it differs from
// what the current snapshot gives the node (and only then), and deleted when the node is gone.
type Controller[T client.Object, S any] struct {
	kind    Kind[T, S]
	store   *sloconfig.Store
	workers int
	client  client.Client
}

// New returns a controller for kind that reads the config from store, reconciling up to workers nodes at once.
func New[T client.Object, S any](kind Kind[T, S], store *sloconfig.Store, workers int) *Controller[T, S] {
	return &Controller[T, S]{kind: kind, store: store, workers: workers}
}

// Name implements manager.Controller.
func (c *Controller[T, S]) Name() string { return c.kind.Name }

// SetupWithManager reconciles a node when it is created or deleted or its labels change, when its object's spec
// changes or the object is deleted (someone else's edit is undone), and when a config change alters what the node
// gets.
func (c *Controller[T, S]) SetupWithManager(mgr ctrl.Manager) error {
	c.client = mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named(c.kind.Name).
		For(&corev1.Node{}, builder.WithPredicates(nodeLabelsChanged())).
		// Status writes (the agent's NodeMetric reports, every minute per node) do not change the generation and
		// cannot make the spec wrong, so they are not reconciled; spec edits and deletions are.
		Owns(c.kind.New(), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(c.store.NodeSource(mgr.GetCache(), c.kind.Changed)).
		WithOptions(controller.Options{MaxConcurrentReconciles: c.workers, RateLimiter: retry.PerNode()}).
		Complete(c)
}

// nodeLabelsChanged passes node creations and deletions, and updates that change labels: the only part of a Node
// the strategies depend on. Status heartbeats, the bulk of node updates, are dropped.
func nodeLabelsChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !equality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
		},
	}
}

// Reconcile brings the node's object in line with the current snapshot.
func (c *Controller[T, S]) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	snap := c.store.Current()
	if snap == nil {
		// The config has not been loaded yet; its first load enqueues every node.
		return reconcile.Result{}, nil
	}
	node := &corev1.Node{}
	if err := c.client.Get(ctx, req.NamespacedName, node); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, c.deleteOrphan(ctx, req.Name)
		}
		return reconcile.Result{}, fmt.Errorf("reading node %s: %w", req.Name, err)
	}
	if node.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	desired := c.kind.Desired(snap, node.Labels)
	obj := c.kind.New()
	if err := c.client.Get(ctx, req.NamespacedName, obj); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("reading %s %s: %w", c.kind.Name, req.Name, err)
		}
		obj.SetName(node.Name)
		obj.SetOwnerReferences([]metav1.OwnerReference{ownerOf(node)})
		*c.kind.Spec(obj) = *desired
		if err := c.client.Create(ctx, obj); err != nil {
			return reconcile.Result{}, fmt.Errorf("creating %s %s: %w", c.kind.Name, node.Name, err)
		}
		log.FromContext(ctx).V(1).Info("created", "kind", c.kind.Name, "node", node.Name, "configVersion", snap.Version())
		return reconcile.Result{}, nil
	}
	owned := hasOwner(obj, node)
	if owned && equality.Semantic.DeepEqual(c.kind.Spec(obj), desired) {
		return reconcile.Result{}, nil
	}
	base := obj.DeepCopyObject().(T)
	*c.kind.Spec(obj) = *desired
	if !owned {
		obj.SetOwnerReferences(append(withoutNodeOwners(obj.GetOwnerReferences()), ownerOf(node)))
	}
	// A merge patch of the spec only: the status (the agent's, for NodeMetric) is never sent back.
	if err := c.client.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return reconcile.Result{}, fmt.Errorf("updating %s %s: %w", c.kind.Name, node.Name, err)
	}
	log.FromContext(ctx).V(1).Info("updated", "kind", c.kind.Name, "node", node.Name, "configVersion", snap.Version())
	return reconcile.Result{}, nil
}

// deleteOrphan deletes the object of a node that no longer exists. The garbage collector does the same through the
// owner reference; doing it here as well keeps clusters without one (and the test API server) clean.
func (c *Controller[T, S]) deleteOrphan(ctx context.Context, name string) error {
	obj := c.kind.New()
	obj.SetName(name)
	if err := c.client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s of a deleted node: %w", c.kind.Name, name, err)
	}
	return nil
}

// ownerOf makes node the controlling owner. BlockOwnerDeletion stays unset: setting it needs permission to update
// nodes/finalizers, and nothing has to wait for these objects before a node goes.
func ownerOf(node *corev1.Node) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: ptr.To(true)}
}

func hasOwner(obj client.Object, node *corev1.Node) bool {
	for _, o := range obj.GetOwnerReferences() {
		if o.Kind == "Node" && o.APIVersion == "v1" && o.UID == node.UID && ptr.Deref(o.Controller, false) {
			return true
		}
	}
	return false
}

// withoutNodeOwners drops references to Nodes (a node of the same name that was deleted and created again).
func withoutNodeOwners(refs []metav1.OwnerReference) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, o := range refs {
		if o.Kind != "Node" || o.APIVersion != "v1" {
			out = append(out, o)
		}
	}
	return out
}
