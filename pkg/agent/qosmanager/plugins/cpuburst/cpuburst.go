package cpuburst

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// Name is the plugin's name in --qos-plugins, logs, the executor's audit trail and metrics.
const Name = "cpuburst"

// DefaultInterval is how often the plugin runs: once a second, the collectors' pace, so that a throttled container's
// quota reaches three times its limit in about six seconds.
const DefaultInterval = time.Second

const (
	// raiseFactor is how much a throttled container's quota grows a run, up to its cap.
	raiseFactor = 1.2
	// lowerFactor is how much a raised quota shrinks a run, down to the limit.
	lowerFactor = 0.8
	// maxBurstPercent is the largest burst the kernel takes, in percent of the quota: it refuses
	// cpu.cfs_burst_us / cpu.max.burst above cpu.cfs_quota_us (EINVAL), so cpuBurstPercent above it acts as it.
	maxBurstPercent = 100
	// reasonBadAnnotation is the reason of the Warning event on a pod whose AnnotationCPUBurst is malformed.
	reasonBadAnnotation = "InvalidCPUBurstAnnotation"
)

// Plugin sets the CFS burst of service containers and raises the CFS quota of throttled ones while the node's
// share pool has room, under the NodeSLO's cpuBurstStrategy and each pod's AnnotationCPUBurst.
type Plugin struct {
	d    qosmanager.Deps
	dirs map[string]*dirState // the cgroups looked at, by directory
	gen  uint64               // the run; dirState.gen says which run last saw the cgroup
	pool pool

	noBurstFile bool                 // this kernel lacks cpu.cfs_burst_us (cpu.max.burst): the knob steps aside
	badPods     *qosmanager.Warnings // malformed annotations, said once per pod and value
	partlyPods  *qosmanager.Warnings // annotations used with fields left out, said once per pod and value
	clampSaid   map[int64]bool       // the values of cpuBurstPercent above 100 said to be clamped
	active      slov1alpha1.CPUBurstPolicy
	poolWhy     string // why the share pool's load is not known, as last logged
}

// dirState is what the plugin knows of one pod or container cgroup.
type dirState struct {
	gen uint64
	// raised is the quota above the limit that the plugin wrote and the executor holds, as the kernel read back;
	// 0 while no raise is in force: the quota is then the kubelet's, which the plugin neither writes nor holds.
	raised time.Duration
	burst  time.Duration // the burst in force as far as the plugin knows

	// The last throttling sample, for quota burst.
	stat    cgroup.CPUStat
	usage   time.Duration
	at      time.Time
	sampled bool
	since   time.Time // when the quota went above the limit; zero at the limit
	rest    time.Time // no raising before this: a burst ran out cfsQuotaBurstPeriodSeconds
}

var (
	_ qosmanager.RunPlugin        = &Plugin{}
	_ qosmanager.ValidatingPlugin = &Plugin{}
)

// New returns the plugin. It needs Deps.States, Cache, Executor, Cgroups and Clock; Events, when set, receives the
// Warning events on pods whose annotation is malformed.
func New(d qosmanager.Deps) (qosmanager.RunPlugin, error) {
	if err := d.Need(Name, "States", "Cache", "Executor", "Cgroups", "Clock"); err != nil {
		return nil, err
	}
	return &Plugin{d: d, dirs: map[string]*dirState{}, badPods: qosmanager.NewWarnings(d.Events, reasonBadAnnotation),
		partlyPods: qosmanager.NewWarnings(d.Events, qosmanager.ReasonAnnotationFieldsIgnored), clampSaid: map[int64]bool{}}, nil
}

// Name implements qosmanager.Plugin.
func (p *Plugin) Name() string { return Name }

// Validate implements qosmanager.ValidatingPlugin: policy must be one of none, cpuBurstOnly, cfsQuotaBurstOnly and
// auto; with it on, cpuBurstPercent in [0, 10000], cfsQuotaBurstPercent in [100, 10000], cfsQuotaBurstPeriodSeconds
// -1 or more and sharePoolThresholdPercent in [0, 100]. A policy of none is accepted whatever the other values:
// there is nothing to enforce.
func (p *Plugin) Validate(spec *slov1alpha1.NodeSLOSpec) error {
	s := spec.CPUBurstStrategy
	if s == nil {
		return nil
	}
	const f = "cpuBurstStrategy."
	if s.Policy == slov1alpha1.CPUBurstNone {
		return nil
	}
	msgs := checkConfig(f, &s.CPUBurstConfig, false)
	if err := qosmanager.CheckPercent(f+"sharePoolThresholdPercent", s.SharePoolThresholdPercent, 0); err != nil {
		msgs = append(msgs, err.Error())
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// Run implements qosmanager.RunPlugin. For every running container with a CPU limit of every service pod (priority
// class prod, not best-effort), and for those pods' own cgroups, it sets the burst and the quota the pod's configuration asks for;
// with the policy off, or the pod opted out, it puts back burst 0 and the kubelet's quota where the plugin (or an
// earlier agent) raised it. A quota it did not raise it never writes: that is the kubelet's, in-place resizes
// included.
func (p *Plugin) Run(ctx context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	s := spec.CPUBurstStrategy
	if s == nil {
		s = slov1alpha1.DefaultCPUBurstStrategy()
	}
	log := klog.FromContext(ctx)
	if s.Policy != p.active {
		if p.active != "" || s.Policy != slov1alpha1.CPUBurstNone {
			log.Info("CPU burst policy", "from", p.active, "to", s.Policy)
		}
		p.active = s.Policy
	}
	nodeKnobs, _ := knobsOf(s.Policy)
	pods := p.d.States.GetAllPods()
	p.gen++
	r := round{now: p.d.Clock.Now(), threshold: 100, pods: map[types.UID]bool{}}
	if s.SharePoolThresholdPercent != nil {
		r.threshold = float64(*s.SharePoolThresholdPercent)
	}
	if nodeKnobs.any() {
		p.pool.update(p, pods)
	}
	if nodeKnobs.quota {
		r.load = p.pool.load(p)
		if !r.load.ok && r.load.why != p.poolWhy {
			log.Info("quota burst raises no quota while the share pool's load is not known", "why", r.load.why)
		}
		p.poolWhy = r.load.why
	}
	var updates []executor.Update
	for _, m := range pods {
		updates = append(updates, p.pod(ctx, m, &s.CPUBurstConfig, &r)...)
	}
	for dir, ds := range p.dirs {
		if ds.gen != p.gen {
			delete(p.dirs, dir)
		}
	}
	p.badPods.Prune(r.seen)
	p.partlyPods.Prune(r.seen)
	if len(updates) == 0 {
		return nil
	}
	err := p.d.Executor.Apply(ctx, Name, updates...)
	p.settle(r.wrote)
	return err
}

// round is one run's shared inputs.
type round struct {
	now       time.Time
	load      load
	threshold float64
	pods      map[types.UID]bool
	wrote     []quotaWrite // the quotas asked for this run, read back once written
}

// quotaWrite is a quota the plugin asked for: a raise, or the limit that gives one back.
type quotaWrite struct {
	ds   *dirState
	dir  string
	base cgroup.CPUQuota
}

func (r *round) seen(uid types.UID) bool { return r.pods[uid] }

// pod returns the updates of one pod's cgroups: the pod's quota and burst first, then its containers', so that the
// executor (which orders quota changes by the hierarchy) writes each cgroup's quota before its burst.
func (p *Plugin) pod(ctx context.Context, m *statesinformer.PodMeta, node *slov1alpha1.CPUBurstConfig, r *round) []executor.Update {
	r.pods[m.Pod.UID] = true
	cfg, k := node, knobs{}
	// Only services: batch, free and mid pods run on reclaimed CPU, and their quotas are the runtime hook's.
	other := m.Priority != slov1alpha1.PriorityProd || m.BestEffort
	if !other {
		var partly string
		var err error
		cfg, k, partly, err = podConfig(m.Pod, node)
		_, raw, _ := annotation(m.Pod)
		if err != nil {
			p.badPods.Warn(ctx, m.Pod, raw, err, "the node's CPU burst strategy applies")
		} else {
			p.badPods.Fine(m.Pod)
		}
		p.partlyPods.Partly(ctx, m.Pod, raw, partly)
	}
	if k.burst {
		p.sayClamp(ctx, *cfg.CPUBurstPercent)
	}
	podDir := p.d.Layout.PodDirOf(m.KubeQoS, cgroup.PodUID(m.Pod))
	var quotas, bursts []executor.Update
	var raised time.Duration // how far the containers' quotas are above their limits, summed
	limited, pinned := 0, 0
	ap := applied(m.Pod)
	qosmanager.ForRunningContainerSpecs(ap, func(c *corev1.Container, st *corev1.ContainerStatus) {
		base := cgroup.ContainerResources(ap, c).CPUQuota
		if base.Unlimited() {
			return
		}
		spec := base
		if sc := qosmanager.ContainerSpec(m.Pod, c.Name); sc != nil {
			spec = cgroup.ContainerResources(m.Pod, sc).CPUQuota
		}
		dir, err := p.d.Layout.ContainerDir(podDir, st.ContainerID)
		if err != nil {
			return
		}
		kc := k
		limited++
		if p.pool.pinned(dir) {
			kc = knobs{} // a pinned container cannot run beyond its CPUs: a burst gives it nothing
			pinned++
		}
		ds, cur := p.state(ctx, dir, base, spec, other)
		if ds == nil {
			return
		}
		quota, why := base.Quota, "back to the quota of the CPU limit"
		if kc.quota && (ds.raised > 0 || cur == base) {
			quota, why = p.nextQuota(ds, dir, base, cfg, r)
		} else {
			ds.since, ds.rest, ds.sampled = time.Time{}, time.Time{}, false
		}
		raised += quota - base.Quota
		q, b := p.want(ds, dir, base, quota, burstOf(bound(base, spec, cur), cfg, kc), why, m, r)
		quotas, bursts = append(quotas, q...), append(bursts, b...)
	})
	if limited > 0 && pinned == limited {
		k = knobs{} // nor its pod
	}
	if base := cgroup.PodResources(ap).CPUQuota; !base.Unlimited() {
		spec := cgroup.PodResources(m.Pod).CPUQuota
		if ds, cur := p.state(ctx, podDir, base, spec, other); ds != nil {
			quota, why := base.Quota, "back to the quota of the pod's CPU limit"
			if raised > 0 && (ds.raised > 0 || cur == base) {
				quota = base.Quota + raised
				why = fmt.Sprintf("the pod's limit raised by its containers' quota burst, %.3f cores", cgroup.CPUQuota{Quota: raised, Period: base.Period}.Cores())
			}
			q, b := p.want(ds, podDir, base, quota, burstOf(bound(base, spec, cur), cfg, k), why, m, r)
			quotas, bursts = append(q, quotas...), append(b, bursts...)
		}
	}
	return append(quotas, bursts...)
}

// applied is pod with the CPU limits the kubelet applied to its cgroups: those status.containerStatuses[].resources
// (status.resources for pod-level resources) report, where they do, over the spec's. During an in-place resize the
// spec says what is asked, which the kubelet may defer or find infeasible; the status says what the cgroups hold.
// A kubelet that reports no resources (before Kubernetes 1.33, or InPlacePodVerticalScaling off) cannot resize, so
// its spec is what it applied.
func applied(pod *corev1.Pod) *corev1.Pod {
	out := *pod
	out.Spec.InitContainers = appliedContainers(pod.Spec.InitContainers, pod.Status.InitContainerStatuses)
	out.Spec.Containers = appliedContainers(pod.Spec.Containers, pod.Status.ContainerStatuses)
	if pod.Spec.Resources != nil && pod.Status.Resources != nil {
		r := *pod.Spec.Resources
		r.Limits = withCPULimit(r.Limits, pod.Status.Resources.Limits)
		out.Spec.Resources = &r
	}
	return &out
}

func appliedContainers(cs []corev1.Container, sts []corev1.ContainerStatus) []corev1.Container {
	out := slices.Clone(cs)
	for i := range out {
		j := slices.IndexFunc(sts, func(st corev1.ContainerStatus) bool { return st.Name == out[i].Name })
		if j >= 0 && sts[j].Resources != nil {
			out[i].Resources.Limits = withCPULimit(out[i].Resources.Limits, sts[j].Resources.Limits)
		}
	}
	return out
}

// withCPULimit is spec with the CPU limit of status, where status has one.
func withCPULimit(spec, status corev1.ResourceList) corev1.ResourceList {
	q, ok := status[corev1.ResourceCPU]
	if !ok {
		return spec
	}
	out := maps.Clone(spec)
	if out == nil {
		out = corev1.ResourceList{}
	}
	out[corev1.ResourceCPU] = q
	return out
}

// bound is the quota a burst is a percentage of: the smallest of the limit applied (base), the spec's (which the
// kubelet is about to write when a resize is asked) and the quota in the cgroup (cur), so that the kernel's rule,
// burst at most the quota, holds for the quota in force and for the kubelet's next write. A resize down is then not
// refused for the burst, except when the kubelet writes before the plugin's next run lowers it.
func bound(base, spec, cur cgroup.CPUQuota) cgroup.CPUQuota {
	b := base
	for _, q := range []cgroup.CPUQuota{spec, cur} {
		if !q.Unlimited() && q.Quota < b.Quota {
			b.Quota = q.Quota
		}
	}
	return b
}

// state is the plugin's record of dir, with the quota in the cgroup now (cur). It is created on first sight from the
// kernel's values: a quota above both the applied limit (base) and the spec's, or a burst, left by an earlier agent
// is then taken as the plugin's own and put back. A raise whose quota someone else has changed since (the kubelet
// applying an in-place resize) has ended: the plugin releases it without writing. It is nil while dir cannot be read
// (not created yet, gone), and for a cgroup of a pod that is not a service the plugin never changed (their quotas
// are the runtime hook's).
func (p *Plugin) state(ctx context.Context, dir string, base, spec cgroup.CPUQuota, other bool) (*dirState, cgroup.CPUQuota) {
	ds := p.dirs[dir]
	if ds == nil && other {
		return nil, cgroup.CPUQuota{}
	}
	cur, err := p.d.Cgroups.CPUQuota(dir)
	if err != nil {
		return nil, cgroup.CPUQuota{}
	}
	if ds != nil && ds.raised > 0 && cur != (cgroup.CPUQuota{Quota: ds.raised, Period: base.Period}) {
		klog.FromContext(ctx).Info("quota burst: another writer changed a raised quota (the kubelet resizing the pod?); the raise ends there",
			"cgroup", dir, "raised", ds.raised, "now", cur.Quota, "period", cur.Period)
		p.release(dir)
		ds.raised, ds.since = 0, time.Time{}
	}
	if ds == nil {
		ds = &dirState{}
		if cur.Period == base.Period && !cur.Unlimited() && cur.Quota > max(base.Quota, spec.Quota) {
			ds.raised = cur.Quota // raised by an earlier agent: want() lowers it
		}
		switch b, err := p.d.Cgroups.CPUBurst(dir); {
		case errors.Is(err, system.ErrUnsupported):
			if !p.noBurstFile {
				klog.FromContext(ctx).Info("this kernel lacks the CFS burst file (cpu.cfs_burst_us, cpu.max.burst, Linux 5.14+); "+
					"CPU burst steps aside, quota burst goes on", "cgroup", dir)
			}
			p.noBurstFile = true
		case err != nil:
			return nil, cgroup.CPUQuota{}
		default:
			ds.burst = b
		}
		p.dirs[dir] = ds
	}
	ds.gen = p.gen
	return ds, cur
}

// want returns the quota and burst updates that make dir hold quota and burst. The plugin writes a quota only to
// raise it above the limit applied (base), or to give a raise back (base again; settle then releases it): a quota
// it did not raise is the kubelet's, which it leaves alone, so that an in-place resize is the kubelet's to apply.
func (p *Plugin) want(ds *dirState, dir string, base cgroup.CPUQuota, quota, burst time.Duration, why string, m *statesinformer.PodMeta, r *round) (quotas, bursts []executor.Update) {
	pod := m.Key()
	if quota != max(ds.raised, base.Quota) {
		quotas = append(quotas, executor.Update{Dir: dir, Value: executor.CPUQuota{Quota: quota, Period: base.Period},
			Reason: fmt.Sprintf("pod %s: %.3f cores, %s (limit %.3f)", pod, cgroup.CPUQuota{Quota: quota, Period: base.Period}.Cores(), why, base.Cores())})
		r.wrote = append(r.wrote, quotaWrite{ds: ds, dir: dir, base: base})
	}
	if burst != ds.burst && !p.noBurstFile {
		bursts = append(bursts, executor.Update{Dir: dir, Value: executor.CPUBurst(burst),
			Reason: fmt.Sprintf("pod %s: burst %s on a quota of %s", pod, burst, quota)})
		ds.burst = burst
	}
	return quotas, bursts
}

// settle reads back the quotas written this run: a quota above the limit is the raise in force; the limit (a raise
// given back), or anything else (a write refused, another writer), is no raise: the executor stops holding it, so
// that it does not assert the value against the kubelet. A refused raise or give-back is tried again next run.
func (p *Plugin) settle(wrote []quotaWrite) {
	for _, w := range wrote {
		cur, err := p.d.Cgroups.CPUQuota(w.dir)
		if err == nil && cur.Period == w.base.Period && !cur.Unlimited() && cur.Quota > w.base.Quota {
			w.ds.raised = cur.Quota
			continue
		}
		w.ds.raised = 0
		p.release(w.dir)
	}
}

// release stops the executor holding the plugin's quota of dir.
func (p *Plugin) release(dir string) {
	p.d.Executor.Release(Name, executor.ResourceCPUQuota, func(d string) bool { return d == dir })
}

// burstOf is the burst for a cgroup whose quota is q: cpuBurstPercent of it, at most the quota itself.
func burstOf(q cgroup.CPUQuota, cfg *slov1alpha1.CPUBurstConfig, k knobs) time.Duration {
	if !k.burst || cfg.CPUBurstPercent == nil {
		return 0
	}
	return percentOf(q.Quota, min(*cfg.CPUBurstPercent, maxBurstPercent))
}

// percentOf is pct percent of d, rounded down to the microsecond the kernel's files hold.
func percentOf(d time.Duration, pct int64) time.Duration {
	return time.Duration(d.Microseconds()*pct/100) * time.Microsecond
}

// nextQuota is the quota of a container whose limit is base, from its throttling since the last run:
//   - a burst that lasted cfsQuotaBurstPeriodSeconds ends: back to the limit, and no raising for as long again;
//   - the share pool above sharePoolThresholdPercent: lowered by lowerFactor, not below the limit;
//   - throttled, with the share pool's load known and under the threshold: raised by raiseFactor, up to
//     cfsQuotaBurstPercent of the limit;
//   - not throttled and using less than its limit: lowered by lowerFactor, not below the limit;
//   - otherwise kept.
func (p *Plugin) nextQuota(ds *dirState, dir string, base cgroup.CPUQuota, cfg *slov1alpha1.CPUBurstConfig, r *round) (time.Duration, string) {
	ceiling := percentOf(base.Quota, *cfg.CFSQuotaBurstPercent)
	cur := min(max(ds.raised, base.Quota), ceiling)
	stat, err1 := p.d.Cgroups.CPUStat(dir)
	usage, err2 := p.d.Cgroups.CPUUsage(dir)
	prev := *ds
	if err1 != nil || err2 != nil {
		ds.sampled = false
		return cur, "kept: its CPU statistics cannot be read"
	}
	ds.stat, ds.usage, ds.at, ds.sampled = stat, usage, r.now, true
	elapsed := r.now.Sub(prev.at)
	if !prev.sampled || elapsed <= 0 || stat.Periods < prev.stat.Periods {
		return cur, "kept: the first sample of its throttling"
	}
	periods, throttled := stat.Periods-prev.stat.Periods, stat.ThrottledPeriods-prev.stat.ThrottledPeriods
	used := float64(usage-prev.usage) / float64(elapsed)
	lower := func() time.Duration {
		next := time.Duration(float64(cur) * lowerFactor).Truncate(time.Microsecond)
		if next-base.Quota < cgroup.MinCFSQuota {
			return base.Quota
		}
		return next
	}
	next, why := cur, ""
	limit := *cfg.CFSQuotaBurstPeriodSeconds
	switch {
	case limit >= 0 && cur > base.Quota && r.now.Sub(ds.since) >= time.Duration(limit)*time.Second:
		next, ds.rest = base.Quota, r.now.Add(time.Duration(limit)*time.Second)
		why = fmt.Sprintf("its burst lasted %s, cfsQuotaBurstPeriodSeconds %d: back to the limit for as long", r.now.Sub(ds.since).Round(time.Second), limit)
	case r.load.ok && r.load.percent > r.threshold:
		next = lower()
		why = fmt.Sprintf("the share pool is %.0f%% busy, above sharePoolThresholdPercent %.0f", r.load.percent, r.threshold)
	case throttled > 0 && r.load.ok && !r.now.Before(ds.rest):
		next = min(ceiling, time.Duration(math.Ceil(float64(cur)*raiseFactor/float64(time.Microsecond)))*time.Microsecond)
		why = fmt.Sprintf("throttled in %d of %d periods, share pool %.0f%% busy (threshold %.0f), cap %d%% of the limit", throttled, periods, r.load.percent, r.threshold, *cfg.CFSQuotaBurstPercent)
	case throttled == 0 && used < base.Cores():
		next = lower()
		why = fmt.Sprintf("not throttled, using %.3f cores, under its limit", used)
	default:
		why = fmt.Sprintf("kept: %d of %d periods throttled, using %.3f cores", throttled, periods, used)
	}
	switch {
	case next <= base.Quota:
		ds.since = time.Time{}
	case ds.since.IsZero():
		ds.since = r.now
	}
	return next, why
}

// sayClamp says once per value that a cpuBurstPercent above maxBurstPercent acts as maxBurstPercent.
func (p *Plugin) sayClamp(ctx context.Context, pct int64) {
	if pct <= maxBurstPercent || p.clampSaid[pct] {
		return
	}
	p.clampSaid[pct] = true
	klog.FromContext(ctx).Info("cpuBurstPercent above 100 acts as 100: the kernel refuses a CFS burst larger than the quota", "cpuBurstPercent", pct)
}

// Asks implements qosmanager.ReportingPlugin: cpuBurstStrategy's policy is not none.
func (p *Plugin) Asks(spec *slov1alpha1.NodeSLOSpec) bool {
	s := spec.CPUBurstStrategy
	if s == nil {
		s = slov1alpha1.DefaultCPUBurstStrategy()
	}
	return s.Policy != slov1alpha1.CPUBurstNone
}
