package cpuqos

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/gleaner-sh/gleaner/pkg/agent/tier"
)

// Name is the plugin's name in --qos-plugins, logs, the executor's audit trail and metrics.
const Name = "cpuqos"

// DefaultInterval is how often the plugin runs: a new BE pod outside the besteffort QoS cgroup becomes idle within
// a second of its first container starting.
const DefaultInterval = time.Second

// ReasonBadAnnotation is the reason of the Warning event on a pod whose CPU QoS annotation cannot be used.
const ReasonBadAnnotation = "InvalidCPUQOSAnnotation"

// IdleGroupIdentity is the groupIdentity that means cpu.idle = 1: Anolis OS's lowest group identity, the one
// upstream kernels have an equivalent of.
const IdleGroupIdentity = -1

// Plugin writes cpu.idle for the classes whose cpuQOS asks for it.
type Plugin struct {
	d            qosmanager.Deps
	qosDir       string // the besteffort QoS cgroup
	burstableDir string // the burstable QoS cgroup, whose cpu.shares the plugin keeps for the kubelet (standIn)
	v2           bool
	hold         *qosmanager.Holder
	bad          *qosmanager.Warnings // pods' CPU QoS annotations that cannot be used
	partly       *qosmanager.Warnings // pods' CPU QoS annotations used with parts left out

	probed      bool // cpu.idle was found in the besteffort QoS cgroup (or found missing)
	unsupported bool // this kernel has no cpu.idle: the plugin steps aside
	adopted     bool // the values an earlier agent left were looked for
	saidAnolis  bool

	kubelet kubeletWatch
	// kubeletStarting is set while the besteffort QoS cgroup is kept from idle for a kubelet that (re)started.
	kubeletStarting bool
	saidNoKubelet   bool // that no kubelet process can be seen was logged
}

var (
	_ qosmanager.RunPlugin        = &Plugin{}
	_ qosmanager.ValidatingPlugin = &Plugin{}
)

// New returns the plugin. It needs Deps.States, Executor and Cgroups.
func New(d qosmanager.Deps) (qosmanager.RunPlugin, error) {
	if err := d.Need(Name, "States", "Executor", "Cgroups"); err != nil {
		return nil, err
	}
	return &Plugin{
		d:            d,
		qosDir:       d.Layout.QoSDir(corev1.PodQOSBestEffort),
		burstableDir: d.Layout.QoSDir(corev1.PodQOSBurstable),
		v2:           d.CgroupVersion() == cgroup.V2,
		hold:         qosmanager.NewHolder(Name, d.Executor, executor.CPUIdle(false)),
		bad:          qosmanager.NewWarnings(d.Events, ReasonBadAnnotation),
		partly:       qosmanager.NewWarnings(d.Events, qosmanager.ReasonAnnotationFieldsIgnored),
		kubelet:      kubeletWatch{procRoot: procRoot(d)},
	}, nil
}

// procRoot is the host's /proc for the kubelet watch; "" without one (the watch then never holds idle back).
func procRoot(d qosmanager.Deps) string {
	if d.Proc == nil || d.Clock == nil {
		return ""
	}
	return d.Proc.Root()
}

// Name implements qosmanager.Plugin.
func (p *Plugin) Name() string { return Name }

// Validate implements qosmanager.ValidatingPlugin: a class whose cpuQOS is on needs a groupIdentity in [-1, 2].
// A class that is off is accepted whatever its values.
func (p *Plugin) Validate(spec *slov1alpha1.NodeSLOSpec) error {
	var msgs []string
	for _, c := range qosmanager.ResourceQOSClasses(spec.ResourceQOSStrategy) {
		cfg := cpuQOS(c.QOS)
		if cfg == nil {
			continue
		}
		f := c.Field + ".cpuQOS.groupIdentity"
		switch gi := cfg.GroupIdentity; {
		case gi == nil:
			msgs = append(msgs, f+" is unset")
		case *gi < IdleGroupIdentity || *gi > 2:
			msgs = append(msgs, fmt.Sprintf("%s is %d, outside [-1, 2]", f, *gi))
		}
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// cpuQOS is the class's cpuQOS when it is on, else nil.
func cpuQOS(q *slov1alpha1.ResourceQOS) *slov1alpha1.CPUQOSCfg {
	if q == nil || q.CPUQOS == nil || q.CPUQOS.Enable == nil || !*q.CPUQOS.Enable {
		return nil
	}
	return q.CPUQOS
}

// idle reports whether the class's pods run as SCHED_IDLE.
func idle(q *slov1alpha1.ResourceQOS) bool {
	cfg := cpuQOS(q)
	return cfg != nil && cfg.GroupIdentity != nil && *cfg.GroupIdentity == IdleGroupIdentity
}

// Run implements qosmanager.RunPlugin: cpu.idle = 1 for the cgroups of the classes that ask for it, and 0 again,
// released, for those that no longer do.
func (p *Plugin) Run(ctx context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	if p.unsupported {
		return nil
	}
	log := klog.FromContext(ctx)
	if !p.probed {
		if _, err := p.d.Cgroups.CPUIdle(p.qosDir); err != nil {
			if errors.Is(err, system.ErrUnsupported) {
				p.probed, p.unsupported = true, true
				log.Info("this kernel has no cpu.idle (it needs Linux 5.15 or later); CPU idle for best-effort pods is not applied", "reason", err.Error())
				return nil
			}
			return fmt.Errorf("reading cpu.idle of the besteffort QoS cgroup: %w", err)
		}
		p.probed = true
	}
	s := spec.ResourceQOSStrategy
	p.sayAnolis(log, s)
	all := p.d.States.GetAllPods()
	pods := qosmanager.WithRunningContainers(all)
	if !p.adopted {
		p.adopt(pods)
	}
	var want []executor.Update
	beIdle := p.besteffortIdle(log, s)
	if beIdle {
		want = append(want, executor.Update{Dir: p.qosDir, Value: executor.CPUIdle(true), Reason: "class BE is cpuQOS groupIdentity -1: the besteffort QoS cgroup runs as SCHED_IDLE"})
	}
	live := map[string]*corev1.Pod{p.qosDir: nil}
	for _, m := range pods {
		dir := p.d.Layout.PodDirOf(m.KubeQoS, cgroup.PodUID(m.Pod))
		live[dir] = m.Pod
		classIdle := idle(qosmanager.ResourceQOSOf(s, m.QoS))
		podIdle, why, partly, err := PodIdle(m.Pod, classIdle)
		_, raw, _ := annotation(m.Pod)
		if err != nil {
			p.bad.Warn(ctx, m.Pod, raw, err, fmt.Sprintf("its class %s's cpuQOS applies", m.QoS))
		} else {
			p.bad.Fine(m.Pod)
		}
		p.partly.Partly(ctx, m.Pod, raw, partly)
		if !podIdle || underIdleQoS(m, s) || hookOwnsShares(m.Pod) {
			continue
		}
		want = append(want, executor.Update{Dir: dir, Value: executor.CPUIdle(true),
			Reason: fmt.Sprintf("pod %s of class %s %s runs as SCHED_IDLE", m.Key(), m.QoS, why)})
	}
	p.bad.Prune(func(uid types.UID) bool { return p.d.States.GetPod(uid) != nil })
	p.partly.Prune(func(uid types.UID) bool { return p.d.States.GetPod(uid) != nil })
	hosts := p.hostApplications(spec, s)
	for _, u := range hosts {
		if u != nil {
			want = append(want, *u)
		}
	}
	p.reassertDrifted(want)
	wasIdle := map[string]bool{}
	for dir := range live {
		wasIdle[dir] = p.hold.Held(dir, executor.ResourceCPUIdle)
	}
	for dir := range hosts {
		live[dir] = nil // held while configured; its weight is not the kubelet's to restore (see restoreShares)
	}
	err := p.hold.Sync(ctx, "cpuQOS of the class is off or not groupIdentity -1: cpu.idle back to the kernel's 0", want,
		func(dir string) bool { _, ok := live[dir]; return ok })
	for dir := range hosts {
		delete(live, dir)
	}
	return errors.Join(err, p.restoreShares(ctx, live, wasIdle), p.standIn(ctx, all, beIdle))
}

// besteffortIdle reports whether the besteffort QoS cgroup is to be idle now: its class asks for it, and the
// kubelet is not starting (kubeletWatch: the kubelet cannot start while that cgroup is idle). It logs when it holds
// idle back for a starting kubelet, and when it lets it go again.
func (p *Plugin) besteffortIdle(log klog.Logger, s *slov1alpha1.ResourceQOSStrategy) bool {
	if !idle(s.BEClass) {
		return false
	}
	if p.kubelet.procRoot == "" {
		return true
	}
	settled := p.kubelet.settled(p.d.Clock.Now())
	if !p.kubelet.seen && !p.saidNoKubelet {
		p.saidNoKubelet = true
		log.Info("no kubelet process in /proc (no host PID namespace, or a kubelet inside another binary): the besteffort QoS cgroup stays idle while a kubelet starts, and a kubelet cannot start then (docs/qos.md)",
			"proc", p.kubelet.procRoot)
	}
	if !settled && !p.kubeletStarting {
		log.Info("the kubelet is starting: the besteffort QoS cgroup leaves SCHED_IDLE until the kubelet has set up its QoS cgroups (the kernel refuses their cpu.shares while idle, and the kubelet exits)",
			"settle", KubeletSettle)
	} else if settled && p.kubeletStarting {
		log.Info("the kubelet has run for the settle time: the besteffort QoS cgroup runs as SCHED_IDLE again", "settle", KubeletSettle)
	}
	p.kubeletStarting = !settled
	return settled
}

// hostApplications are the cgroups of the NodeSLO's host applications, each with its cpu.idle = 1 update when its
// class runs as SCHED_IDLE (nil when not): a BE application, such as a log shipper or a node-local build cache
// declared in hostApplications, yields to the services as a BE pod does. An application's cgroup is its own
// (CgroupLocation); when it is not there the write is "gone" and tried again at the next run.
func (p *Plugin) hostApplications(spec *slov1alpha1.NodeSLOSpec, s *slov1alpha1.ResourceQOSStrategy) map[string]*executor.Update {
	dirs := map[string]*executor.Update{}
	for _, app := range spec.HostApplications {
		base, parent, rel := app.CgroupLocation()
		dir := p.d.Layout.HostDir(cgroup.HostBase(base), parent, rel)
		dirs[dir] = nil
		if app.QoS != "" && idle(qosmanager.ResourceQOSOf(s, app.QoS)) {
			dirs[dir] = &executor.Update{Dir: dir, Value: executor.CPUIdle(true),
				Reason: fmt.Sprintf("host application %s of class %s (cpuQOS groupIdentity -1) runs as SCHED_IDLE", app.Name, app.QoS)}
		}
	}
	return dirs
}

// reassertDrifted has the executor write again the cpu.idle 1 of wanted cgroups that no longer hold it. The executor
// skips values it wrote and still holds until its next resync, but on cgroup v2 with the systemd driver systemd
// writes cpu.idle 0 whenever it applies the slice's CPU settings (the kubelet's QoS update every minute and for each
// new pod does that); reading each wanted cgroup every run puts idle back within the plugin's interval.
func (p *Plugin) reassertDrifted(want []executor.Update) {
	for _, u := range want {
		if !p.hold.Held(u.Dir, executor.ResourceCPUIdle) {
			continue // not written yet: this Sync writes it
		}
		if on, err := p.d.Cgroups.CPUIdle(u.Dir); err == nil && !on {
			p.d.Executor.Invalidate(u.Dir, executor.ResourceCPUIdle)
		}
	}
}

// restoreShares writes back the kubelet's cpu.shares of every live cgroup whose cpu.idle this run gave back: the
// kernel resets the weight of a cgroup leaving idle to the default 1024, not to what it was, and the kubelet writes
// a pod cgroup's weight only when it creates or resizes the pod (the besteffort cgroup's within a minute). The
// value is the kubelet's own (cgroup.PodResources, MinShares for the besteffort cgroup); it is written once, not
// held.
func (p *Plugin) restoreShares(ctx context.Context, live map[string]*corev1.Pod, wasIdle map[string]bool) error {
	var errs []error
	for dir, pod := range live {
		if !wasIdle[dir] || p.hold.Held(dir, executor.ResourceCPUIdle) {
			continue
		}
		shares := cgroup.MinShares
		if pod != nil {
			shares = cgroup.PodResources(pod).CPUShares
		}
		errs = append(errs, p.d.Executor.Do(ctx, Name, executor.Update{Dir: dir, Value: executor.CPUShares(shares),
			Reason: "cpu.idle 0 resets the weight to 1024: the kubelet's value back"}))
	}
	return errors.Join(errs...)
}

// podAnnotation is what a pod's CPU QoS annotation holds: Koordinator's CPUQOSCfg, with its schedIdle, which the
// NodeSLO's classes do not read (a class asks for idle with groupIdentity -1).
type podAnnotation struct {
	slov1alpha1.CPUQOSCfg `json:",inline"`
	// SchedIdle 1 asks for cpu.idle = 1, as groupIdentity -1 does; 0 asks for nothing.
	SchedIdle *int64 `json:"schedIdle,omitempty"`
}

// PodIdle reports whether pod runs as SCHED_IDLE, whose class does (classIdle) or not, and why: its class's
// cpuQOS, or its own AnnotationCPUQOS (else Koordinator's). The annotation asks for idle with "enable": true and
// groupIdentity -1 or schedIdle 1; without "enable": true it asks for nothing, as in Koordinator. It may make a pod
// idle but never take idle from a pod whose class has it.
//
// partly names what of a usable annotation was left out: the fields of Koordinator's value that Gleaner does not
// read (qosmanager.DecodeAnnotation), and an idle asked for without "enable"; "" when nothing was. An annotation
// that does not decode, has a groupIdentity outside [-1, 2] or a schedIdle other than 0 or 1, or would leave idle,
// is an error, and the class decides.
func PodIdle(pod *corev1.Pod, classIdle bool) (runsIdle bool, why, partly string, err error) {
	why = "(the class's cpuQOS groupIdentity -1)"
	key, raw, ok := annotation(pod)
	if !ok {
		return classIdle, why, "", nil
	}
	var a podAnnotation
	ignored, err := qosmanager.DecodeAnnotation(key, raw, &a)
	if err != nil {
		return classIdle, why, "", fmt.Errorf("annotation %s=%q is not a CPU QoS configuration: %w", key, raw, err)
	}
	asks, msgs := a.idle()
	if len(msgs) > 0 {
		return classIdle, why, "", fmt.Errorf("annotation %s=%q: %s", key, raw, strings.Join(msgs, "; "))
	}
	enabled := a.Enable != nil && *a.Enable
	own := enabled && len(asks) > 0
	if classIdle && !own {
		return true, why, "", fmt.Errorf("annotation %s=%q would take the pod out of SCHED_IDLE, which its class runs it as: a pod may only narrow its class's CPU QoS", key, raw)
	}
	var left []string
	if msg := qosmanager.IgnoredFields(key, ignored); msg != "" {
		left = append(left, msg)
	}
	if len(asks) > 0 && !enabled {
		left = append(left, fmt.Sprintf("annotation %s: without \"enable\": true, %s does not make the pod idle (as in Koordinator)", key, strings.Join(asks, " and ")))
	}
	partly = strings.Join(left, "; ")
	if own && !classIdle {
		return true, "(its annotation " + key + ")", partly, nil
	}
	return classIdle, why, partly, nil
}

// idle names the values of a that ask for idle (groupIdentity -1, schedIdle 1), and says what is out of range.
func (a *podAnnotation) idle() (asks, bad []string) {
	if gi := a.GroupIdentity; gi != nil {
		if *gi < IdleGroupIdentity || *gi > 2 {
			bad = append(bad, fmt.Sprintf("groupIdentity %d is outside [-1, 2]", *gi))
		} else if *gi == IdleGroupIdentity {
			asks = append(asks, "groupIdentity -1")
		}
	}
	if si := a.SchedIdle; si != nil {
		if *si != 0 && *si != 1 {
			bad = append(bad, fmt.Sprintf("schedIdle %d is not 0 or 1", *si))
		} else if *si == 1 {
			asks = append(asks, "schedIdle 1")
		}
	}
	return asks, bad
}

// annotation is the pod's own CPU QoS annotation and its key: gleaner.sh's, else Koordinator's.
func annotation(pod *corev1.Pod) (key, raw string, ok bool) {
	for _, k := range []string{slov1alpha1.AnnotationCPUQOS, slov1alpha1.AnnotationCPUQOSAlias} {
		if v, has := pod.Annotations[k]; has {
			return k, v, true
		}
	}
	return "", "", false
}

// underIdleQoS reports whether pod m is a BE pod in the besteffort QoS cgroup while that cgroup is idle: the
// cgroup already makes it idle against the services, and among its siblings (all best-effort) idle changes nothing.
func underIdleQoS(m *statesinformer.PodMeta, s *slov1alpha1.ResourceQOSStrategy) bool {
	return m.QoS == slov1alpha1.QoSBE && m.KubeQoS == corev1.PodQOSBestEffort && idle(s.BEClass)
}

// hookOwnsShares reports whether the runtime hook sets the pod's cpu.shares (a pod asking for batch or mid CPU):
// the kernel refuses cpu.shares of an idle cgroup, so such a pod is not made idle on its own. A BE pod in the
// besteffort QoS cgroup is idle through that cgroup anyway.
func hookOwnsShares(pod *corev1.Pod) bool {
	plan, ok := tier.Translate(pod)
	return ok && plan.Pod.CPUShares != 0
}

// standIn keeps the burstable QoS cgroup's CPU weight at the kubelet's value while the besteffort QoS cgroup is
// idle. The kernel refuses cpu.shares (v1) and cpu.weight (v2) writes to an idle cgroup, and the kubelet's QoS
// manager, which writes the besteffort cgroup's weight on every update (each minute and for each new pod), gives up
// that update at the refusal: whether the burstable cgroup's weight was written first is up to map order, so the
// services' weight could lag their requests by minutes. Each run the plugin reads the burstable cgroup's weight and,
// when it differs from what the kubelet computes (cgroup.BurstableShares; on v2 through the kubelet's own linear
// conversion, cgroup.SharesToWeight), writes that value once (not held: the kubelet stays its owner). With the
// systemd driver on v2, systemd clears cpu.idle before it writes the weight, so the kubelet's update goes through
// there and the values already agree.
func (p *Plugin) standIn(ctx context.Context, pods []*statesinformer.PodMeta, beIdle bool) error {
	if !beIdle {
		return nil
	}
	var list []*corev1.Pod
	for _, m := range pods {
		if m.Pod.DeletionTimestamp != nil && len(qosmanager.WithRunningContainers([]*statesinformer.PodMeta{m})) == 0 {
			continue // the kubelet counts a deleted pod only while its containers run
		}
		list = append(list, m.Pod)
	}
	shares := cgroup.BurstableShares(list)
	if got, err := p.d.Cgroups.CPUShares(p.burstableDir); err == nil && (got == shares ||
		p.v2 && cgroup.SharesToWeight(got) == cgroup.SharesToWeight(shares)) {
		return nil
	}
	return p.d.Executor.Do(ctx, Name, executor.Update{Dir: p.burstableDir, Value: executor.CPUShares(shares),
		Reason: fmt.Sprintf("the kubelet's value (the CPU requests of the Burstable pods among %d): its own update stops at the besteffort cgroup's weight, which the kernel refuses while cpu.idle is 1", len(list))})
}

// adopt holds the cpu.idle = 1 an earlier agent left in the besteffort QoS cgroup and the pods' cgroups, so that
// the next Sync writes 0 back where the strategy no longer asks for it.
func (p *Plugin) adopt(pods []*statesinformer.PodMeta) {
	dirs := []string{p.qosDir}
	for _, m := range pods {
		dirs = append(dirs, p.d.Layout.PodDirOf(m.KubeQoS, cgroup.PodUID(m.Pod)))
	}
	for _, dir := range dirs {
		if on, err := p.d.Cgroups.CPUIdle(dir); err == nil && on {
			p.hold.Adopt(dir, executor.ResourceCPUIdle)
		}
	}
	p.adopted = true
}

// sayAnolis says once that the groupIdentity values above -1 of classes that are on need Anolis OS.
func (p *Plugin) sayAnolis(log klog.Logger, s *slov1alpha1.ResourceQOSStrategy) {
	if p.saidAnolis {
		return
	}
	var classes []string
	for _, c := range qosmanager.ResourceQOSClasses(s) {
		if cfg := cpuQOS(c.QOS); cfg != nil && cfg.GroupIdentity != nil && *cfg.GroupIdentity > IdleGroupIdentity {
			classes = append(classes, fmt.Sprintf("%s=%d", c.Class, *cfg.GroupIdentity))
		}
	}
	if len(classes) == 0 {
		return
	}
	p.saidAnolis = true
	log.Info("cpuQOS groupIdentity 0, 1 and 2 need Anolis OS group identity, which upstream kernels lack; these classes keep cpu.idle 0", "classes", strings.Join(classes, ","))
}

// Asks implements qosmanager.ReportingPlugin: a class's cpuQOS is on with groupIdentity -1.
func (p *Plugin) Asks(spec *slov1alpha1.NodeSLOSpec) bool {
	for _, c := range qosmanager.ResourceQOSClasses(spec.ResourceQOSStrategy) {
		if idle(c.QOS) {
			return true
		}
	}
	return false
}

// Unsupported implements qosmanager.SteppingAside: a kernel without cpu.idle.
func (p *Plugin) Unsupported() string {
	if p.unsupported {
		return "this kernel has no cpu.idle (it needs Linux 5.15 or later)"
	}
	return ""
}
