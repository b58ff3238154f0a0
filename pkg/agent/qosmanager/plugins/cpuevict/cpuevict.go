package cpuevict

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/collector"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

const (
	// Name is the plugin's name in --qos-plugins.
	Name = "cpuevict"
	// DefaultInterval is how often the plugin runs by default: as often as the collectors sample the best-effort
	// CPU (every second), so that a window of 1 s (the default) sees every sample.
	DefaultInterval = time.Second
	// Reason is the reason of the plugin's evictions (events and the evictor's counter).
	Reason = "BECPUSatisfaction"
)

const (
	// settle is how long a pod whose eviction was requested (or whose deletion time passed) counts as gone; see
	// qosmanager.Evictions.
	settle = 30 * time.Second
	// maxSampleAge is the age beyond which the newest best-effort CPU sample is too old to act on: the collector
	// stopped, so the plugin waits rather than evict on old numbers.
	maxSampleAge = 5 * time.Second
	// minCoverage is how much of the window the samples must reach back over: satisfaction must stay low over
	// the window, which a series younger than the window cannot show.
	minCoverage = 0.8
)

// Plugin evicts best-effort pods whose CPU satisfaction stays low while they use what they get.
type Plugin struct {
	states    statesinformer.States
	cache     metriccache.Cache
	evictor   qosmanager.Evictor
	clock     clock.PassiveClock
	retention time.Duration // the longest window the cache answers; 0 when unknown
	evictions *qosmanager.Evictions
	badOrder  *qosmanager.Warnings // malformed eviction-priority annotations
}

var (
	_ qosmanager.RunPlugin        = &Plugin{}
	_ qosmanager.ValidatingPlugin = &Plugin{}
)

// New returns the CPU satisfaction eviction plugin. It needs d.States, d.Cache, d.Evictor and d.Clock.
func New(d qosmanager.Deps) (qosmanager.RunPlugin, error) {
	if err := d.Need(Name, "States", "Cache", "Evictor", "Clock"); err != nil {
		return nil, err
	}
	p := &Plugin{states: d.States, cache: d.Cache, evictor: d.Evictor, clock: d.Clock, evictions: qosmanager.NewEvictions(settle), badOrder: qosmanager.NewWarnings(d.Events, qosmanager.ReasonBadEvictionPriority)}
	if c, ok := d.Cache.(interface{ Config() metriccache.Config }); ok {
		p.retention = c.Config().Retention()
	}
	return p, nil
}

// Name implements qosmanager.Plugin.
func (p *Plugin) Name() string { return Name }

const field = "resourceUsedThresholdWithBE."

// on reports whether CPU eviction is on: the strategy is enabled and both satisfaction percents are set.
func on(s *slov1alpha1.ResourceThresholdStrategy) bool {
	return ptr.Deref(s.Enable, false) && s.CPUEvictBESatisfactionLowerPercent != nil && s.CPUEvictBESatisfactionUpperPercent != nil
}

// Validate implements qosmanager.ValidatingPlugin. A NodeSLO that disables the strategy, or sets neither
// satisfaction percent, is accepted (CPU eviction is off); one that sets one of them needs both in [1, 100], the
// lower not above the upper, the usage threshold in [1, 100] and a window of 1 to MaxCPUEvictTimeWindowSeconds
// seconds that the metric cache keeps.
func (p *Plugin) Validate(spec *slov1alpha1.NodeSLOSpec) error {
	s := spec.ResourceUsedThresholdWithBE
	lower, upper := s.CPUEvictBESatisfactionLowerPercent, s.CPUEvictBESatisfactionUpperPercent
	if !ptr.Deref(s.Enable, false) || (lower == nil && upper == nil) {
		return nil
	}
	const lowerField, upperField = field + "cpuEvictBESatisfactionLowerPercent", field + "cpuEvictBESatisfactionUpperPercent"
	var errs []error
	switch {
	case lower == nil:
		errs = append(errs, fmt.Errorf("%s is set but %s is not: CPU eviction needs both", upperField, lowerField))
	case upper == nil:
		errs = append(errs, fmt.Errorf("%s is set but %s is not: CPU eviction needs both", lowerField, upperField))
	default:
		errs = append(errs, qosmanager.CheckPercent(lowerField, lower, 1), qosmanager.CheckPercent(upperField, upper, 1),
			qosmanager.CheckOrder(lowerField, lower, upperField, upper))
	}
	errs = append(errs, qosmanager.CheckPercent(field+"cpuEvictBEUsageThresholdPercent", s.CPUEvictBEUsageThresholdPercent, 1))
	const windowField = field + "cpuEvictTimeWindowSeconds"
	switch w := s.CPUEvictTimeWindowSeconds; {
	case w == nil:
		errs = append(errs, fmt.Errorf("%s is unset", windowField))
	case *w < 1:
		errs = append(errs, fmt.Errorf("%s is %d, below 1", windowField, *w))
	case *w > slov1alpha1.MaxCPUEvictTimeWindowSeconds:
		// Checked before the multiplication below, which a large enough value overflows into a negative window.
		errs = append(errs, fmt.Errorf("%s is %d, above %d", windowField, *w, slov1alpha1.MaxCPUEvictTimeWindowSeconds))
	case p.retention > 0 && time.Duration(*w)*time.Second > p.retention:
		errs = append(errs, fmt.Errorf("%s is %d, longer than the %d s the metric cache keeps", windowField, *w, int64(p.retention/time.Second)))
	}
	return errors.Join(errs...)
}

// window is the best-effort CPU averaged over the window that ends with the newest sample.
type window struct {
	limit, request, usage float64 // cores, averages over the window
	limitNow              float64 // cores, the newest sample
	policy                string  // what limit is, for logs and messages
	start, end            time.Time
}

// Run implements qosmanager.RunPlugin: when the best-effort pods' CPU satisfaction (real limit / requests,
// averaged over the window) is below the lower percent while they use at least the usage threshold of their real
// limit, it evicts best-effort pods, lowest priority first and then largest CPU use, until the projected
// satisfaction (the newest real limit / the requests of the pods that stay) is at least the upper percent.
func (p *Plugin) Run(ctx context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	s := spec.ResourceUsedThresholdWithBE
	if !on(s) {
		return nil
	}
	now := p.clock.Now()
	p.evictions.Prune(now)
	log := klog.FromContext(ctx)
	w, why := p.window(now, time.Duration(*s.CPUEvictTimeWindowSeconds)*time.Second, s.CPUEvictPolicy)
	if why != "" {
		log.V(4).Info("CPU satisfaction not evaluated", "why", why)
		return nil
	}
	lowerPct, upperPct, usagePct := *s.CPUEvictBESatisfactionLowerPercent, *s.CPUEvictBESatisfactionUpperPercent, *s.CPUEvictBEUsageThresholdPercent
	satisfaction, utilisation := w.limit/w.request, w.usage/w.limit
	log = log.WithValues("satisfaction", pct(satisfaction), "lowerPercent", lowerPct, "upperPercent", upperPct,
		"utilisation", pct(utilisation), "usageThresholdPercent", usagePct, "limit", w.limit, "policy", w.policy, "request", w.request, "usage", w.usage,
		"windowSeconds", *s.CPUEvictTimeWindowSeconds)
	if satisfaction >= float64(lowerPct)/100 || utilisation < float64(usagePct)/100 {
		log.V(5).Info("best-effort CPU satisfaction is fine")
		return nil
	}

	remaining, going := 0.0, 0
	var candidates []qosmanager.Candidate
	for _, m := range p.states.GetAllPods() {
		req := collector.BECPURequest(m)
		if p.evictions.Going(m, now) {
			going++
			continue
		}
		remaining += req
		// A best-effort pod outside the requests would not change the satisfaction: it is not evicted for it.
		if m.BestEffort && req > 0 && qosmanager.UnderPriorityThreshold(m, s.EvictEnabledPriorityThreshold) {
			candidates = append(candidates, qosmanager.Candidate{Meta: m, Usage: p.podUsage(m, w)})
		}
	}
	projected := satisfactionOf(w.limitNow, remaining)
	log = log.WithValues("limitNow", w.limitNow, "goingPods", going)
	if projected >= float64(upperPct)/100 {
		log.V(2).Info("best-effort CPU satisfaction is low, but at the newest limit without the pods on their way out it is not",
			"projected", pct(projected), "requestRemaining", remaining)
		return nil
	}

	p.badOrder.Prune(func(uid types.UID) bool { return p.states.GetPod(uid) != nil })
	qosmanager.SortForEviction(ctx, candidates, p.badOrder)
	var errs []error
	for _, c := range candidates {
		if projected >= float64(upperPct)/100 {
			break
		}
		req := collector.BECPURequest(c.Meta)
		after := satisfactionOf(w.limitNow, remaining-req)
		msg := fmt.Sprintf("best-effort CPU satisfaction %s (%s %.2f / requests %.2f cores, %d s average) is below %d%% while best-effort pods use %s of their limit (threshold %d%%); "+
			"evicting best-effort pods until the projected satisfaction is at least %d%%: projected %s, this pod requests %.2f and uses %.2f cores, projected after it %s",
			pct(satisfaction), w.policy, w.limit, w.request, *s.CPUEvictTimeWindowSeconds, lowerPct, pct(utilisation), usagePct, upperPct, pct(projected), req, c.Usage, pct(after))
		res, err := p.evictor.Evict(ctx, c.Meta.Pod, Reason, msg)
		if err != nil {
			errs = append(errs, fmt.Errorf("evicting pod %s for CPU satisfaction: %w", c.Meta.Key(), err))
			continue
		}
		if !res.Releasing() {
			log.V(1).Info("best-effort pod not evicted now; trying the next", "pod", klog.KObj(c.Meta.Pod), "podRequest", req, "podUsage", c.Usage)
			continue
		}
		p.evictions.Requested(c.Meta.Pod.UID, now)
		log.Info("evicted best-effort pod for CPU satisfaction", "pod", klog.KObj(c.Meta.Pod), "podRequest", req, "podUsage", c.Usage,
			"projected", pct(projected), "projectedAfter", pct(after))
		remaining, projected = remaining-req, after
	}
	if projected < float64(upperPct)/100 {
		log.V(1).Info("best-effort CPU satisfaction stays below the upper percent: no best-effort pod left to evict now",
			"projected", pct(projected), "candidates", len(candidates))
	}
	return errors.Join(errs...)
}

// window reads the best-effort CPU series over the length d ending with the newest sample of the real limit, or
// says why it cannot. With the evictByAllocatable policy the limit, then and now, is the node's allocatable
// batch-cpu instead of the real limit.
func (p *Plugin) window(now time.Time, d time.Duration, policy slov1alpha1.CPUEvictPolicy) (window, string) {
	newest, ok := p.cache.Query(metriccache.NodeKey(metriccache.BECPURealLimit), now.Add(-maxSampleAge), now)
	if !ok {
		return window{}, fmt.Sprintf("no %s sample in the last %s", metriccache.BECPURealLimit, maxSampleAge)
	}
	w := window{limitNow: newest.Value(metriccache.Last), policy: "real limit", end: newest.Last, start: newest.Last.Add(-d)}
	for _, s := range []struct {
		m metriccache.Metric
		v *float64
	}{{metriccache.BECPURealLimit, &w.limit}, {metriccache.BECPURequest, &w.request}, {metriccache.BECPUUsage, &w.usage}} {
		r, ok := p.cache.Query(metriccache.NodeKey(s.m), w.start, w.end)
		if !ok || r.Coverage < minCoverage {
			return window{}, fmt.Sprintf("%s has samples over %.0f%% of the window, fewer than %.0f%%", s.m, 100*r.Coverage, 100*minCoverage)
		}
		*s.v = r.Value(metriccache.Avg)
	}
	if policy == slov1alpha1.CPUEvictByAllocatable {
		node := p.states.GetNode()
		if node == nil {
			return window{}, "the Node is not known yet"
		}
		q, ok := node.Status.Allocatable[slov1alpha1.BatchCPU]
		if !ok {
			return window{}, "the node publishes no " + string(slov1alpha1.BatchCPU)
		}
		w.limit, w.limitNow, w.policy = float64(q.Value())/1000, float64(q.Value())/1000, "allocatable batch-cpu"
	}
	switch {
	case w.request <= 0:
		return window{}, "best-effort pods request no CPU"
	case w.limit <= 0:
		return window{}, "best-effort pods may use no CPU"
	}
	return w, ""
}

// podUsage is the pod's CPU use, cores, averaged over the window; 0 without samples.
func (p *Plugin) podUsage(m *statesinformer.PodMeta, w window) float64 {
	r, ok := p.cache.Query(metriccache.PodKey(metriccache.PodCPUUsage, string(m.Pod.UID)), w.start, w.end)
	if !ok {
		return 0
	}
	return r.Value(metriccache.Avg)
}

// satisfactionOf is limit / request, +Inf when nothing is requested.
func satisfactionOf(limit, request float64) float64 {
	if request <= 0 {
		return math.Inf(1)
	}
	return limit / request
}

// pct formats a ratio as a percent for logs and messages.
func pct(r float64) string {
	if math.IsInf(r, 1) {
		return "unbounded"
	}
	return fmt.Sprintf("%.0f%%", 100*r)
}

// Asks implements qosmanager.ReportingPlugin: CPU eviction is on.
func (p *Plugin) Asks(spec *slov1alpha1.NodeSLOSpec) bool {
	return on(spec.ResourceUsedThresholdWithBE)
}
