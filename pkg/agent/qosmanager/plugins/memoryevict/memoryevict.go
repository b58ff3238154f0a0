package memoryevict

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/proc"
)

const (
	// Name is the plugin's name in --qos-plugins.
	Name = "memoryevict"
	// DefaultInterval is how often the plugin runs by default. A run that finds the node under the threshold reads
	// /proc/meminfo and nothing else, so running twice a second costs little and keeps the time from memory
	// pressure to the eviction request under 1 s.
	DefaultInterval = 500 * time.Millisecond
	// Reason is the reason of the plugin's evictions (events and the evictor's counter).
	Reason = "NodeMemoryUsage"
)

// settle is how long a pod whose eviction was requested (or whose deletion time passed) counts as gone: long
// enough for the API server's deletion to reach the states informer and for the pod's processes to exit; a pod
// still there after that counts again, so one stuck terminating is replaced by another eviction.
const settle = 30 * time.Second

// usageMaxAge is the age beyond which a pod's memory sample is too old to rank or project with; the pod collector
// samples every second.
const usageMaxAge = 5 * time.Second

// Plugin evicts best-effort pods, then mid-tier pods, under node memory pressure.
type Plugin struct {
	states    statesinformer.States
	cache     metriccache.Cache
	proc      *proc.FS
	evictor   qosmanager.Evictor
	layout    cgroup.Layout
	clock     clock.PassiveClock
	evictions *qosmanager.Evictions
	badOrder  *qosmanager.Warnings // malformed eviction-priority annotations
	pressure  pressure
}

var (
	_ qosmanager.RunPlugin        = &Plugin{}
	_ qosmanager.ValidatingPlugin = &Plugin{}
)

// New returns the memory eviction plugin. It needs d.States, d.Cache, d.Proc, d.Evictor, d.Pressure and d.Clock.
func New(d qosmanager.Deps) (qosmanager.RunPlugin, error) {
	if err := d.Need(Name, "States", "Cache", "Proc", "Evictor", "Pressure", "Clock"); err != nil {
		return nil, err
	}
	return &Plugin{states: d.States, cache: d.Cache, proc: d.Proc, evictor: d.Evictor, layout: d.Layout, clock: d.Clock, evictions: qosmanager.NewEvictions(settle),
		badOrder: qosmanager.NewWarnings(d.Events, qosmanager.ReasonBadEvictionPriority), pressure: pressure{reporter: d.Pressure}}, nil
}

// Name implements qosmanager.Plugin.
func (p *Plugin) Name() string { return Name }

const field = "resourceUsedThresholdWithBE."

// Validate implements qosmanager.ValidatingPlugin. A NodeSLO that disables the strategy is accepted whatever its
// thresholds, so that switching it off always works; an enabled one needs both percents in [1, 100], the lower
// one not above the threshold, and a hold of 0 to MaxMemoryEvictHoldSeconds.
func (p *Plugin) Validate(spec *slov1alpha1.NodeSLOSpec) error {
	s := spec.ResourceUsedThresholdWithBE
	if !ptr.Deref(s.Enable, false) {
		return nil
	}
	return errors.Join(
		qosmanager.CheckPercent(field+"memoryEvictThresholdPercent", s.MemoryEvictThresholdPercent, 1),
		qosmanager.CheckPercent(field+"memoryEvictLowerPercent", s.MemoryEvictLowerPercent, 1),
		qosmanager.CheckOrder(field+"memoryEvictLowerPercent", s.MemoryEvictLowerPercent, field+"memoryEvictThresholdPercent", s.MemoryEvictThresholdPercent),
		qosmanager.CheckRange(field+"memoryEvictHoldSeconds", s.MemoryEvictHoldSeconds, 0, slov1alpha1.MaxMemoryEvictHoldSeconds),
	)
}

// Run implements qosmanager.RunPlugin: when the node's memory use (MemTotal - MemAvailable, read now) is above
// the threshold, it evicts best-effort pods, lowest priority first and then largest memory use, then mid-tier pods
// in the same order, until the projected use (the use minus the memory of the pods evicted or on their way out) is
// under the lower percent. The mid tier is not touched while a best-effort pod's memory is unknown (no fresh
// sample): that pod may hold what evicting a mid pod would free.
//
// It also keeps the node's memory pressure in the NodeMetric (status.memoryPressure): from the first run above the
// threshold until memoryEvictHoldSeconds after the last one, listing each pod before its eviction is sent, so
// that gleaner-manager has stopped offering batch pods memory on the node by the time the evicted pod's
// replacement asks for a place. Switching the strategy off ends it at once.
func (p *Plugin) Run(ctx context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	s := spec.ResourceUsedThresholdWithBE
	p.pressure.begin()
	if !ptr.Deref(s.Enable, false) {
		p.pressure.end()
		return p.pressure.publish(ctx)
	}
	now := p.clock.Now()
	p.evictions.Prune(now)
	mem, err := p.proc.MemInfo()
	if err != nil {
		return fmt.Errorf("reading the node's memory use: %w", err)
	}
	total, used := float64(mem.Total), float64(mem.Used())
	thresholdPct, lowerPct := *s.MemoryEvictThresholdPercent, *s.MemoryEvictLowerPercent
	threshold, lower := total*float64(thresholdPct)/100, total*float64(lowerPct)/100
	hold := time.Duration(ptr.Deref(s.MemoryEvictHoldSeconds, slov1alpha1.DefaultMemoryEvictHoldSeconds)) * time.Second
	if used <= threshold {
		p.pressure.expire(ctx, now, hold)
		return p.pressure.publish(ctx)
	}
	p.pressure.observe(ctx, now, hold)
	log := klog.FromContext(ctx).WithValues("total", mib(total), "used", mib(used), "threshold", mib(threshold), "thresholdPercent", thresholdPct,
		"lower", mib(lower), "lowerPercent", lowerPct)

	projected, going, unknown, unknownBE := used, 0, 0, 0
	var candidates []qosmanager.Candidate
	for _, m := range p.states.GetAllPods() {
		if !m.Evictable() {
			continue
		}
		usage, ok := p.usage(m, now)
		if p.evictions.Going(m, now) {
			projected -= usage // unknown usage (the pod's cgroup is gone already) counts as 0
			going++
			continue
		}
		if !qosmanager.UnderPriorityThreshold(m, s.EvictEnabledPriorityThreshold) {
			continue // on its way out it counts, whatever the threshold says now; it is never a candidate
		}
		switch {
		case !ok:
			unknown++
			if m.BestEffort {
				unknownBE++
			}
		case usage > 0: // evicting a pod that uses nothing frees nothing
			candidates = append(candidates, qosmanager.Candidate{Meta: m, Usage: usage})
		}
	}
	log = log.WithValues("goingPods", going)
	if unknown > 0 {
		log.V(2).Info("pods without a fresh memory sample are not considered", "pods", unknown)
	}
	if unknownBE > 0 {
		candidates = slices.DeleteFunc(candidates, func(c qosmanager.Candidate) bool { return c.Meta.Mid })
	}
	if projected < lower {
		log.V(4).Info("memory above the eviction threshold; the pods on their way out bring it under the lower percent", "projected", mib(projected))
		return p.pressure.publish(ctx)
	}

	p.badOrder.Prune(func(uid types.UID) bool { return p.states.GetPod(uid) != nil })
	qosmanager.SortForEviction(ctx, candidates, p.badOrder)
	// The pods this run means to evict are listed in one write before the first eviction; one the plan did not
	// reach (an earlier one was refused) is listed on its own before its eviction.
	p.pressure.evicting(plan(candidates, projected, lower)...)
	errs := []error{p.pressure.publish(ctx)} // errors.Join leaves out the nil ones
	for _, c := range candidates {
		if projected < lower {
			break
		}
		p.pressure.evicting(c.Meta.Pod.UID)
		errs = append(errs, p.pressure.publish(ctx))
		after := projected - c.Usage
		msg := fmt.Sprintf("node memory use %s is above %d%% of %s (%s); evicting best-effort pods, then mid-tier pods, until the projected use is under %d%% (%s): "+
			"projected %s, this pod uses %s, projected after it %s",
			mib(used), thresholdPct, mib(total), mib(threshold), lowerPct, mib(lower), mib(projected), mib(c.Usage), mib(after))
		res, err := p.evict(ctx, c, msg)
		if err != nil {
			errs = append(errs, fmt.Errorf("evicting pod %s for memory: %w", c.Meta.Key(), err))
			continue
		}
		if !res.Releasing() {
			// Refused by a PodDisruptionBudget, deferred by the rate limit, or already in progress: nothing
			// was sent, so the pod does not count as gone; the next one is asked instead.
			log.V(1).Info("pod not evicted now; trying the next", "pod", klog.KObj(c.Meta.Pod), "podMemory", mib(c.Usage))
			continue
		}
		p.evictions.Requested(c.Meta.Pod.UID, now)
		log.Info("evicted pod for node memory use", "pod", klog.KObj(c.Meta.Pod), "tier", qosmanager.Tier(c.Meta), "podMemory", mib(c.Usage), "projected", mib(projected), "projectedAfter", mib(after))
		projected = after
	}
	if projected >= lower {
		log.V(1).Info("memory stays above the lower percent: no pod left to evict now", "projected", mib(projected), "candidates", len(candidates),
			"bestEffortWithoutSample", unknownBE)
	}
	errs = append(errs, p.pressure.publish(ctx))
	return errors.Join(errs...)
}

// evict evicts the candidate, or kills it locally when the API server does not answer: the last resort while
// memory stays high, so that the services survive. A pod that stays (refused, deferred, a dry run, an error) is
// taken off the memory pressure's list: it still holds what it requested, and the NodeMetric must say so before the
// next pod's eviction goes out.
func (p *Plugin) evict(ctx context.Context, c qosmanager.Candidate, msg string) (evictor.Result, error) {
	res, err := p.evictor.Evict(ctx, c.Meta.Pod, Reason, msg)
	if errors.Is(err, evictor.ErrUnreachable) {
		res, err = p.evictor.KillLocally(ctx, c.Meta.Pod, p.layout.PodDir(c.Meta.Pod), Reason, msg+"; the API server cannot be reached")
	}
	if res == evictor.DryRun || err != nil || !res.Releasing() {
		p.pressure.notEvicted(c.Meta.Pod.UID)
	}
	return res, err
}

// plan is the UIDs of the candidates, in order, whose evictions bring projected under lower if each is taken.
func plan(candidates []qosmanager.Candidate, projected, lower float64) []types.UID {
	var uids []types.UID
	for _, c := range candidates {
		if projected < lower {
			break
		}
		uids = append(uids, c.Meta.Pod.UID)
		projected -= c.Usage
	}
	return uids
}

// usage is the pod's latest memory sample (bytes, without page cache) if it is fresh.
func (p *Plugin) usage(m *statesinformer.PodMeta, now time.Time) (float64, bool) {
	r, ok := p.cache.Query(metriccache.PodKey(metriccache.PodMemoryUsage, string(m.Pod.UID)), now.Add(-usageMaxAge), now)
	if !ok {
		return 0, false
	}
	return r.Value(metriccache.Last), true
}

// mib formats bytes as MiB for logs and messages.
func mib(b float64) string { return fmt.Sprintf("%.0fMi", b/(1<<20)) }

// Asks implements qosmanager.ReportingPlugin: resourceUsedThresholdWithBE is enabled.
func (p *Plugin) Asks(spec *slov1alpha1.NodeSLOSpec) bool {
	return ptr.Deref(spec.ResourceUsedThresholdWithBE.Enable, false)
}
