package allocatableevict

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/evictor"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

const (
	// Name is the plugin's name in --qos-plugins.
	Name = "allocatableevict"
	// DefaultInterval is how often the plugin runs by default. A run reads the informer's node and pods and nothing
	// else, and the allocatable it compares with changes at most once per NodeMetric report, so once a second is
	// plenty.
	DefaultInterval = time.Second
	// Reason is the reason of the plugin's evictions (events and the evictor's counter).
	Reason = "TierAllocatable"
)

// settle is how long a pod whose eviction was requested counts as gone: long enough for the deletion to reach the
// states informer, which then shows the pod terminating (and so out of the requests) or gone.
const settle = 30 * time.Second

const field = "resourceUsedThresholdWithBE."

// maxPercent bounds the percents (the CRD's bound too): above 100 they tolerate requests beyond what the node offers,
// as Koordinator's own example (110 / 100) does.
const maxPercent = 1000

// account is one tier's resource: what the node publishes in its allocatable and the tier's pods request.
type account struct {
	resource corev1.ResourceName
	// cpu says which percents apply: the CPU ones, else the memory ones.
	cpu bool
}

// accounts are the four tier resources, in the order a run handles them.
func accounts() []account {
	return []account{
		{slov1alpha1.BatchCPU, true}, {slov1alpha1.BatchMemory, false},
		{slov1alpha1.MidCPU, true}, {slov1alpha1.MidMemory, false},
	}
}

// Plugin evicts batch and mid pods whose tier requests more than the node offers.
type Plugin struct {
	states    statesinformer.States
	evictor   qosmanager.Evictor
	clock     clock.PassiveClock
	evictions *qosmanager.Evictions
	badOrder  *qosmanager.Warnings // malformed eviction-priority annotations
	// unpublished holds the resources found missing from the node's allocatable and said so in the log, so that a
	// node that never publishes the mid tier is told once, not every second.
	unpublished map[corev1.ResourceName]bool
}

var (
	_ qosmanager.RunPlugin        = &Plugin{}
	_ qosmanager.ValidatingPlugin = &Plugin{}
)

// New returns the allocatable eviction plugin. It needs d.States, d.Evictor and d.Clock.
func New(d qosmanager.Deps) (qosmanager.RunPlugin, error) {
	if err := d.Need(Name, "States", "Evictor", "Clock"); err != nil {
		return nil, err
	}
	return &Plugin{states: d.States, evictor: d.Evictor, clock: d.Clock, evictions: qosmanager.NewEvictions(settle), badOrder: qosmanager.NewWarnings(d.Events, qosmanager.ReasonBadEvictionPriority),
		unpublished: map[corev1.ResourceName]bool{}}, nil
}

// Name implements qosmanager.Plugin.
func (p *Plugin) Name() string { return Name }

// Validate implements qosmanager.ValidatingPlugin. A NodeSLO that disables the strategy is accepted whatever its
// percents, so that switching it off always works. With it on, each resource's pair of percents is either unset
// (that resource's allocatable eviction is off) or both in [1, 1000] with the lower not above the threshold.
func (p *Plugin) Validate(spec *slov1alpha1.NodeSLOSpec) error {
	s := spec.ResourceUsedThresholdWithBE
	if !ptr.Deref(s.Enable, false) {
		return nil
	}
	return errors.Join(
		validatePair("cpu", s.CPUAllocatableEvictThresholdPercent, s.CPUAllocatableEvictLowerPercent),
		validatePair("memory", s.MemoryAllocatableEvictThresholdPercent, s.MemoryAllocatableEvictLowerPercent),
	)
}

// validatePair checks the percents of one resource ("cpu", "memory").
func validatePair(resource string, threshold, lower *int64) error {
	if threshold == nil && lower == nil {
		return nil
	}
	thresholdField, lowerField := field+resource+"AllocatableEvictThresholdPercent", field+resource+"AllocatableEvictLowerPercent"
	return errors.Join(
		qosmanager.CheckRange(thresholdField, threshold, 1, maxPercent),
		qosmanager.CheckRange(lowerField, lower, 1, maxPercent),
		qosmanager.CheckOrder(lowerField, lower, thresholdField, threshold),
	)
}

// percents are the threshold and lower percents of a's resource; ok is false when that resource's allocatable
// eviction is off.
func percents(s *slov1alpha1.ResourceThresholdStrategy, a account) (threshold, lower int64, ok bool) {
	t, l := s.MemoryAllocatableEvictThresholdPercent, s.MemoryAllocatableEvictLowerPercent
	if a.cpu {
		t, l = s.CPUAllocatableEvictThresholdPercent, s.CPUAllocatableEvictLowerPercent
	}
	if t == nil || l == nil {
		return 0, 0, false
	}
	return *t, *l, true
}

// Run implements qosmanager.RunPlugin: for each tier resource whose percents are set, it compares the requests of
// the node's pods with the node's allocatable and evicts pods of that tier while the requests are above the
// threshold (see evictAccount). The accounts are handled one after the other, so a pod evicted for one counts as
// gone in the next.
func (p *Plugin) Run(ctx context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	s := spec.ResourceUsedThresholdWithBE
	if !ptr.Deref(s.Enable, false) {
		return nil
	}
	node := p.states.GetNode()
	if node == nil {
		return nil // not received yet: nothing to compare with
	}
	now := p.clock.Now()
	p.evictions.Prune(now)
	var errs []error
	for _, a := range accounts() {
		thresholdPct, lowerPct, ok := percents(s, a)
		if !ok {
			continue
		}
		err := p.evictAccount(ctx, node, a.resource, thresholdPct, lowerPct, s.AllocatableEvictPriorityThreshold, now)
		if err != nil {
			errs = append(errs, err)
			if errors.Is(err, evictor.ErrUnreachable) {
				break // the next account's evictions would fail the same way
			}
		}
	}
	return errors.Join(errs...)
}

// evictAccount enforces one tier resource:
//
//	allocatable = node.status.allocatable[resource]
//	requested   = sum of the resource's requests of the node's pods that are neither ended nor terminating
//	if requested > allocatable x thresholdPct / 100:
//	    projected = requested - requests of the pods whose eviction this plugin asked for (on their way out)
//	    evict candidates in order while projected > allocatable x lowerPct / 100
//
// Candidates are best-effort and mid-tier pods that request the resource and, when priorityThreshold is set, whose
// spec.priority is at most it. A pod the evictor does not evict now (a PodDisruptionBudget, the rate limit) does not
// count as gone; the next one is asked.
func (p *Plugin) evictAccount(ctx context.Context, node *corev1.Node, resource corev1.ResourceName, thresholdPct, lowerPct int64,
	priorityThreshold *int64, now time.Time,
) error {
	log := klog.FromContext(ctx).WithValues("resource", resource)
	q, published := node.Status.Allocatable[resource]
	if !published {
		if !p.unpublished[resource] {
			log.V(1).Info("the node does not publish this resource in its allocatable: no allocatable eviction for it")
			p.unpublished[resource] = true
		}
		return nil
	}
	delete(p.unpublished, resource)
	allocatable := q.Value()

	var requested, going int64
	var candidates []qosmanager.Candidate
	for _, m := range p.states.GetAllPods() {
		if m.Pod.DeletionTimestamp != nil {
			continue // terminating: gone from the tier's requests
		}
		req := request(m.Pod, resource)
		if req <= 0 {
			continue
		}
		requested += req
		switch {
		case p.evictions.Going(m, now):
			going += req
		case m.Evictable() && qosmanager.UnderPriorityThreshold(m, priorityThreshold):
			// Usage is the request: exact in a float64 up to 2^53 bytes or millicores.
			candidates = append(candidates, qosmanager.Candidate{Meta: m, Usage: float64(req)})
		}
	}
	// Compared as requested x 100 against allocatable x percent, in integers: exact, and far from overflowing for
	// any node's bytes.
	if requested*100 <= allocatable*thresholdPct {
		return nil
	}
	unit := unitOf(resource)
	threshold, lower := pctOf(allocatable, thresholdPct), pctOf(allocatable, lowerPct)
	log = log.WithValues("allocatable", unit(float64(allocatable)), "requested", unit(float64(requested)), "threshold", unit(threshold),
		"thresholdPercent", thresholdPct, "lower", unit(lower), "lowerPercent", lowerPct, "goingRequests", unit(float64(going)))
	projected := requested - going
	if projected*100 <= allocatable*lowerPct {
		log.V(4).Info("requests above the allocatable eviction threshold; the pods on their way out bring them to the lower percent")
		return nil
	}

	p.badOrder.Prune(func(uid types.UID) bool { return p.states.GetPod(uid) != nil })
	qosmanager.SortForEviction(ctx, candidates, p.badOrder)
	var errs []error
	for _, c := range candidates {
		if projected*100 <= allocatable*lowerPct {
			break
		}
		req := int64(c.Usage)
		after := projected - req
		msg := fmt.Sprintf("the node's pods request %s of %s, above %d%% of the node's allocatable %s (%s); evicting pods that request it "+
			"until the projected requests are at or below %d%% (%s): projected %s, this pod requests %s, projected after it %s",
			unit(float64(requested)), resource, thresholdPct, unit(float64(allocatable)), unit(threshold), lowerPct, unit(lower),
			unit(float64(projected)), unit(float64(req)), unit(float64(after)))
		res, err := p.evictor.Evict(ctx, c.Meta.Pod, Reason, msg)
		if err != nil {
			errs = append(errs, fmt.Errorf("evicting pod %s for %s: %w", c.Meta.Key(), resource, err))
			if errors.Is(err, evictor.ErrUnreachable) {
				break
			}
			continue
		}
		if !res.Releasing() {
			// Refused by a PodDisruptionBudget or deferred by the rate limit: nothing was sent, so the pod does not
			// count as gone; the next one is asked instead.
			log.V(1).Info("pod not evicted now; trying the next", "pod", klog.KObj(c.Meta.Pod), "podRequest", unit(c.Usage), "result", res)
			continue
		}
		p.evictions.Requested(c.Meta.Pod.UID, now)
		log.Info("evicted pod: its tier requests more than the node offers", "pod", klog.KObj(c.Meta.Pod), "podRequest", unit(c.Usage),
			"projected", unit(float64(projected)), "projectedAfter", unit(float64(after)))
		projected = after
	}
	if projected*100 > allocatable*lowerPct {
		log.V(1).Info("requests stay above the lower percent: no pod left to evict now", "projected", unit(float64(projected)),
			"candidates", len(candidates))
	}
	return errors.Join(errs...)
}

// request is the pod's request of resource as the scheduler counts it (the larger of its containers' sum and its
// largest init container, plus sidecars; the resized requests of the status where the kubelet reports them).
func request(pod *corev1.Pod, resource corev1.ResourceName) int64 {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true})
	q, ok := reqs[resource]
	if !ok {
		return 0
	}
	return q.Value()
}

// pctOf is v x pct / 100.
func pctOf(v, pct int64) float64 { return float64(v) * float64(pct) / 100 }

// unitOf formats amounts of resource for logs and messages: the CPU resources are counted in millicores, the
// memory ones in bytes (shown in MiB).
func unitOf(resource corev1.ResourceName) func(float64) string {
	if resource == slov1alpha1.BatchCPU || resource == slov1alpha1.MidCPU {
		return func(v float64) string { return fmt.Sprintf("%.0fm", v) }
	}
	return func(v float64) string { return fmt.Sprintf("%.0fMi", v/(1<<20)) }
}

// Asks implements qosmanager.ReportingPlugin: the strategy is enabled with the percents of a tier's resource.
func (p *Plugin) Asks(spec *slov1alpha1.NodeSLOSpec) bool {
	s := spec.ResourceUsedThresholdWithBE
	if !ptr.Deref(s.Enable, false) {
		return false
	}
	for _, a := range accounts() {
		if _, _, ok := percents(s, a); ok {
			return true
		}
	}
	return false
}
