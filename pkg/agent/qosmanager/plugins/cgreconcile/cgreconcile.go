package cgreconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
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
const Name = "cgreconcile"

// DefaultInterval is how often the plugin runs: a new pod is protected within a second of its first container
// starting.
const DefaultInterval = time.Second

// Plugin writes memory protection and throttling for the classes whose memoryQOS is on.
type Plugin struct {
	d       qosmanager.Deps
	v1      bool
	parents []parent
	hold    *qosmanager.Holder
	bad     *qosmanager.Warnings // pods' memory QoS annotations that cannot be used
	partly  *qosmanager.Warnings // pods' memory QoS annotations used with parts left out

	probed      bool // memory.min was found in the kubepods cgroup (or found missing)
	unsupported bool // no memory.min here: the plugin steps aside
	saidAnolis  bool
	// saved is what the state file holds once read (and the held values adopted); nil until then, and while it
	// cannot be read.
	saved map[string][]executor.Resource
}

// parent is a QoS parent cgroup and the Kubernetes QoS classes of the pods below it.
type parent struct {
	dir     string
	classes []corev1.PodQOSClass
}

var (
	_ qosmanager.RunPlugin        = &Plugin{}
	_ qosmanager.ValidatingPlugin = &Plugin{}
)

// New returns the plugin. It needs Deps.States, Executor, Cgroups and StateDir.
func New(d qosmanager.Deps) (qosmanager.RunPlugin, error) {
	if err := d.Need(Name, "States", "Executor", "Cgroups", "StateDir"); err != nil {
		return nil, err
	}
	p := &Plugin{
		d: d,
		parents: []parent{
			{d.Layout.Kubepods(), []corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort}},
			{d.Layout.QoSDir(corev1.PodQOSBurstable), []corev1.PodQOSClass{corev1.PodQOSBurstable}},
			{d.Layout.QoSDir(corev1.PodQOSBestEffort), []corev1.PodQOSClass{corev1.PodQOSBestEffort}},
		},
		hold:   qosmanager.NewHolder(Name, d.Executor, executor.MemoryMin(0), executor.MemoryLow(0), executor.MemoryHigh(-1), executor.MemoryOOMGroup(false)),
		bad:    qosmanager.NewWarnings(d.Events, ReasonBadAnnotation),
		partly: qosmanager.NewWarnings(d.Events, qosmanager.ReasonAnnotationFieldsIgnored),
	}
	p.v1 = d.CgroupVersion() == cgroup.V1
	return p, nil
}

// Name implements qosmanager.Plugin.
func (p *Plugin) Name() string { return Name }

// Validate implements qosmanager.ValidatingPlugin: for each class whose memoryQOS is on, minLimitPercent,
// lowLimitPercent, throttlingPercent and wmarkRatio in [0, 100], wmarkScalePermill in [1, 1000], wmarkMinAdj in
// [-25, 50], priorityEnable and oomKillGroup 0 or 1, priority in [0, 12] (the API's own bounds). A class that is off
// is accepted whatever its values.
func (p *Plugin) Validate(spec *slov1alpha1.NodeSLOSpec) error {
	var errs []error
	for _, c := range qosmanager.ResourceQOSClasses(spec.ResourceQOSStrategy) {
		cfg := memoryQOS(c.QOS)
		if cfg == nil {
			continue
		}
		f := c.Field + ".memoryQOS."
		errs = append(errs,
			qosmanager.CheckPercent(f+"minLimitPercent", cfg.MinLimitPercent, 0),
			qosmanager.CheckPercent(f+"lowLimitPercent", cfg.LowLimitPercent, 0),
			qosmanager.CheckPercent(f+"throttlingPercent", cfg.ThrottlingPercent, 0),
			qosmanager.CheckPercent(f+"wmarkRatio", cfg.WmarkRatio, 0),
			checkRange(f+"wmarkScalePermill", cfg.WmarkScalePermill, 1, 1000),
			checkRange(f+"wmarkMinAdj", cfg.WmarkMinAdj, -25, 50),
			checkRange(f+"priorityEnable", cfg.PriorityEnable, 0, 1),
			checkRange(f+"priority", cfg.Priority, 0, 12),
			checkRange(f+"oomKillGroup", cfg.OomKillGroup, 0, 1),
		)
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

// checkRange is CheckPercent for fields that are not percents; unset is accepted (the plugin reads none of them
// but oomKillGroup, which the defaults always set).
func checkRange(field string, v *int64, lo, hi int64) error {
	if v != nil && (*v < lo || *v > hi) {
		return fmt.Errorf("%s is %d, outside [%d, %d]", field, *v, lo, hi)
	}
	return nil
}

// memoryQOS is the class's memoryQOS when it is on, else nil.
func memoryQOS(q *slov1alpha1.ResourceQOS) *slov1alpha1.MemoryQOSCfg {
	if q == nil || q.MemoryQOS == nil || q.MemoryQOS.Enable == nil || !*q.MemoryQOS.Enable {
		return nil
	}
	return q.MemoryQOS
}

// Run implements qosmanager.RunPlugin: the memory QoS of every pod of a class that is on, the sums on the QoS
// parents, and the kernel's defaults back, released, where a class was turned off or a percent set to 0. Only the
// values this plugin wrote are ever given back (the state file remembers them across restarts): with every class
// off and nothing recorded it neither reads nor writes a cgroup.
func (p *Plugin) Run(ctx context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	if p.unsupported {
		return nil
	}
	s := spec.ResourceQOSStrategy
	log := klog.FromContext(ctx)
	on := enabledClasses(s)
	if p.v1 {
		if len(on) > 0 {
			p.unsupported = true
			log.Info("cgroup v1 has no memory.min, memory.low, memory.high or memory.oom.group (upstream kernels have them on cgroup v2 only); memory QoS is not applied", "classes", strings.Join(on, ","))
		}
		return nil
	}
	if p.saved == nil {
		rec, err := loadRecord(p.d.StateDir, p.d.Layout.Kubepods())
		if err != nil {
			return err
		}
		for dir, rs := range rec.Held {
			for _, r := range rs {
				p.hold.Adopt(dir, r)
			}
		}
		p.saved = rec.Held
	}
	if len(on) == 0 && p.hold.Len() == 0 {
		return nil
	}
	if err := p.probe(log); err != nil || p.unsupported {
		return err
	}
	if len(on) > 0 && !p.saidAnolis {
		p.saidAnolis = true
		log.Info("memory QoS writes memory.min, memory.low, memory.high and memory.oom.group; wmarkRatio, wmarkScalePermill, wmarkMinAdj, priorityEnable and priority need Anolis OS memcg extensions and are not applied", "classes", strings.Join(on, ","))
	}
	pods := qosmanager.WithRunningContainers(p.d.States.GetAllPods())
	want, live := p.wanted(ctx, s, pods)
	p.bad.Prune(func(uid types.UID) bool { return p.d.States.GetPod(uid) != nil })
	p.partly.Prune(func(uid types.UID) bool { return p.d.States.GetPod(uid) != nil })
	// Recorded before written: a value written but not recorded would be left behind by a restart.
	held := p.hold.All()
	for _, u := range want {
		if r := u.Value.Resource(); !slices.Contains(held[u.Dir], r) {
			held[u.Dir] = append(held[u.Dir], r)
		}
	}
	if err := p.record(held); err != nil {
		return fmt.Errorf("leaving the memory QoS as it is: %w", err)
	}
	err := p.hold.Sync(ctx, "memoryQOS of the class is off or the percent is 0: the kernel's default", want,
		func(dir string) bool { return live[dir] })
	return errors.Join(err, p.record(p.hold.All()))
}

// record saves held in the state file unless the file already holds it.
func (p *Plugin) record(held map[string][]executor.Resource) error {
	if maps.EqualFunc(held, p.saved, func(a, b []executor.Resource) bool {
		return len(a) == len(b) && !slices.ContainsFunc(a, func(r executor.Resource) bool { return !slices.Contains(b, r) })
	}) {
		return nil
	}
	for _, rs := range held {
		slices.Sort(rs)
	}
	if err := saveRecord(p.d.StateDir, &record{Held: held}); err != nil {
		return err
	}
	p.saved = held
	return nil
}

// probe looks once for memory.min in the kubepods cgroup; without it the plugin steps aside, saying so.
func (p *Plugin) probe(log klog.Logger) error {
	if p.probed {
		return nil
	}
	if _, err := p.d.Cgroups.MemoryMin(p.parents[0].dir); err != nil {
		if errors.Is(err, system.ErrUnsupported) {
			p.probed, p.unsupported = true, true
			log.Info("the kubepods cgroup has no memory.min (is the memory controller enabled for it?); memory QoS is not applied", "reason", err.Error())
			return nil
		}
		return fmt.Errorf("reading memory.min of the kubepods cgroup: %w", err)
	}
	p.probed = true
	return nil
}

// wanted are the values of the pods of the classes that are on and of the QoS parents; live are the cgroups that
// exist (the parents, the pods' and their running containers').
func (p *Plugin) wanted(ctx context.Context, s *slov1alpha1.ResourceQOSStrategy, pods []*statesinformer.PodMeta) (want []executor.Update, live map[string]bool) {
	live = map[string]bool{}
	for _, pr := range p.parents {
		live[pr.dir] = true
	}
	sums := map[corev1.PodQOSClass]protection{}
	for _, m := range pods {
		podDir := p.d.Layout.PodDirOf(m.KubeQoS, cgroup.PodUID(m.Pod))
		live[podDir] = true
		containers := map[string]string{} // container name -> cgroup, of the running ones
		qosmanager.ForRunningContainers(m.Pod, func(st *corev1.ContainerStatus) {
			if dir, err := p.d.Layout.ContainerDir(podDir, st.ContainerID); err == nil {
				containers[st.Name], live[dir] = dir, true
			}
		})
		cfg, partly, err := PodMemoryQOS(m.Pod, memoryQOS(qosmanager.ResourceQOSOf(s, m.QoS)))
		_, raw, _ := annotation(m.Pod)
		if err != nil {
			p.bad.Warn(ctx, m.Pod, raw, err, fmt.Sprintf("its class %s's memory QoS applies", m.QoS))
		} else {
			p.bad.Fine(m.Pod)
		}
		p.partly.Partly(ctx, m.Pod, raw, partly)
		if cfg == nil {
			continue
		}
		pv, updates := podValues(m, cfg, podDir, containers)
		want = append(want, updates...)
		sum := sums[m.KubeQoS]
		sums[m.KubeQoS] = protection{min: sum.min + pv.min, low: sum.low + pv.low}
	}
	for _, pr := range p.parents {
		var sum protection
		for _, c := range pr.classes {
			sum.min, sum.low = sum.min+sums[c].min, sum.low+sums[c].low
		}
		reason := fmt.Sprintf("the sum of its pods' protection (%s)", strings.Join(classNames(pr.classes), ", "))
		want = append(want, sum.updates(pr.dir, reason)...)
	}
	return want, live
}

// protection is the memory.min and memory.low of a cgroup, bytes; 0 leaves the kernel's default.
type protection struct{ min, low int64 }

func (v protection) updates(dir, reason string) []executor.Update {
	var u []executor.Update
	if v.min > 0 {
		u = append(u, executor.Update{Dir: dir, Value: executor.MemoryMin(v.min), Reason: "memory.min: " + reason})
	}
	if v.low > 0 {
		u = append(u, executor.Update{Dir: dir, Value: executor.MemoryLow(v.low), Reason: "memory.low: " + reason})
	}
	return u
}

// podValues are the updates of pod m's cgroup and its running containers' (containers, by name), and the pod's
// protection. A container's request and limit come from its spec; the pod's are the sums over its containers and
// sidecars (restartable init containers), its limit only when every one of them has one.
func podValues(m *statesinformer.PodMeta, cfg *slov1alpha1.MemoryQOSCfg, podDir string, containers map[string]string) (protection, []executor.Update) {
	minPct, lowPct, thrPct := *cfg.MinLimitPercent, *cfg.LowLimitPercent, *cfg.ThrottlingPercent
	group := cfg.OomKillGroup != nil && *cfg.OomKillGroup == 1
	var pod protection
	var podLimit int64
	limited := true
	var u []executor.Update
	for _, c := range specContainers(m.Pod) {
		req, lim := c.Resources.Requests.Memory().Value(), c.Resources.Limits.Memory().Value()
		v := protection{min: req * minPct / 100, low: req * lowPct / 100}
		pod.min, pod.low = pod.min+v.min, pod.low+v.low
		if lim <= 0 {
			limited = false
		}
		podLimit += lim
		dir, ok := containers[c.Name]
		if !ok {
			continue
		}
		why := fmt.Sprintf("container %s of pod %s (class %s): request %d x %d%%", c.Name, m.Key(), m.QoS, req, minPct)
		u = append(u, protection{min: v.min}.updates(dir, why)...)
		why = fmt.Sprintf("container %s of pod %s (class %s): request %d x %d%%", c.Name, m.Key(), m.QoS, req, lowPct)
		u = append(u, protection{low: v.low}.updates(dir, why)...)
		if lim > 0 && thrPct > 0 {
			u = append(u, executor.Update{Dir: dir, Value: executor.MemoryHigh(lim * thrPct / 100),
				Reason: fmt.Sprintf("memory.high: container %s of pod %s (class %s): limit %d x %d%%", c.Name, m.Key(), m.QoS, lim, thrPct)})
		}
	}
	why := fmt.Sprintf("pod %s (class %s): the sum of its containers' requests x %d%% / %d%%", m.Key(), m.QoS, minPct, lowPct)
	u = append(u, pod.updates(podDir, why)...)
	if limited && podLimit > 0 && thrPct > 0 {
		u = append(u, executor.Update{Dir: podDir, Value: executor.MemoryHigh(podLimit * thrPct / 100),
			Reason: fmt.Sprintf("memory.high: pod %s (class %s): limit %d x %d%%", m.Key(), m.QoS, podLimit, thrPct)})
	}
	if group {
		u = append(u, executor.Update{Dir: podDir, Value: executor.MemoryOOMGroup(true),
			Reason: fmt.Sprintf("memory.oom.group: pod %s (class %s): oomKillGroup 1", m.Key(), m.QoS)})
	}
	return pod, u
}

// specContainers are the pod's containers and sidecars: what runs for the pod's lifetime.
func specContainers(pod *corev1.Pod) []corev1.Container {
	var cs []corev1.Container
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			cs = append(cs, c)
		}
	}
	return append(cs, pod.Spec.Containers...)
}

// enabledClasses names the classes whose memoryQOS is on.
func enabledClasses(s *slov1alpha1.ResourceQOSStrategy) []string {
	var on []string
	for _, c := range qosmanager.ResourceQOSClasses(s) {
		if memoryQOS(c.QOS) != nil {
			on = append(on, string(c.Class))
		}
	}
	return on
}

func classNames(cs []corev1.PodQOSClass) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

// Asks implements qosmanager.ReportingPlugin: a class's memoryQOS is on.
func (p *Plugin) Asks(spec *slov1alpha1.NodeSLOSpec) bool {
	return len(enabledClasses(spec.ResourceQOSStrategy)) > 0
}

// Unsupported implements qosmanager.SteppingAside: cgroup v1, or a kubepods cgroup without memory.min.
func (p *Plugin) Unsupported() string {
	switch {
	case !p.unsupported:
		return ""
	case p.v1:
		return "cgroup v1 has no memory.min, memory.low, memory.high or memory.oom.group (upstream kernels have them on cgroup v2 only)"
	}
	return "the kubepods cgroup has no memory.min (is the memory controller enabled for it?)"
}
