package colocationprofile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/podcache"
	profilewebhook "github.com/gleaner-sh/gleaner/pkg/webhook/colocationprofile"
)

// Name is the controller's name in logs, metrics and gleaner-manager's --controllers flag.
const Name = "colocationprofile"

// DefaultMinWriteInterval is Config.MinWriteInterval unless set.
const DefaultMinWriteInterval = time.Second

// workers is how many profiles are reconciled at once: a cluster has few profiles, and a reconcile reads only
// caches, but one profile's slow status write should not hold up the others.
const workers = 4

// +kubebuilder:rbac:groups=config.gleaner.sh,resources=colocationprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=config.gleaner.sh,resources=colocationprofiles/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch

// Config are the controller's dependencies. Every field is optional.
type Config struct {
	// Clock stamps the conditions' lastTransitionTime and spaces the count's writes; nil means the real clock.
	Clock clock.PassiveClock
	// Pods is the pod cache gleaner-manager shares between its controllers; nil gives the controller its own.
	Pods *podcache.Cache
	// MinWriteInterval is the least time between two status writes of one profile that change only matchedPods;
	// 0 means DefaultMinWriteInterval, a negative value no limit.
	MinWriteInterval time.Duration
}

// Controller keeps the status of every ColocationProfile.
type Controller struct {
	cfg     Config
	client  client.Client
	pending client.Reader

	mu sync.Mutex
	// lastWrite is when each profile's status was last written, by name.
	lastWrite map[string]time.Time
}

// New returns the controller; SetupWithManager connects it to a manager.
func New(cfg Config) *Controller {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.MinWriteInterval == 0 {
		cfg.MinWriteInterval = DefaultMinWriteInterval
	}
	return &Controller{cfg: cfg, lastWrite: map[string]time.Time{}}
}

// Name implements manager.Controller.
func (c *Controller) Name() string { return Name }

// SetupWithManager adds the cache of the profiles' pods that wait for a node to mgr, and registers the watches:
// profiles, PriorityClasses (mapped to the profiles that name them), the pod cache and the pending pods (mapped to
// their profile). Every update of a profile is watched, its status included: a reconcile compares the status it
// wants with the cache's, which may not have the controller's last write yet and then makes it skip a write it
// needed (the count went 2, 3, back to 2 before the cache saw the 3); the cache's catching up brings it back.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	c.client = mgr.GetClient()
	pods, err := podcache.ForManager(mgr, c.cfg.Pods)
	if err != nil {
		return err
	}
	c.cfg.Pods = pods
	pending, err := newPendingCache(mgr)
	if err != nil {
		return err
	}
	c.pending = pending
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&configv1alpha1.ColocationProfile{}).
		Watches(&schedulingv1.PriorityClass{}, handler.EnqueueRequestsFromMapFunc(c.namingProfiles)).
		WatchesRawSource(pods.SourceFunc(profileChanges)).
		WatchesRawSource(source.Kind[client.Object](pending, &corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(pendingProfile))).
		Complete(c)
}

// Reconcile works out the status of the profile named req.Name and writes it when it changed.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	p := &configv1alpha1.ColocationProfile{}
	if err := c.client.Get(ctx, req.NamespacedName, p); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting colocation profile %q: %w", req.Name, err)
	}
	pc, err := c.priorityClass(ctx, p)
	if err != nil {
		return ctrl.Result{}, err
	}
	matched, err := c.matched(ctx, p.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	want := c.status(p, pc, matched)
	if equality.Semantic.DeepEqual(p.Status, want) {
		return ctrl.Result{}, nil
	}
	if countOnly(p.Status, want) {
		if wait := c.untilWrite(p.Name); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	patch := client.MergeFrom(p.DeepCopy())
	p.Status = want
	if err := c.client.Status().Patch(ctx, p, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("writing the status of colocation profile %q: %w", p.Name, err)
	}
	c.mu.Lock()
	c.lastWrite[p.Name] = c.cfg.Clock.Now()
	c.mu.Unlock()
	return ctrl.Result{}, nil
}

// status is the status p should have: the spec's generation, matched pods, and the Valid condition, whose
// lastTransitionTime changes only with its status.
func (c *Controller) status(p *configv1alpha1.ColocationProfile, pc *schedulingv1.PriorityClass, matched int) configv1alpha1.ColocationProfileStatus {
	st := *p.Status.DeepCopy()
	st.ObservedGeneration = p.Generation
	st.MatchedPods = int32(min(matched, 1<<31-1))
	cond := metav1.Condition{
		Type:               configv1alpha1.ColocationProfileValid,
		Status:             metav1.ConditionTrue,
		Reason:             configv1alpha1.ColocationProfileReasonValid,
		Message:            "the webhook applies the profile to the new pods it selects",
		ObservedGeneration: p.Generation,
		LastTransitionTime: metav1.NewTime(c.cfg.Clock.Now()),
	}
	// Check returns nil or a *ProfileError.
	var pe *profilewebhook.ProfileError
	if err := profilewebhook.Check(p, pc); errors.As(err, &pe) {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, pe.Reason, pe.Error()
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return st
}

// countOnly reports whether want differs from have in matchedPods alone.
func countOnly(have, want configv1alpha1.ColocationProfileStatus) bool {
	have.MatchedPods = want.MatchedPods
	return equality.Semantic.DeepEqual(have, want)
}

// untilWrite is how long the status of profile must wait before its next write of a new count; 0 or less: now.
func (c *Controller) untilWrite(profile string) time.Duration {
	if c.cfg.MinWriteInterval < 0 {
		return 0
	}
	c.mu.Lock()
	last, ok := c.lastWrite[profile]
	c.mu.Unlock()
	if !ok {
		return 0
	}
	return c.cfg.MinWriteInterval - c.cfg.Clock.Since(last)
}

// forget drops what the controller keeps of a profile that is gone.
func (c *Controller) forget(profile string) {
	c.mu.Lock()
	delete(c.lastWrite, profile)
	c.mu.Unlock()
}

// priorityClass returns the PriorityClass p names, nil when it does not exist.
func (c *Controller) priorityClass(ctx context.Context, p *configv1alpha1.ColocationProfile) (*schedulingv1.PriorityClass, error) {
	name := priorityClassName(p)
	pc := &schedulingv1.PriorityClass{}
	if err := c.client.Get(ctx, types.NamespacedName{Name: name}, pc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting priority class %q of colocation profile %q: %w", name, p.Name, err)
	}
	return pc, nil
}

// matched is the number of the profile's pods that have not finished: the bound ones in the pod cache, and the
// ones waiting for a node in the pending cache.
func (c *Controller) matched(ctx context.Context, profile string) (int, error) {
	var pending corev1.PodList
	if err := c.pending.List(ctx, &pending, client.MatchingFields{profileIndex: profile}); err != nil {
		return 0, fmt.Errorf("listing the pending pods of colocation profile %q: %w", profile, err)
	}
	return c.cfg.Pods.ProfilePods(profile) + len(pending.Items), nil
}

// namingProfiles maps a PriorityClass to the profiles that name it.
func (c *Controller) namingProfiles(ctx context.Context, obj client.Object) []reconcile.Request {
	var list configv1alpha1.ColocationProfileList
	if err := c.client.List(ctx, &list); err != nil {
		// The cache's list of what it holds does not fail once started.
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if priorityClassName(&list.Items[i]) == obj.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return reqs
}

// priorityClassName is the priority class p gives its pods.
func priorityClassName(p *configv1alpha1.ColocationProfile) string {
	if p.Spec.PriorityClassName == "" {
		return configv1alpha1.DefaultPriorityClassName
	}
	return p.Spec.PriorityClassName
}

// profileChanges maps a change in the pod cache to the profiles whose count it can change: a pod of a profile that
// came, went, finished, or moved to another profile. Updates that leave both alone (status, other labels, a
// binding seen again) enqueue nothing.
func profileChanges(old, new *podcache.Pod) []reconcile.Request {
	counted := func(p *podcache.Pod) string {
		if p == nil || !p.Counted() {
			return ""
		}
		return p.Profile
	}
	before, after := counted(old), counted(new)
	if before == after {
		return nil
	}
	var reqs []reconcile.Request
	for _, name := range []string{before, after} {
		if name != "" {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
		}
	}
	return reqs
}
