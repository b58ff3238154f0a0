package pressureevict

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/evictor"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

const (
	// Name is the plugin's name in --qos-plugins.
	Name = "pressureevict"
	// DefaultInterval is how often the plugin runs by default: as often as the psi collector samples.
	DefaultInterval = time.Second
	// Reason is the reason of the plugin's evictions (events and the evictor's counter).
	Reason = "ServiceStall"
)

const (
	// settle is how long a pod whose eviction was requested counts as going (qosmanager.Evictions).
	settle = 30 * time.Second
	// minCoverage is how much of the window a stall series must reach back over to be judged: a pod that started
	// (or an agent that restarted) a moment ago has no average yet.
	minCoverage = 0.8
	// usageMaxAge is the age beyond which a pod's memory sample is too old to rank with.
	usageMaxAge = 5 * time.Second
	// ownLimitShare is the share of its own memory limit at or above which a pod's memory (page cache included)
	// says that it stalls against that limit: evicting batch work would not give it more.
	ownLimitShare = 0.9
)

// Plugin evicts best-effort pods, then mid-tier pods, one at a time, while a service stalls on memory or CPU.
type Plugin struct {
	states    statesinformer.States
	cache     metriccache.Cache
	cgroups   cgroup.Reader
	layout    cgroup.Layout
	evictor   qosmanager.Evictor
	clock     clock.PassiveClock
	version   cgroup.Version
	fine      time.Duration // how far back the cache keeps per-second pod samples; 0 when unknown
	evictions *qosmanager.Evictions
	badOrder  *qosmanager.Warnings // malformed eviction-priority annotations

	// quietFrom is the start of the stall the plugin may judge: the last run that saw a pod on its way out. The
	// stall of a window that reaches back before it still holds what that pod caused.
	quietFrom time.Time
	// cpuOnV1Said is whether the log said once that CPU stall is not judged on cgroup v1.
	cpuOnV1Said bool
	// cpuOnV1 is whether the last run's strategy asked for CPU stall on cgroup v1 (Unsupported).
	cpuOnV1 bool
}

var (
	_ qosmanager.RunPlugin        = &Plugin{}
	_ qosmanager.ValidatingPlugin = &Plugin{}
)

// New returns the pressure-stall eviction plugin. It needs d.States, d.Cache, d.Cgroups, d.Evictor and d.Clock.
func New(d qosmanager.Deps) (qosmanager.RunPlugin, error) {
	if err := d.Need(Name, "States", "Cache", "Cgroups", "Evictor", "Clock"); err != nil {
		return nil, err
	}
	p := &Plugin{states: d.States, cache: d.Cache, cgroups: d.Cgroups, layout: d.Layout, evictor: d.Evictor, clock: d.Clock,
		version: d.CgroupVersion(), evictions: qosmanager.NewEvictions(settle), badOrder: qosmanager.NewWarnings(d.Events, qosmanager.ReasonBadEvictionPriority)}
	if c, ok := d.Cache.(interface{ Config() metriccache.Config }); ok {
		cfg := c.Config()
		p.fine = time.Duration(cfg.PodSlots) * cfg.Step
	}
	return p, nil
}

// Name implements qosmanager.Plugin.
func (p *Plugin) Name() string { return Name }

const field = "resourceUsedThresholdWithBE."

// Validate implements qosmanager.ValidatingPlugin. A NodeSLO that disables the strategy, or sets neither pressure
// percent, is accepted (the plugin is off); otherwise each percent that is set must be in [1, 100], and the window
// 1 to MaxPressureEvictWindowSeconds seconds of per-second samples: a window longer than the cache's per-second
// ring would be averaged from 30-second averages, which hide the stall the plugin acts on.
func (p *Plugin) Validate(spec *slov1alpha1.NodeSLOSpec) error {
	s := spec.ResourceUsedThresholdWithBE
	if !ptr.Deref(s.Enable, false) || (s.MemoryEvictPressurePercent == nil && s.CPUEvictPressurePercent == nil) {
		return nil
	}
	var errs []error
	if s.MemoryEvictPressurePercent != nil {
		errs = append(errs, qosmanager.CheckPercent(field+"memoryEvictPressurePercent", s.MemoryEvictPressurePercent, 1))
	}
	if s.CPUEvictPressurePercent != nil {
		errs = append(errs, qosmanager.CheckPercent(field+"cpuEvictPressurePercent", s.CPUEvictPressurePercent, 1))
	}
	const windowField = field + "pressureEvictWindowSeconds"
	w := s.PressureEvictWindowSeconds
	if err := qosmanager.CheckRange(windowField, w, 1, slov1alpha1.MaxPressureEvictWindowSeconds); err != nil {
		errs = append(errs, err)
	} else if p.fine > 0 && time.Duration(*w)*time.Second > p.fine {
		errs = append(errs, fmt.Errorf("%s is %d, longer than the %d s of per-second pod samples the metric cache keeps (--metric-cache-pod-slots)",
			windowField, *w, int64(p.fine/time.Second)))
	}
	return errors.Join(errs...)
}

// trigger is one resource whose stall the plugin watches, with its percent.
type trigger struct {
	resource system.PSIResource
	percent  int64
}

// triggers are the resources the NodeSLO turns on, memory first; CPU only on cgroup v2.
func (p *Plugin) triggers(ctx context.Context, s *slov1alpha1.ResourceThresholdStrategy) []trigger {
	p.cpuOnV1 = false
	if !ptr.Deref(s.Enable, false) {
		return nil
	}
	var out []trigger
	if v := s.MemoryEvictPressurePercent; v != nil {
		out = append(out, trigger{system.PSIMemory, *v})
	}
	if v := s.CPUEvictPressurePercent; v != nil {
		p.cpuOnV1 = p.version != cgroup.V2
		if p.version == cgroup.V2 {
			out = append(out, trigger{system.PSICPU, *v})
		} else if !p.cpuOnV1Said {
			p.cpuOnV1Said = true
			klog.FromContext(ctx).Info("cpuEvictPressurePercent is not acted on: cgroup v1 has no per-pod CPU stall, and the node's includes best-effort pods waiting behind the services",
				"cgroupVersion", p.version)
		}
	}
	return out
}

// Run implements qosmanager.RunPlugin: when a service's stall on memory (then CPU), averaged over the window, is at
// or above its percent, it evicts the first best-effort (then mid-tier) pod in eviction order that uses the
// resource. While a best-effort or mid-tier pod is on its way out (evicted by it or by anyone), and for a window
// after, it judges nothing: the stall it measures then still holds what the pod caused.
func (p *Plugin) Run(ctx context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	s := spec.ResourceUsedThresholdWithBE
	triggers := p.triggers(ctx, s)
	if len(triggers) == 0 {
		return nil
	}
	now := p.clock.Now()
	p.evictions.Prune(now)
	window := time.Duration(ptr.Deref(s.PressureEvictWindowSeconds, 10)) * time.Second
	log := klog.FromContext(ctx).WithValues("window", window)
	pods := p.states.GetAllPods()
	for _, m := range pods {
		// Only best-effort and mid-tier pods: a service rolling over says nothing about what batch work causes.
		if m.Evictable() && p.evictions.Going(m, now) {
			p.quietFrom = now
			log.V(4).Info("a pod is on its way out; the stall is judged a window after it is gone", "pod", klog.KObj(m.Pod))
			return nil
		}
	}
	start := now.Add(-window)
	if start.Before(p.quietFrom) {
		log.V(4).Info("waiting for a window of stall measured after the last eviction", "from", p.quietFrom)
		return nil
	}
	for _, tr := range triggers {
		st, ok := p.worstStall(ctx, tr, pods, start, now)
		if !ok {
			continue
		}
		return p.evictOne(ctx, s, tr, st, pods, start, now)
	}
	return nil
}

// stall is the worst stall found: its share of the window (0..1) and whose it is.
type stall struct {
	share float64
	who   string
}

// worstStall is the highest stall share of the resource over [start, now] at or above the trigger's percent: the
// node's on cgroup v1, else that of the pods the plugins never evict (services and system pods), leaving out a pod
// that stalls against its own memory limit, and for CPU the part of a pod's stall its own CFS quota explains
// (pastOwnQuota). ok is false when nothing is at or above the percent.
func (p *Plugin) worstStall(ctx context.Context, tr trigger, pods []*statesinformer.PodMeta, start, now time.Time) (stall, bool) {
	name := string(tr.resource) + "/some"
	at := float64(tr.percent) / 100
	if p.version != cgroup.V2 {
		r, ok := p.cache.Query(metriccache.NamedKey(metriccache.NodePressure, name), start, now)
		if !ok || r.Coverage < minCoverage || r.Value(metriccache.Avg) < at {
			return stall{}, false
		}
		return stall{share: r.Value(metriccache.Avg), who: "the node (cgroup v1 has no per-pod stall)"}, true
	}
	var worst stall
	for _, m := range pods {
		if m.Evictable() {
			continue
		}
		r, ok := p.cache.Query(metriccache.PodNamedKey(metriccache.PodPressure, string(m.Pod.UID), name), start, now)
		if !ok || r.Coverage < minCoverage {
			continue
		}
		v := r.Value(metriccache.Avg)
		if tr.resource == system.PSICPU {
			v = p.pastOwnQuota(ctx, m, v, start, now)
		}
		if v < at || v <= worst.share {
			continue
		}
		if tr.resource == system.PSIMemory && p.atOwnLimit(ctx, m) {
			continue
		}
		worst = stall{share: v, who: "pod " + m.Key()}
	}
	return worst, worst.who != ""
}

// atOwnLimit reports whether the pod's memory, page cache included, is at least ownLimitShare of the pod's own
// limit: its stall is then its limit's doing. A pod whose cgroup cannot be read counts as not at its limit.
func (p *Plugin) atOwnLimit(ctx context.Context, m *statesinformer.PodMeta) bool {
	dir := p.layout.PodDir(m.Pod)
	limit, err := p.cgroups.MemoryLimit(dir)
	if err != nil || limit <= 0 {
		return false
	}
	st, err := p.cgroups.MemoryStat(dir)
	if err != nil {
		return false
	}
	charged := st.ActiveAnon + st.InactiveAnon + st.ActiveFile + st.InactiveFile + st.Unevictable
	if float64(charged) < ownLimitShare*float64(limit) {
		return false
	}
	klog.FromContext(ctx).V(2).Info("a pod stalls on memory at its own limit; its stall is not counted", "pod", klog.KObj(m.Pod),
		"memory", mib(float64(charged)), "limit", mib(float64(limit)))
	return true
}

// pastOwnQuota is the pod's CPU stall share over [start, now] less the share of CFS periods in which the pod hit
// its own quota (the podthrottled collector's ratio, averaged over the same window): a throttled pod's runnable
// tasks wait, and count in its CPU pressure, until its next period however idle the node is, and evicting batch work
// would not give it more than its quota. A throttled period's stall is at most the period, so what is left is, if
// anything, less than the stall other pods cause: the plugin errs towards not evicting. A pod without a quota, or
// without throttling samples, keeps its whole stall.
func (p *Plugin) pastOwnQuota(ctx context.Context, m *statesinformer.PodMeta, stall float64, start, now time.Time) float64 {
	r, ok := p.cache.Query(metriccache.PodKey(metriccache.PodCPUThrottledRatio, string(m.Pod.UID)), start, now)
	if !ok {
		return stall
	}
	throttled := r.Value(metriccache.Avg)
	if throttled <= 0 {
		return stall
	}
	left := max(stall-throttled, 0)
	klog.FromContext(ctx).V(2).Info("a pod stalls on CPU against its own quota; that part of its stall is not counted", "pod", klog.KObj(m.Pod),
		"stall", pct(stall), "throttledPeriods", pct(throttled), "counted", pct(left))
	return left
}

// evictOne evicts the first pod in eviction order, of those that use the resource, that the evictor accepts.
func (p *Plugin) evictOne(ctx context.Context, s *slov1alpha1.ResourceThresholdStrategy, tr trigger, st stall, pods []*statesinformer.PodMeta, start, now time.Time) error {
	log := klog.FromContext(ctx).WithValues("resource", tr.resource, "stall", pct(st.share), "of", st.who, "percent", tr.percent)
	var candidates []qosmanager.Candidate
	for _, m := range pods {
		if !m.Evictable() || !qosmanager.UnderPriorityThreshold(m, s.EvictEnabledPriorityThreshold) {
			continue
		}
		if u := p.usage(tr.resource, m, start, now); u > 0 { // a pod that uses none of it frees nothing
			candidates = append(candidates, qosmanager.Candidate{Meta: m, Usage: u})
		}
	}
	if len(candidates) == 0 {
		log.V(1).Info("a service stalls, but no best-effort or mid-tier pod that uses the resource is left to evict")
		return nil
	}
	p.badOrder.Prune(func(uid types.UID) bool { return p.states.GetPod(uid) != nil })
	qosmanager.SortForEviction(ctx, candidates, p.badOrder)
	var errs []error
	for _, c := range candidates {
		msg := fmt.Sprintf("%s stalled on %s %s of the last %s (pressure stall information, some), at or above %d%%; "+
			"evicting best-effort pods, then mid-tier pods, one at a time while it stays there: this pod uses %s",
			st.who, tr.resource, pct(st.share), now.Sub(start), tr.percent, usageString(tr.resource, c.Usage))
		res, err := p.evictor.Evict(ctx, c.Meta.Pod, Reason, msg)
		if errors.Is(err, evictor.ErrUnreachable) && tr.resource == system.PSIMemory {
			// As for memory use: the services stall and the API server does not answer; the last resort.
			res, err = p.evictor.KillLocally(ctx, c.Meta.Pod, p.layout.PodDir(c.Meta.Pod), Reason, msg+"; the API server cannot be reached")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("evicting pod %s for %s stall: %w", c.Meta.Key(), tr.resource, err))
			continue
		}
		if !res.Releasing() {
			log.V(1).Info("pod not evicted now; trying the next", "pod", klog.KObj(c.Meta.Pod))
			continue
		}
		p.evictions.Requested(c.Meta.Pod.UID, now)
		p.quietFrom = now
		log.Info("evicted a pod for a service's stall", "pod", klog.KObj(c.Meta.Pod), "tier", qosmanager.Tier(c.Meta), "usage", usageString(tr.resource, c.Usage))
		break
	}
	return errors.Join(errs...)
}

// usage is what the pod uses of the resource: its latest memory sample (bytes, without page cache) if fresh, or its
// CPU use (cores) averaged over the window; 0 when unknown.
func (p *Plugin) usage(r system.PSIResource, m *statesinformer.PodMeta, start, now time.Time) float64 {
	uid := string(m.Pod.UID)
	if r == system.PSIMemory {
		res, ok := p.cache.Query(metriccache.PodKey(metriccache.PodMemoryUsage, uid), now.Add(-usageMaxAge), now)
		if !ok {
			return 0
		}
		return res.Value(metriccache.Last)
	}
	res, ok := p.cache.Query(metriccache.PodKey(metriccache.PodCPUUsage, uid), start, now)
	if !ok {
		return 0
	}
	return res.Value(metriccache.Avg)
}

func usageString(r system.PSIResource, v float64) string {
	if r == system.PSIMemory {
		return mib(v)
	}
	return fmt.Sprintf("%.2f cores", v)
}

func mib(b float64) string { return fmt.Sprintf("%.0fMi", b/(1<<20)) }

func pct(share float64) string { return fmt.Sprintf("%.0f%%", 100*share) }

// Asks implements qosmanager.ReportingPlugin: the strategy is enabled with a memory or CPU stall percent.
func (p *Plugin) Asks(spec *slov1alpha1.NodeSLOSpec) bool {
	s := spec.ResourceUsedThresholdWithBE
	return ptr.Deref(s.Enable, false) && (s.MemoryEvictPressurePercent != nil || s.CPUEvictPressurePercent != nil)
}

// Unsupported implements qosmanager.SteppingAside: cpuEvictPressurePercent on cgroup v1, which has no per-pod CPU
// stall.
func (p *Plugin) Unsupported() string {
	if p.cpuOnV1 {
		return "cpuEvictPressurePercent is not acted on: cgroup v1 has no per-pod CPU stall, and the node's includes best-effort pods waiting behind the services"
	}
	return ""
}
