package cpusuppress

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/proc"
)

// Name is the plugin's name in --qos-plugins, logs, the executor's audit trail and metrics.
const Name = "cpusuppress"

// DefaultInterval is how often the plugin runs: five times a second, so that a service's spike tightens the
// best-effort limit within about half a second (two samples) instead of waiting for the once-a-second collectors.
const DefaultInterval = 200 * time.Millisecond

const (
	// loosenPerSecond is how fast the limit may grow, as a share of the node's capacity per second of window: 10 %
	// a second, 2 % per run at the default interval. A limit never shrinks in steps: it drops at once.
	loosenPerSecond = 0.10
	// skipBelow is the smallest change made, as a share of the node's capacity; never less than skipTicks of
	// /proc/stat's resolution over the window (see minChange).
	skipBelow = 0.01
	// skipTicks is how many of /proc/stat's 10 ms ticks a change must exceed: a window's busy time is off by up to
	// a tick at each end, so on a small node a change within two ticks is noise (0.1 cores over 200 ms), and
	// following it would rewrite the limit every run.
	skipTicks = 2
	// minCPUSetCPUs is the fewest CPUs the cpuset policy leaves best-effort pods; a smaller share is held with the
	// besteffort cgroup's quota besides (applyFloorQuota).
	minCPUSetCPUs = 2
	// minWindow is the shortest window a decision is based on: runs closer together (RunOnce in tests, a late
	// tick followed by an on-time one) keep measuring from the older sample.
	minWindow = 50 * time.Millisecond
	// cacheWindow is how old the collectors' system and host application usage may be.
	cacheWindow = 5 * time.Second
)

// Plugin suppresses the CPU of best-effort pods so that the node's services keep the CPU they use, with the
// NodeSLO's cpuSuppressPolicy: a CFS quota on the besteffort QoS cgroup, or a set of whole CPUs for best-effort
// pods. It is a prometheus.Collector of its one gauge.
type Plugin struct {
	d       qosmanager.Deps
	buf     []byte // for proc.FS.StatTotal
	v1      bool   // each cpuset cgroup holds its own cpuset.cpus, which must be within its parent's
	qosDir  string
	qosDirs []string // qosDir alone: what the cfsQuota policy confines
	minCPUs int      // minCPUSetCPUs; tests on a two-CPU machine lower it
	limit   prometheus.Gauge

	// prev is the last sample, the next one is measured against; spare is a buffer for the next one's usages.
	prev  sample
	spare []time.Duration

	active  slov1alpha1.CPUSuppressPolicy // the knob in force; "" while suppression is off
	share   float64                       // the limit in force, cores; < 0 until read from the kernel
	pending bool                          // the limit in force has not reached the executor yet (or failed)
	cpus    cpuset.CPUSet                 // the cpuset in force
	dirsKey qosmanager.Fingerprint        // the best-effort pods the cpuset was written to
	// floorQuota is the quota, cores, that the cpuset policy holds below its floor of minCPUs CPUs (applyFloorQuota);
	// 0 while it holds none. floorPending: it has not reached the executor yet (or failed).
	floorQuota   float64
	floorPending bool

	// restored says the knob is back at its unlimited value and needs nothing more; set says this process has
	// handed the executor a limit of the knob (which the executor keeps in force until it is replaced).
	quotaRestored, cpusetRestored bool
	quotaSet, cpusetSet           bool

	be  beView
	set cpuView
}

var (
	_ qosmanager.RunPlugin        = &Plugin{}
	_ qosmanager.ValidatingPlugin = &Plugin{}
	_ prometheus.Collector        = &Plugin{}
)

// New returns the plugin. It needs Deps.States, Cache, Executor, Cgroups, Proc and Clock.
func New(d qosmanager.Deps) (qosmanager.RunPlugin, error) {
	if err := d.Need(Name, "States", "Cache", "Executor", "Cgroups", "Proc", "Clock"); err != nil {
		return nil, err
	}
	p := &Plugin{
		d:       d,
		buf:     make([]byte, proc.StatTotalBufSize),
		v1:      true,
		qosDir:  d.Layout.QoSDir(corev1.PodQOSBestEffort),
		qosDirs: []string{d.Layout.QoSDir(corev1.PodQOSBestEffort)},
		minCPUs: minCPUSetCPUs,
		share:   -1,
		limit: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gleaner_agent_cpusuppress_be_cpu_limit_cores",
			Help: "CPU that CPU suppression leaves best-effort pods, cores: the besteffort cgroup's CFS quota (cfsQuota policy) or the number of CPUs of their cpuset (cpuset policy; the quota where the share is below the policy's floor of 2 CPUs); -1 while suppression is off.",
		}),
	}
	p.v1 = d.CgroupVersion() == cgroup.V1
	p.limit.Set(-1)
	return p, nil
}

// Name implements qosmanager.Plugin.
func (p *Plugin) Name() string { return Name }

// Describe implements prometheus.Collector.
func (p *Plugin) Describe(ch chan<- *prometheus.Desc) { p.limit.Describe(ch) }

// Collect implements prometheus.Collector.
func (p *Plugin) Collect(ch chan<- prometheus.Metric) { p.limit.Collect(ch) }

// Validate implements qosmanager.ValidatingPlugin: with the strategy on, cpuSuppressThresholdPercent must be in
// [1, 100], cpuSuppressMinPercent in [0, 100] and not above it, and cpuSuppressPolicy cfsQuota or cpuset. A
// strategy that is off is accepted whatever its values: there is nothing to enforce.
func (p *Plugin) Validate(spec *slov1alpha1.NodeSLOSpec) error {
	s := spec.ResourceUsedThresholdWithBE
	if !enabled(s) {
		return nil
	}
	const f = "resourceUsedThresholdWithBE."
	errs := []error{
		qosmanager.CheckPercent(f+"cpuSuppressThresholdPercent", s.CPUSuppressThresholdPercent, 1),
		qosmanager.CheckPercent(f+"cpuSuppressMinPercent", s.CPUSuppressMinPercent, 0),
		qosmanager.CheckOrder(f+"cpuSuppressMinPercent", s.CPUSuppressMinPercent, f+"cpuSuppressThresholdPercent", s.CPUSuppressThresholdPercent),
	}
	if pol := s.CPUSuppressPolicy; pol != slov1alpha1.CPUSuppressCFSQuota && pol != slov1alpha1.CPUSuppressCPUSet {
		errs = append(errs, fmt.Errorf("%scpuSuppressPolicy is %q, want %q or %q", f, pol, slov1alpha1.CPUSuppressCFSQuota, slov1alpha1.CPUSuppressCPUSet))
	}
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

func enabled(s *slov1alpha1.ResourceThresholdStrategy) bool {
	return s != nil && s.Enable != nil && *s.Enable
}

// Run implements qosmanager.RunPlugin. With the strategy off it gives best-effort pods all CPU back, once. With
// it on, it measures the node's and the best-effort cgroups' CPU since the last run and sets the limit of the
// policy's knob, after giving the other knob back once.
func (p *Plugin) Run(ctx context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	s := spec.ResourceUsedThresholdWithBE
	log := klog.FromContext(ctx)
	if !enabled(s) {
		if p.active != "" {
			log.Info("CPU suppression is off; giving best-effort pods their CPU back", "policy", p.active)
		}
		p.active, p.prev, p.floorQuota = "", sample{}, 0
		p.limit.Set(-1)
		return errors.Join(p.restoreQuota(ctx, "CPU suppression is off"), p.restoreCPUSet(ctx, "CPU suppression is off"))
	}
	var errs []error
	if s.CPUSuppressPolicy != p.active {
		if p.active != "" {
			log.Info("CPU suppression policy changed", "from", p.active, "to", s.CPUSuppressPolicy)
		}
		reason := fmt.Sprintf("CPU suppression policy is %s", s.CPUSuppressPolicy)
		switch s.CPUSuppressPolicy {
		case slov1alpha1.CPUSuppressCFSQuota:
			errs = append(errs, p.restoreCPUSet(ctx, reason))
			p.quotaRestored = false
		case slov1alpha1.CPUSuppressCPUSet:
			errs = append(errs, p.restoreQuota(ctx, reason))
			p.cpusetRestored = false
		}
		p.active, p.share, p.pending, p.cpus, p.dirsKey = s.CPUSuppressPolicy, -1, true, cpuset.CPUSet{}, 0
		p.floorQuota = 0
	}
	errs = append(errs, p.enforce(ctx, spec))
	return errors.Join(errs...)
}

// enforce measures and sets the active knob's limit.
func (p *Plugin) enforce(ctx context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	now := p.d.Clock.Now()
	pinning := p.active == slov1alpha1.CPUSuppressCPUSet
	var pods []*statesinformer.PodMeta
	confined := p.qosDirs
	if pinning {
		pods = p.d.States.GetAllPods()
		p.be.update(p, pods)
		confined = p.be.confined
	}
	in, ok, err := p.measure(now, confined, spec)
	if err != nil || !ok {
		return err
	}
	if p.share < 0 {
		if p.share, err = p.current(in.capacity); err != nil {
			return err
		}
	}
	s := spec.ResourceUsedThresholdWithBE
	d := decision{in: in, threshold: *s.CPUSuppressThresholdPercent, min: *s.CPUSuppressMinPercent}
	d.target, d.floor = in.share(d.threshold, d.min)
	next, changed := step(p.share, d.target, minChange(in.capacity, in.window), loosenPerSecond*in.capacity*in.window.Seconds())
	log := klog.FromContext(ctx)
	if pinning {
		return errors.Join(p.applyCPUSet(ctx, log, pods, next, changed, &d), p.applyFloorQuota(ctx, log, next, &d))
	}
	return p.applyQuota(ctx, log, next, changed, &d)
}

// decision is one run's numbers, formatted only for a log line or a write.
type decision struct {
	in             inputs
	threshold, min int64
	target, floor  float64
}

func (d *decision) String() string {
	in := d.in
	return fmt.Sprintf("over %s: node %.3f - best-effort %.3f - best-effort host applications %.3f = non-best-effort %.3f cores; "+
		"share = capacity %.3f x %d%% - %.3f - max(0, reserved %.3f - system %.3f) = %.3f cores (floor %.3f at %d%%)",
		in.window.Round(time.Millisecond), in.node, in.be, in.beHostApps, in.nonBE(), in.capacity, d.threshold,
		in.nonBE(), in.reserved, in.system, d.target, d.floor, d.min)
}

// applyQuota hands the besteffort cgroup's quota for share cores to the executor when it changed.
func (p *Plugin) applyQuota(ctx context.Context, log klog.Logger, share float64, changed bool, d *decision) error {
	q := quotaOf(share)
	limit := cgroup.CPUQuota(q).Cores()
	if !changed && !p.pending {
		if v := log.V(5); v.Enabled() {
			v.Info("best-effort CPU quota unchanged", "cores", limit, "numbers", d.String())
		}
		return nil
	}
	explain := d.String()
	log.V(2).Info("best-effort CPU quota", "from", p.share, "cores", limit, "numbers", explain)
	p.share, p.quotaSet = share, true
	p.limit.Set(limit)
	reason := fmt.Sprintf("limit %.3f cores %s", limit, explain)
	updates := append([]executor.Update{{Dir: p.qosDir, Value: q, Reason: reason}}, p.clampBelow(q, reason)...)
	err := p.d.Executor.Apply(ctx, Name, updates...)
	p.pending = err != nil
	return err
}

// clampBelow, on cgroup v1, lowers to q every quota below the besteffort cgroup that the kernel would refuse under
// it (cgroup.CPUQuota.Exceeds): the kernel refuses a parent's quota below a child's there, and the runtime hook
// gives batch pods and their containers quotas of their own (from kubernetes.io/batch-cpu). The executor writes
// them before the besteffort cgroup's (children first when tightening); the runtime hook's reconciler raises them
// again, up to the besteffort quota, when suppression loosens. It walks the cgroups themselves, two levels down
// (pods, then containers), not the pods' statuses: a container whose cgroup runc has just created, and whose quota
// the runtime hook has just written, is there a second or more before the kubelet reports it running, and missing
// it would make the kernel refuse the whole tightening. On v2 the kernel takes the smaller of the two itself.
func (p *Plugin) clampBelow(q executor.CPUQuota, reason string) []executor.Update {
	if !p.v1 {
		return nil
	}
	limit := cgroup.CPUQuota(q)
	var updates []executor.Update
	clamp := func(dir string) {
		cur, err := p.d.Cgroups.CPUQuota(dir)
		if err != nil || cur.Unlimited() || !cur.Exceeds(limit) {
			return
		}
		updates = append(updates, executor.Update{Dir: dir, Value: q, Reason: "within the besteffort cgroup's " + reason})
	}
	pods, _ := p.d.Cgroups.Children(p.qosDir) // unreadable: nothing to clamp that the write would not report
	for _, pod := range pods {
		podDir := p.qosDir + "/" + pod
		clamp(podDir)
		containers, _ := p.d.Cgroups.Children(podDir)
		for _, c := range containers {
			clamp(podDir + "/" + c)
		}
	}
	return updates
}

// quotaOf is the CFS quota of cores over the kubelet's 100 ms period, at least the kernel's 1 ms.
func quotaOf(cores float64) executor.CPUQuota {
	us := time.Duration(math.Round(cores*float64(cgroup.CFSPeriod.Microseconds()))) * time.Microsecond
	return executor.CPUQuota{Quota: max(us, cgroup.MinCFSQuota), Period: cgroup.CFSPeriod}
}

// applyCPUSet gives best-effort pods the CPUs for share cores: whole CPUs, at least minCPUs, chosen by
// chooseCPUs, written to the besteffort cgroup and (see beView) its pods and containers. A share below minCPUs is
// held by applyFloorQuota besides.
func (p *Plugin) applyCPUSet(ctx context.Context, log klog.Logger, pods []*statesinformer.PodMeta, share float64, changed bool, d *decision) error {
	if err := p.set.update(p, pods); err != nil {
		return err
	}
	n := max(p.minCPUs, int(math.Ceil(share-1e-9)))
	cpus := p.set.choose(p, n)
	if !p.pending && cpus.Equals(p.cpus) && p.dirsKey == p.be.key {
		if changed {
			p.share = share // the same CPUs still fit the new share
		}
		if v := log.V(5); v.Enabled() {
			v.Info("best-effort cpuset unchanged", "cpus", cpus.String(), "share", share, "numbers", d.String())
		}
		return nil
	}
	explain := d.String()
	if !cpus.Equals(p.cpus) {
		log.V(2).Info("best-effort cpuset", "from", p.cpus.String(), "cpus", cpus.String(), "share", share, "exclusive", p.set.Exclusive.String(), "numbers", explain)
	}
	p.share, p.cpus, p.dirsKey, p.cpusetSet = share, cpus, p.be.key, true
	p.limit.Set(float64(cpus.Size()))
	reason := fmt.Sprintf("%d CPUs for a share of %.3f cores (at least %d, away from exclusive CPUs %s) %s", cpus.Size(), share, p.minCPUs, p.set.Exclusive, explain)
	updates := make([]executor.Update, 0, len(p.be.dirs))
	for _, dir := range p.be.dirs {
		updates = append(updates, executor.Update{Dir: dir, Value: executor.NewCPUSet(cpus), Reason: reason})
	}
	err := p.d.Executor.Apply(ctx, Name, updates...)
	p.pending = err != nil
	return err
}

// applyFloorQuota holds best-effort pods to a share below the cpuset policy's floor of minCPUs CPUs, which no set
// of CPUs it may give can express (on a node of minCPUs CPUs the floor is the whole node), with the besteffort
// cgroup's CFS quota, written as the cfsQuota policy writes it; once the share is back at the floor the quota is
// lifted. Without it the policy would leave a small node's best-effort pods every CPU however busy its services,
// and say nothing. The gauge shows the quota while it holds.
func (p *Plugin) applyFloorQuota(ctx context.Context, log klog.Logger, share float64, d *decision) error {
	if share >= float64(p.minCPUs)-1e-9 {
		if p.floorQuota > 0 {
			log.V(2).Info("best-effort CPU quota lifted: the share is back at the cpuset policy's floor", "share", share, "floor", p.minCPUs)
			p.floorQuota = 0
			p.limit.Set(float64(p.cpus.Size()))
		}
		return p.restoreQuota(ctx, fmt.Sprintf("the best-effort share %.3f cores is at the cpuset policy's floor of %d CPUs or above", share, p.minCPUs))
	}
	q := quotaOf(share)
	limit := cgroup.CPUQuota(q).Cores()
	p.limit.Set(limit)
	if limit == p.floorQuota && !p.floorPending {
		return nil
	}
	explain := d.String()
	log.V(2).Info("best-effort CPU quota below the cpuset policy's floor", "from", p.floorQuota, "cores", limit, "floor", p.minCPUs, "numbers", explain)
	p.floorQuota, p.quotaSet, p.quotaRestored = limit, true, false
	reason := fmt.Sprintf("limit %.3f cores, below the cpuset policy's floor of %d CPUs, %s", limit, p.minCPUs, explain)
	updates := append([]executor.Update{{Dir: p.qosDir, Value: q, Reason: reason}}, p.clampBelow(q, reason)...)
	err := p.d.Executor.Apply(ctx, Name, updates...)
	p.floorPending = err != nil
	return err
}

// restoreQuota lifts the besteffort cgroup's quota, once.
func (p *Plugin) restoreQuota(ctx context.Context, reason string) error {
	if p.quotaRestored {
		return nil
	}
	if !p.quotaSet {
		// Nothing of this process to replace in the executor: write only when the kernel holds a limit (left by an
		// earlier agent), so that a node that never suppresses gets no value held and re-asserted for ever.
		if q, err := p.d.Cgroups.CPUQuota(p.qosDir); err == nil && q.Unlimited() {
			p.quotaRestored = true
			return nil
		}
	}
	err := p.d.Executor.Apply(ctx, Name, executor.Update{Dir: p.qosDir, Value: executor.CPUQuota{Quota: -1, Period: cgroup.CFSPeriod}, Reason: reason})
	p.quotaRestored = err == nil
	return err
}

// restoreCPUSet gives the besteffort cgroup, and on cgroup v1 its pods and containers, every CPU of the kubepods
// cgroup, once; containers get those not held exclusively, as the kubelet's CPU manager would.
func (p *Plugin) restoreCPUSet(ctx context.Context, reason string) error {
	if p.cpusetRestored {
		return nil
	}
	pods := p.d.States.GetAllPods()
	if err := p.set.refresh(p, pods); err != nil {
		return err
	}
	if !p.cpusetSet {
		// As for the quota: only a cpuset left by an earlier agent needs writing.
		if cpus, err := p.d.Cgroups.CPUSet(p.qosDir); err == nil && cpus.Equals(p.set.Universe) {
			p.cpusetRestored = true
			return nil
		}
	}
	p.be.update(p, pods)
	all, shared := executor.NewCPUSet(p.set.Universe), executor.NewCPUSet(p.set.Universe.Difference(p.set.Exclusive))
	updates := make([]executor.Update, 0, len(p.be.dirs))
	for i, dir := range p.be.dirs {
		v := all
		if p.be.container[i] {
			v = shared
		}
		updates = append(updates, executor.Update{Dir: dir, Value: v, Reason: reason})
	}
	err := p.d.Executor.Apply(ctx, Name, updates...)
	p.cpusetRestored = err == nil
	return err
}

// current is the limit the active knob holds in the kernel, cores (capacity when unlimited): where a decision
// starts from after the agent (re)started or the policy changed.
func (p *Plugin) current(capacity float64) (float64, error) {
	if p.active == slov1alpha1.CPUSuppressCPUSet {
		cpus, err := p.d.Cgroups.CPUSet(p.qosDir)
		if err != nil {
			return 0, fmt.Errorf("reading the best-effort cpuset: %w", err)
		}
		p.cpus = cpus
		share := min(float64(cpus.Size()), capacity)
		// A quota below the policy's floor (applyFloorQuota) is part of the limit in force.
		if q, err := p.d.Cgroups.CPUQuota(p.qosDir); err == nil && !q.Unlimited() {
			share = min(share, q.Cores())
		}
		return share, nil
	}
	q, err := p.d.Cgroups.CPUQuota(p.qosDir)
	if err != nil {
		return 0, fmt.Errorf("reading the best-effort CPU quota: %w", err)
	}
	if q.Unlimited() {
		return capacity, nil
	}
	return min(q.Cores(), capacity), nil
}

// minChange is the smallest change of the limit made, in cores: skipBelow of capacity, and at least skipTicks of
// /proc/stat's resolution over a window of w.
func minChange(capacity float64, w time.Duration) float64 {
	resolution := 0.0
	if w > 0 {
		resolution = skipTicks * float64(time.Second/proc.UserHZ) / float64(w)
	}
	return max(skipBelow*capacity, resolution)
}

// step moves the limit from cur toward target: at once when target is lower, by at most maxUp when it is higher;
// a change under minChange cores is not made. changed says whether next differs from cur.
func step(cur, target, minChange, maxUp float64) (next float64, changed bool) {
	d := target - cur
	switch {
	case math.Abs(d) < minChange-1e-9: // exactly the minimum is made, whatever the float rounding
		return cur, false
	case d < 0:
		return target, true
	}
	return min(target, cur+maxUp), true
}

// Asks implements qosmanager.ReportingPlugin: resourceUsedThresholdWithBE is enabled.
func (p *Plugin) Asks(spec *slov1alpha1.NodeSLOSpec) bool {
	return enabled(spec.ResourceUsedThresholdWithBE)
}
