package resctrl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/resctrl"
)

// Name is the plugin's name in --qos-plugins, logs, the executor's audit trail and metrics.
const Name = "resctrl"

// DefaultInterval is how often the plugin runs: once a second, so that a new process of a pod (a container
// starting, an exec) joins its class's group within about a second. A run reads each group's tasks file once and
// each pod's task lists, and writes only the tasks not yet in their group.
const DefaultInterval = time.Second

const (
	// Dir is the resctrl mount, relative to the host root (the executor's HostFile paths).
	Dir = "sys/fs/resctrl"
	// GroupPrefix names the plugin's groups: GroupPrefix + the class ("gleaner-BE").
	GroupPrefix = "gleaner-"
	// redetect is how often a host without resctrl is looked at again (resctrl mounted after the agent started).
	redetect = time.Minute
)

// Classes are the QoS classes that get a group, in the order they are handled. LSE pods share LSR's group (the
// NodeSLO has no LSE class); SYSTEM pods stay in the root group.
func Classes() []slov1alpha1.QoSClass {
	return []slov1alpha1.QoSClass{slov1alpha1.QoSLSR, slov1alpha1.QoSLS, slov1alpha1.QoSBE}
}

// Group is the name of class's resctrl group.
func Group(class slov1alpha1.QoSClass) string { return GroupPrefix + string(class) }

// groupOf is the class whose group a pod of QoS class q belongs in; "" for none.
func groupOf(q slov1alpha1.QoSClass) slov1alpha1.QoSClass {
	switch q {
	case slov1alpha1.QoSLSE, slov1alpha1.QoSLSR:
		return slov1alpha1.QoSLSR
	case slov1alpha1.QoSLS, slov1alpha1.QoSBE:
		return q
	}
	return ""
}

// taskLister lists the threads of a cgroup tree (*cgroup.FS implements it).
type taskLister interface {
	Tasks(dir string) ([]int, error)
}

// Plugin keeps one resctrl group per enabled QoS class, with the class's schemata and its pods' threads.
type Plugin struct {
	d     qosmanager.Deps
	fs    *resctrl.FS
	proc  string
	tasks taskLister

	info       *resctrl.Info
	detectedAt time.Time
	aside      string // the reason the plugin stepped aside, said once
	unmanaged  bool   // Info.Unmanaged said
}

var (
	_ qosmanager.RunPlugin        = &Plugin{}
	_ qosmanager.ValidatingPlugin = &Plugin{}
)

// New returns the plugin. It needs Deps.States, Executor, Cgroups (listing a cgroup's threads, as *cgroup.FS does),
// Proc, Host and Clock.
func New(d qosmanager.Deps) (qosmanager.RunPlugin, error) {
	if err := d.Need(Name, "States", "Executor", "Cgroups", "Proc", "Host", "Clock"); err != nil {
		return nil, err
	}
	tl, ok := d.Cgroups.(taskLister)
	if !ok {
		return nil, fmt.Errorf("building the %s plugin: the cgroup reader %T cannot list a cgroup's threads", Name, d.Cgroups)
	}
	return &Plugin{d: d, fs: resctrl.NewFS(d.Host.Path(Dir)), proc: d.Proc.Root(), tasks: tl}, nil
}

// Name implements qosmanager.Plugin.
func (p *Plugin) Name() string { return Name }

// classQOS is the resctrlQOS of class in spec (defaults filled in), nil when the NodeSLO has none.
func classQOS(spec *slov1alpha1.NodeSLOSpec, class slov1alpha1.QoSClass) *slov1alpha1.ResctrlQOSCfg {
	s := spec.ResourceQOSStrategy
	if s == nil {
		return nil
	}
	var q *slov1alpha1.ResourceQOS
	switch class {
	case slov1alpha1.QoSLSR:
		q = s.LSRClass
	case slov1alpha1.QoSLS:
		q = s.LSClass
	case slov1alpha1.QoSBE:
		q = s.BEClass
	}
	if q == nil {
		return nil
	}
	return q.ResctrlQOS
}

func enabled(c *slov1alpha1.ResctrlQOSCfg) bool { return c != nil && c.Enable != nil && *c.Enable }

func field(class slov1alpha1.QoSClass) string {
	return "resourceQOSStrategy." + strings.ToLower(string(class)) + "Class.resctrlQOS"
}

// Validate implements qosmanager.ValidatingPlugin. For every class with resctrlQOS enabled: catRangeStartPercent
// and catRangeEndPercent in [0, 100] with the start below the end, mbaPercent in [1, 100]; and, where this host has
// resctrl, a cache range of at least min_cbm_bits ways, a bandwidth not below min_bandwidth, and no more groups than
// the hardware has closids (the root group takes one). A class that is off is accepted whatever its values.
func (p *Plugin) Validate(spec *slov1alpha1.NodeSLOSpec) error {
	p.detect(context.Background())
	var msgs []string
	groups := 0
	for _, class := range Classes() {
		c := classQOS(spec, class)
		if !enabled(c) {
			continue
		}
		groups++
		f := field(class)
		errs := []error{
			qosmanager.CheckPercent(f+".catRangeStartPercent", c.CATRangeStartPercent, 0),
			qosmanager.CheckPercent(f+".catRangeEndPercent", c.CATRangeEndPercent, 0),
			qosmanager.CheckPercent(f+".mbaPercent", c.MBAPercent, 1),
		}
		if s, e := c.CATRangeStartPercent, c.CATRangeEndPercent; s != nil && e != nil && *s >= *e {
			errs = append(errs, fmt.Errorf("%s.catRangeStartPercent (%d) is not below catRangeEndPercent (%d)", f, *s, *e))
		}
		if errors.Join(errs...) == nil && p.info != nil {
			if _, err := p.info.ClassSchemata(request(c)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", f, err))
			}
		}
		for _, err := range errs {
			if err != nil {
				msgs = append(msgs, err.Error())
			}
		}
	}
	if p.info != nil {
		if n := p.info.Closids(); n > 0 && groups > n-1 {
			msgs = append(msgs, fmt.Sprintf("resctrlQOS is enabled for %d classes, but the hardware has %d closids, one of them the root group's", groups, n))
		}
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

func request(c *slov1alpha1.ResctrlQOSCfg) resctrl.Class {
	return resctrl.Class{CATStartPercent: *c.CATRangeStartPercent, CATEndPercent: *c.CATRangeEndPercent, MBAPercent: *c.MBAPercent}
}

// detect reads what the host offers, once, and again every redetect while resctrl is missing. It logs once why
// the plugin steps aside, and once which of L3 and MB it leaves alone.
func (p *Plugin) detect(ctx context.Context) {
	now := p.d.Clock.Now()
	if p.info != nil || (!p.detectedAt.IsZero() && now.Sub(p.detectedAt) < redetect) {
		return
	}
	log := klog.FromContext(ctx)
	info, err := p.fs.Detect(p.proc)
	if err != nil {
		p.detectedAt = now
		if msg := err.Error(); msg != p.aside {
			p.aside = msg
			if errors.Is(err, system.ErrUnsupported) {
				log.Info("resctrl is not available on this host; the resctrl plugin steps aside", "reason", msg)
			} else {
				log.Error(err, "reading what resctrl offers on this host; the resctrl plugin steps aside and tries again later")
			}
		}
		return
	}
	p.info, p.aside = info, ""
	log.Info("resctrl found", "vendor", info.Vendor, "l3", info.L3 != nil, "mb", info.MB != nil, "closids", info.Closids())
	if len(info.Unmanaged) > 0 && !p.unmanaged {
		p.unmanaged = true
		log.Info("resctrl: part of what the NodeSLO asks is not applied on this host", "reasons", strings.Join(info.Unmanaged, "; "))
	}
}

// Run implements qosmanager.RunPlugin: for each class, with resctrlQOS enabled, the group exists with the class's
// schemata and holds every thread of the class's pods; disabled, the group is removed (the kernel moves its tasks
// back to the root group).
func (p *Plugin) Run(ctx context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	p.detect(ctx)
	if p.info == nil {
		return nil
	}
	var errs []error
	var pods []*statesinformer.PodMeta
	for _, class := range Classes() {
		c := classQOS(spec, class)
		group := Group(class)
		if !enabled(c) {
			if p.fs.HasGroup(group) {
				errs = append(errs, p.d.Executor.RemoveDir(ctx, Name, path.Join(Dir, group),
					fmt.Sprintf("resctrlQOS of class %s is off; the kernel moves its tasks back to the root group", class)))
			}
			continue
		}
		if pods == nil {
			pods = p.d.States.GetAllPods()
		}
		if err := p.enforce(ctx, class, c, pods); err != nil {
			errs = append(errs, fmt.Errorf("class %s: %w", class, err))
		}
	}
	return errors.Join(errs...)
}

// enforce makes class's group, writes its schemata and moves its pods' threads into it.
func (p *Plugin) enforce(ctx context.Context, class slov1alpha1.QoSClass, c *slov1alpha1.ResctrlQOSCfg, pods []*statesinformer.PodMeta) error {
	group := Group(class)
	rel := path.Join(Dir, group)
	schemata, err := p.info.ClassSchemata(request(c))
	if err != nil {
		return err // Validate refuses this before Run sees it
	}
	if !p.fs.HasGroup(group) {
		if err := p.d.Executor.MakeDir(ctx, Name, rel, fmt.Sprintf("resctrlQOS of class %s is on", class)); err != nil {
			return err
		}
	}
	reason := fmt.Sprintf("class %s: cache %d%%-%d%%, memory bandwidth %d%%", class, *c.CATRangeStartPercent, *c.CATRangeEndPercent, *c.MBAPercent)
	if err := p.d.Executor.Apply(ctx, Name, executor.Update{
		Dir: path.Join(rel, "schemata"), Value: executor.HostFile{Kind: executor.ResourceResctrlSchemata, Content: schemata.String()}, Reason: reason,
	}); err != nil {
		return err
	}
	in, err := p.fs.Tasks(group)
	if err != nil {
		return err
	}
	var errs []error
	tasksFile := path.Join(rel, "tasks")
	for _, m := range pods {
		if groupOf(m.QoS) != class {
			continue
		}
		ids, err := p.tasks.Tasks(p.d.Layout.PodDirOf(m.KubeQoS, cgroup.PodUID(m.Pod)))
		if err != nil {
			if !isGone(err) {
				errs = append(errs, fmt.Errorf("listing the threads of pod %s: %w", m.Key(), err))
			}
			continue
		}
		var moves []executor.Update
		var movedIDs []int
		for _, id := range ids {
			if !in[id] {
				moves = append(moves, executor.Update{Dir: tasksFile, Value: executor.HostFile{Kind: executor.ResourceResctrlTasks, Content: strconv.Itoa(id)}})
				movedIDs = append(movedIDs, id)
			}
		}
		moved := 0
		for i, err := range p.d.Executor.DoAll(ctx, Name, fmt.Sprintf("threads of pod %s, class %s", m.Key(), class), moves...) {
			id := movedIDs[i]
			switch {
			case err == nil:
				in[id] = true
				moved++
			case errors.Is(err, syscall.ESRCH):
				// The thread ended between the listing and the write.
			default:
				errs = append(errs, fmt.Errorf("moving thread %d of pod %s into %s: %w", id, m.Key(), group, err))
			}
		}
		if moved > 0 {
			klog.FromContext(ctx).V(4).Info("threads moved into their class's resctrl group", "pod", m.Key(), "group", group, "threads", moved)
		}
	}
	return errors.Join(errs...)
}

// isGone reports whether err says a pod's cgroup no longer exists (it ended between the pod list and the read).
func isGone(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// Asks implements qosmanager.ReportingPlugin: a class's resctrlQOS is enabled.
func (p *Plugin) Asks(spec *slov1alpha1.NodeSLOSpec) bool {
	for _, class := range Classes() {
		if enabled(classQOS(spec, class)) {
			return true
		}
	}
	return false
}

// Unsupported implements qosmanager.SteppingAside: why resctrl is not available on this host.
func (p *Plugin) Unsupported() string {
	if p.info == nil {
		return p.aside
	}
	return ""
}
