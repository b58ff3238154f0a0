package blkio

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// Name is the plugin's name in --qos-plugins, logs, the executor's audit trail and metrics.
const Name = "blkio"

// DefaultInterval is how often the plugin runs: a new best-effort pod outside the besteffort QoS cgroup gets its
// caps within a second. A run with nothing new writes nothing (the executor holds the values).
const DefaultInterval = time.Second

// defaultWeight is the kernel's default I/O weight on both versions (blkio.bfq.weight, io.weight), which
// ioWeightPercent is a percent of.
const defaultWeight = 100

// field is the NodeSLO path of the plugin's configuration, for messages.
const field = "resourceQOSStrategy.beClass.blkioQOS"

// Plugin caps the block I/O of best-effort pods from the NodeSLO's beClass.blkioQOS: per device, read and write
// bytes and operations per second and the proportional weight, on the besteffort QoS cgroup (the class's total)
// and on each best-effort pod's cgroup.
type Plugin struct {
	d       qosmanager.Deps
	sysRoot string
	qosDir  string

	// held are the cgroups this process handed caps or a weight to, with the devices; what a change of the
	// configuration or turning it off must take back.
	held map[string]*heldDir

	probed                   bool // the besteffort cgroup's files were read once: lacksLimits, lacksWeight are known
	lacksLimits, lacksWeight bool // this kernel lacks the files: said once, never written
	restored                 bool // off, and nothing left to undo

	bad    *qosmanager.Warnings // pods' block I/O QoS annotations that cannot be used
	partly *qosmanager.Warnings // pods' block I/O QoS annotations used with fields left out
}

type heldDir struct {
	devices map[cgroup.Device]bool
	weight  bool
}

var (
	_ qosmanager.RunPlugin        = &Plugin{}
	_ qosmanager.ValidatingPlugin = &Plugin{}
)

// New returns the plugin. It needs Deps.States, Executor, Cgroups and SysRoot.
func New(d qosmanager.Deps) (qosmanager.RunPlugin, error) {
	if err := d.Need(Name, "States", "Executor", "Cgroups"); err != nil {
		return nil, err
	}
	if d.SysRoot == "" {
		return nil, fmt.Errorf("building the %s plugin: missing SysRoot", Name)
	}
	return &Plugin{d: d, sysRoot: d.SysRoot, qosDir: d.Layout.QoSDir(corev1.PodQOSBestEffort), held: map[string]*heldDir{},
		bad:    qosmanager.NewWarnings(d.Events, ReasonBadAnnotation),
		partly: qosmanager.NewWarnings(d.Events, qosmanager.ReasonAnnotationFieldsIgnored)}, nil
}

// Name implements qosmanager.Plugin.
func (p *Plugin) Name() string { return Name }

// config is the best-effort class's block I/O configuration, nil when it is off.
func config(spec *slov1alpha1.NodeSLOSpec) *slov1alpha1.BlkIOQOS {
	s := spec.ResourceQOSStrategy
	if s == nil || s.BEClass == nil || s.BEClass.BlkIOQOS == nil {
		return nil
	}
	if c := s.BEClass.BlkIOQOS; c.Enable != nil && *c.Enable {
		return &c.BlkIOQOS
	}
	return nil
}

// devCap is one device's caps from one block of the configuration.
type devCap struct {
	block int
	dev   cgroup.Device
	limit cgroup.IOLimit
	why   string // the block it comes from, for the executor's audit trail
}

// plan is what the configuration asks for, for one cgroup: the caps per device and the weight (0: left alone).
type plan struct {
	caps      []devCap
	weight    uint64
	weightWhy string
}

// empty: the plan writes nothing.
func (pl plan) empty() bool { return len(pl.caps) == 0 && pl.weight == 0 }

// Validate implements qosmanager.ValidatingPlugin: with the strategy on, every block must name a device (type
// device) or an LVM volume group (type volumegroup) that sysfs shows, no two blocks the same disk, no value may be
// negative, ioWeightPercent must be in [1, 100] and the same in every block that sets it (the weight is the
// cgroup's, not the device's). A strategy that is off is accepted whatever its values.
func (p *Plugin) Validate(spec *slov1alpha1.NodeSLOSpec) error {
	c := config(spec)
	if c == nil {
		return nil
	}
	_, err := p.plan(c)
	return err
}

// plan resolves the configuration's devices and checks its values; the error names every block it refuses, and
// the plan holds the others.
func (p *Plugin) plan(c *slov1alpha1.BlkIOQOS) (plan, error) {
	return resolvePlan(p.sysRoot, field+".", c.Blocks)
}

// resolvePlan resolves blocks' devices through the node's /sys at sysRoot and checks their values, naming each
// block as prefix+"blocks[i]"; the error names every block it refuses, and the plan holds the others.
func resolvePlan(sysRoot, prefix string, blocks []slov1alpha1.BlockCfg) (plan, error) {
	var pl plan
	var errs []string
	weightFrom := -1
	seen := map[cgroup.Device]int{}
	for i, b := range blocks {
		f := fmt.Sprintf("%sblocks[%d]", prefix, i)
		var bad []string
		var limit cgroup.IOLimit
		vals := []struct {
			name string
			v    *int64
			to   *uint64
		}{
			{"readBPS", b.IOCfg.ReadBPS, &limit.ReadBPS}, {"writeBPS", b.IOCfg.WriteBPS, &limit.WriteBPS},
			{"readIOPS", b.IOCfg.ReadIOPS, &limit.ReadIOPS}, {"writeIOPS", b.IOCfg.WriteIOPS, &limit.WriteIOPS},
		}
		for _, v := range vals {
			switch {
			case v.v == nil:
			case *v.v < 0:
				bad = append(bad, fmt.Sprintf("%s.ioCfg.%s is %d, below 0", f, v.name, *v.v))
			default:
				*v.to = uint64(*v.v)
			}
		}
		if w := b.IOCfg.IOWeightPercent; w != nil {
			switch {
			case *w < 1 || *w > 100:
				bad = append(bad, fmt.Sprintf("%s.ioCfg.ioWeightPercent is %d, outside [1, 100]", f, *w))
			case weightFrom >= 0 && uint64(*w) != pl.weight:
				bad = append(bad, fmt.Sprintf("%s.ioCfg.ioWeightPercent is %d but blocks[%d] sets %d: the weight is one per cgroup, for every device",
					f, *w, weightFrom, pl.weight))
			case weightFrom < 0:
				weightFrom, pl.weight = i, uint64(*w)*defaultWeight/100
				pl.weightWhy = fmt.Sprintf("%s.ioCfg.ioWeightPercent %d", f, *w)
			}
		}
		devs, err := resolve(sysRoot, b)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s (%s %q): %v", f, b.Type, b.Name, err))
		}
		for _, d := range devs {
			if j, dup := seen[d]; dup {
				bad = append(bad, fmt.Sprintf("%s (%q) and %sblocks[%d] both cap device %s", f, b.Name, prefix, j, d))
			}
			seen[d] = i
		}
		if len(bad) > 0 {
			errs = append(errs, bad...)
			continue
		}
		for _, d := range devs {
			pl.caps = append(pl.caps, devCap{block: i, dev: d, limit: limit, why: fmt.Sprintf("%s %q", f, b.Name)})
		}
	}
	if len(errs) > 0 {
		return pl, errors.New(strings.Join(errs, "; "))
	}
	return pl, nil
}

// Run implements qosmanager.RunPlugin. With the strategy on it hands the executor the caps and weight of every
// configured device for the besteffort QoS cgroup, every running best-effort pod and BE host application; every
// running pod's own annotation (AnnotationBlkIOQOS) narrows what its cgroup gets, whatever its class. It takes
// back what is no longer asked for. With the strategy off it first removes every cap and weight left on the
// best-effort cgroups, once, and releases them; pods' annotations still apply.
func (p *Plugin) Run(ctx context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	log := klog.FromContext(ctx)
	c := config(spec)
	var class plan
	var planErr error
	if c == nil {
		if err := p.restore(ctx, log, spec.HostApplications); err != nil {
			return err
		}
	} else {
		p.restored = false
		// A device that went away since Validate accepted the spec is reported; the others are still capped.
		class, planErr = p.plan(c)
	}
	want, known := p.wanted(ctx, spec.HostApplications, c != nil, class)
	if planErr != nil {
		planErr = fmt.Errorf("capping block I/O: %w", planErr)
	}
	if len(want) == 0 && len(p.held) == 0 {
		return planErr
	}
	if err := p.probe(log); err != nil {
		return err
	}
	if p.lacksLimits && p.lacksWeight {
		return nil
	}
	errs := []error{p.takeBack(ctx, log, want, known)}
	sets := p.updates(want)
	errs = append(errs, p.d.Executor.Apply(ctx, Name, sets...), planErr)
	p.remember(sets)
	return errors.Join(errs...)
}

// wanted are the plans of the cgroups the plugin writes: with the strategy on, the besteffort QoS cgroup, the
// running best-effort pods and the BE host applications get class; every running pod's annotation narrows its
// own (a bad one is warned about, once). known are the cgroups of every pod and host application on the node.
func (p *Plugin) wanted(ctx context.Context, apps []slov1alpha1.HostApplicationSpec, on bool, class plan) (map[string]plan, map[string]bool) {
	want := map[string]plan{}
	known := map[string]bool{p.qosDir: true}
	if on {
		want[p.qosDir] = class
	}
	for _, m := range p.d.States.GetAllPods() {
		dir := p.d.Layout.PodDirOf(m.KubeQoS, cgroup.PodUID(m.Pod))
		known[dir] = true
		if m.Pod.Status.Phase != corev1.PodRunning {
			continue
		}
		var own plan
		if on && m.BestEffort {
			own = class
		}
		pl, partly, err := p.podPlan(m.Pod, own)
		_, raw, _ := annotation(m.Pod)
		if err != nil {
			p.bad.Warn(ctx, m.Pod, raw, err, fmt.Sprintf("its class %s's block I/O QoS applies", m.QoS))
		} else {
			p.bad.Fine(m.Pod)
		}
		p.partly.Partly(ctx, m.Pod, raw, partly)
		if !pl.empty() {
			want[dir] = pl
		}
	}
	p.bad.Prune(func(uid types.UID) bool { return p.d.States.GetPod(uid) != nil })
	p.partly.Prune(func(uid types.UID) bool { return p.d.States.GetPod(uid) != nil })
	for _, dir := range p.hostAppDirs(apps, known) {
		if on {
			want[dir] = class
		}
	}
	return want, known
}

// updates are the caps and weight of every cgroup in want, less what this kernel lacks.
func (p *Plugin) updates(want map[string]plan) []executor.Update {
	var sets []executor.Update
	for _, dir := range slices.Sorted(maps.Keys(want)) {
		pl := want[dir]
		if !p.lacksLimits {
			for _, dc := range pl.caps {
				sets = append(sets, executor.Update{Dir: dir, Value: executor.IOLimit{Device: dc.dev, Limit: dc.limit}, Reason: dc.why})
			}
		}
		if !p.lacksWeight && pl.weight > 0 {
			sets = append(sets, executor.Update{Dir: dir, Value: executor.IOWeight(pl.weight), Reason: pl.weightWhy})
		}
	}
	return sets
}

// remember records in held what sets handed the executor.
func (p *Plugin) remember(sets []executor.Update) {
	for _, u := range sets {
		h := p.held[u.Dir]
		if h == nil {
			h = &heldDir{devices: map[cgroup.Device]bool{}}
			p.held[u.Dir] = h
		}
		switch v := u.Value.(type) {
		case executor.IOLimit:
			h.devices[v.Device] = true
		case executor.IOWeight:
			h.weight = true
		}
	}
}

// takeBack writes back what this process handed out and want no longer asks for (devices dropped from the
// configuration or a pod's annotation, the weight, pods no longer best-effort) and releases those cgroups; the
// caps still wanted there are handed over again after it (written again, harmlessly). Cgroups of pods that left
// the node (not in known) are gone, and the executor forgets them.
func (p *Plugin) takeBack(ctx context.Context, log klog.Logger, want map[string]plan, known map[string]bool) error {
	var clears []executor.Update
	var released []string
	for _, dir := range slices.Sorted(maps.Keys(p.held)) {
		h := p.held[dir]
		pl, wanted := want[dir]
		if !wanted && !known[dir] {
			delete(p.held, dir)
			continue
		}
		wantDevs := map[cgroup.Device]bool{}
		for _, dc := range pl.caps {
			wantDevs[dc.dev] = true
		}
		n := len(clears)
		for _, d := range slices.SortedFunc(maps.Keys(h.devices), compareDevices) {
			if !wantDevs[d] {
				clears = append(clears, executor.Update{Dir: dir, Value: executor.IOLimit{Device: d}, Reason: "no longer in " + field + " or the pod's annotation"})
				delete(h.devices, d)
			}
		}
		if h.weight && pl.weight == 0 {
			clears = append(clears, executor.Update{Dir: dir, Value: executor.IOWeight(defaultWeight), Reason: "no ioWeightPercent in " + field + " or the pod's annotation"})
			h.weight = false
		}
		if len(clears) > n {
			released = append(released, dir)
		}
		if len(h.devices) == 0 && !h.weight {
			delete(p.held, dir)
		}
	}
	if len(clears) == 0 {
		return nil
	}
	log.V(2).Info("taking back block I/O caps no longer configured", "writes", len(clears))
	err := p.d.Executor.Apply(ctx, Name, clears...)
	p.release(released)
	return err
}

// bestEffortDirs returns the cgroups of the running best-effort pods and of the BE host applications.
func (p *Plugin) bestEffortDirs(apps []slov1alpha1.HostApplicationSpec) []string {
	var dirs []string
	for _, m := range p.d.States.GetAllPods() {
		if m.Pod.Status.Phase == corev1.PodRunning && m.BestEffort {
			dirs = append(dirs, p.d.Layout.PodDirOf(m.KubeQoS, cgroup.PodUID(m.Pod)))
		}
	}
	return append(dirs, p.hostAppDirs(apps, map[string]bool{})...)
}

// hostAppDirs returns the cgroups of the BE host applications, and adds every host application's to known.
func (p *Plugin) hostAppDirs(apps []slov1alpha1.HostApplicationSpec, known map[string]bool) []string {
	var dirs []string
	for _, app := range apps {
		base, parent, rel := app.CgroupLocation()
		dir := p.d.Layout.HostDir(cgroup.HostBase(base), parent, rel)
		known[dir] = true
		if app.QoS == slov1alpha1.QoSBE {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// probe reads the besteffort cgroup's files once, to learn whether this kernel has them, and says so once where
// it lacks them.
func (p *Plugin) probe(log klog.Logger) error {
	if p.probed {
		return nil
	}
	_, lerr := p.d.Cgroups.IOLimits(p.qosDir)
	_, werr := p.d.Cgroups.IOWeight(p.qosDir)
	for _, err := range []error{lerr, werr} {
		if err != nil && !errors.Is(err, system.ErrUnsupported) {
			return fmt.Errorf("reading the block I/O files of the besteffort cgroup: %w", err)
		}
	}
	p.probed = true
	if p.lacksLimits = lerr != nil; p.lacksLimits {
		log.Info("this kernel lacks the block I/O throttle files (v1 blkio.throttle.*, v2 io.max); best-effort pods get no I/O caps", "reason", lerr.Error())
	}
	if p.lacksWeight = werr != nil; p.lacksWeight {
		log.Info("this kernel lacks the I/O weight file (v1 blkio.bfq.weight needs the BFQ scheduler, v2 io.weight); ioWeightPercent is not applied", "reason", werr.Error())
	}
	return nil
}

// restore removes, once, every cap and every weight other than the default from the besteffort cgroup, the
// best-effort pods' and BE host applications' cgroups and those this process capped, and stops holding them. Reading the kernel's values
// rather than trusting what this process wrote also clears what an agent before it left.
func (p *Plugin) restore(ctx context.Context, log klog.Logger, apps []slov1alpha1.HostApplicationSpec) error {
	if p.restored {
		return nil
	}
	dirs := append([]string{p.qosDir}, p.bestEffortDirs(apps)...)
	dirs = append(dirs, slices.Collect(maps.Keys(p.held))...)
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	var updates []executor.Update
	const reason = "block I/O QoS of the best-effort class is off"
	for _, dir := range dirs {
		limits, err := p.d.Cgroups.IOLimits(dir)
		if err != nil && !ignorable(err) {
			return fmt.Errorf("reading the I/O caps of %s: %w", dir, err)
		}
		for _, d := range slices.SortedFunc(maps.Keys(limits), compareDevices) {
			if limits[d] != (cgroup.IOLimit{}) {
				updates = append(updates, executor.Update{Dir: dir, Value: executor.IOLimit{Device: d}, Reason: reason})
			}
		}
		w, err := p.d.Cgroups.IOWeight(dir)
		if err != nil && !ignorable(err) {
			return fmt.Errorf("reading the I/O weight of %s: %w", dir, err)
		}
		if err == nil && w != defaultWeight {
			updates = append(updates, executor.Update{Dir: dir, Value: executor.IOWeight(defaultWeight), Reason: reason})
		}
	}
	if len(updates) > 0 {
		log.Info("block I/O QoS is off; removing the caps of best-effort pods", "writes", len(updates))
		if err := p.d.Executor.Apply(ctx, Name, updates...); err != nil {
			return err
		}
	}
	p.release(dirs)
	clear(p.held)
	p.restored = true
	return nil
}

func compareDevices(a, b cgroup.Device) int { return strings.Compare(a.String(), b.String()) }

// ignorable: a cgroup that is gone or a file this kernel lacks holds nothing to undo.
func ignorable(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, system.ErrUnsupported)
}

// release stops the executor holding this plugin's caps and weights in dirs.
func (p *Plugin) release(dirs []string) {
	if len(dirs) == 0 {
		return
	}
	in := map[string]bool{}
	for _, d := range dirs {
		in[d] = true
	}
	match := func(dir string) bool { return in[dir] }
	p.d.Executor.Release(Name, executor.ResourceIOLimit, match)
	p.d.Executor.Release(Name, executor.ResourceIOWeight, match)
}

// Asks implements qosmanager.ReportingPlugin: blkioQOS is on.
func (p *Plugin) Asks(spec *slov1alpha1.NodeSLOSpec) bool { return config(spec) != nil }

// Unsupported implements qosmanager.SteppingAside: a kernel without the throttle files nor the weight file.
func (p *Plugin) Unsupported() string {
	if p.lacksLimits && p.lacksWeight {
		return "this kernel lacks the block I/O throttle files (v1 blkio.throttle.*, v2 io.max) and the weight file (v1 blkio.bfq.weight, v2 io.weight)"
	}
	return ""
}
