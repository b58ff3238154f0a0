package sysreconcile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"k8s.io/klog/v2"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// Name is the plugin's name in --qos-plugins, logs, the executor's audit trail and metrics.
const Name = "sysreconcile"

// DefaultInterval is how often the plugin runs. The settings change only with the NodeSLO (and MemTotal with memory
// hotplug); the executor re-asserts them against other writers every --executor-resync in between.
const DefaultInterval = 10 * time.Second

// setting is one kernel file the plugin keeps.
type setting struct {
	// file is relative to the host root.
	file string
	// field is the NodeSLO field it comes from.
	field string
	// min and max bound the field's value.
	min, max int64
	// perMemory says the field is a factor of MemTotal, in 1/10000, rather than the file's value.
	perMemory bool
	// value returns the field from the strategy.
	value func(*slov1alpha1.SystemStrategy) *int64
}

// settings are the files, in the order they are written and restored.
var settings = []setting{
	{file: "proc/sys/vm/min_free_kbytes", field: "systemStrategy.minFreeKbytesFactor", min: 1, max: 1000, perMemory: true,
		value: func(s *slov1alpha1.SystemStrategy) *int64 { return s.MinFreeKbytesFactor }},
	// The kernel takes 1..1000 (newer ones up to 3000); the API's 10..1000 fits every kernel.
	{file: "proc/sys/vm/watermark_scale_factor", field: "systemStrategy.watermarkScaleFactor", min: 10, max: 1000,
		value: func(s *slov1alpha1.SystemStrategy) *int64 { return s.WatermarkScaleFactor }},
	// Anolis OS kernels only.
	{file: "sys/kernel/mm/memcg_reaper/reap_background", field: "systemStrategy.memcgReapBackGround", min: 0, max: 1,
		value: func(s *slov1alpha1.SystemStrategy) *int64 { return s.MemcgReapBackGround }},
}

// Plugin keeps the node-wide kernel settings of the NodeSLO's systemStrategy, and restores the values it replaced
// when the strategy is turned off.
type Plugin struct {
	d qosmanager.Deps
	// rec is the state file's content once read; nil until then, and while it cannot be read.
	rec *record
	// lacking are the files this kernel lacks, said once each.
	lacking map[string]bool
}

var (
	_ qosmanager.RunPlugin        = &Plugin{}
	_ qosmanager.ValidatingPlugin = &Plugin{}
)

// New returns the plugin. It needs Deps.Executor, Proc, Host and StateDir.
func New(d qosmanager.Deps) (qosmanager.RunPlugin, error) {
	if err := d.Need(Name, "Executor", "Proc", "Host", "StateDir"); err != nil {
		return nil, err
	}
	return &Plugin{d: d, lacking: map[string]bool{}}, nil
}

// Name implements qosmanager.Plugin.
func (p *Plugin) Name() string { return Name }

// Validate implements qosmanager.ValidatingPlugin: with the strategy on, minFreeKbytesFactor must be in [1, 1000],
// watermarkScaleFactor in [10, 1000] and memcgReapBackGround 0 or 1. A strategy that is off is accepted whatever
// its values: it only restores what was recorded.
func (p *Plugin) Validate(spec *slov1alpha1.NodeSLOSpec) error {
	s := spec.SystemStrategy
	if !enabled(s) {
		return nil
	}
	var errs []error
	for _, st := range settings {
		switch v := st.value(s); {
		case v == nil:
			errs = append(errs, fmt.Errorf("%s is unset", st.field))
		case *v < st.min || *v > st.max:
			errs = append(errs, fmt.Errorf("%s is %d, outside [%d, %d]", st.field, *v, st.min, st.max))
		}
	}
	return errors.Join(errs...)
}

func enabled(s *slov1alpha1.SystemStrategy) bool { return s != nil && s.Enable != nil && *s.Enable }

// Run implements qosmanager.RunPlugin. With the strategy on it records each file's value before it first changes
// it, then asks the executor for the strategy's value; a file that already holds it is left alone (and nothing is
// recorded). With the strategy off it writes every recorded value back.
func (p *Plugin) Run(ctx context.Context, spec *slov1alpha1.NodeSLOSpec) error {
	if p.rec == nil {
		rec, err := loadRecord(p.d.StateDir)
		if err != nil {
			return err
		}
		p.rec = rec
	}
	s := spec.SystemStrategy
	if !enabled(s) {
		return p.restore(ctx)
	}
	var errs []error
	for _, st := range settings {
		value, reason, err := p.want(st, s)
		if err == nil {
			err = p.enforce(ctx, st, value, reason)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// want is the value st's file must hold under s, and why.
func (p *Plugin) want(st setting, s *slov1alpha1.SystemStrategy) (value, reason string, err error) {
	v := *st.value(s) // Validate accepted s
	if !st.perMemory {
		return strconv.FormatInt(v, 10), fmt.Sprintf("%s %d", st.field, v), nil
	}
	m, err := p.d.Proc.MemInfo()
	if err != nil {
		return "", "", fmt.Errorf("computing vm.min_free_kbytes: %w", err)
	}
	total := m.Total / 1024
	kb := total * uint64(v) / 10000
	if kb == 0 {
		return "", "", fmt.Errorf("computing vm.min_free_kbytes: MemTotal %d kB x %s %d / 10000 is 0", total, st.field, v)
	}
	return strconv.FormatUint(kb, 10), fmt.Sprintf("MemTotal %d kB x %s %d / 10000", total, st.field, v), nil
}

// enforce makes st's file hold value.
func (p *Plugin) enforce(ctx context.Context, st setting, value, reason string) error {
	if p.lacking[st.file] {
		return nil
	}
	if _, recorded := p.rec.Originals[st.file]; !recorded {
		cur, err := p.d.Host.ReadFile(st.file)
		switch {
		case errors.Is(err, system.ErrUnsupported) || errors.Is(err, fs.ErrNotExist):
			p.lacking[st.file] = true
			klog.FromContext(ctx).Info("this kernel lacks the file; the setting is not applied", "file", st.file, "field", st.field, "reason", err.Error())
			return nil
		case err != nil:
			return fmt.Errorf("reading %s before changing it: %w", st.file, err)
		case cur == value:
			return nil
		}
		p.rec.Originals[st.file] = cur
		if err := saveRecord(p.d.StateDir, p.rec); err != nil {
			// Not written: a value changed without its original on disk would be lost at the next restart.
			delete(p.rec.Originals, st.file)
			return fmt.Errorf("leaving %s at %s: %w", st.file, cur, err)
		}
	}
	return p.d.Executor.Apply(ctx, Name, executor.Update{
		Dir: st.file, Value: executor.HostFile{Kind: executor.ResourceSysctl, Content: value}, Reason: reason,
	})
}

// restore writes every recorded value back, in settings' order, and forgets those written (or whose file is gone);
// the others are tried again at the next run.
func (p *Plugin) restore(ctx context.Context) error {
	if len(p.rec.Originals) == 0 {
		return nil
	}
	var errs []error
	for _, st := range settings {
		orig, ok := p.rec.Originals[st.file]
		if !ok {
			continue
		}
		// Released first, so that the executor's resync cannot put the agent's value back after the restore.
		p.d.Executor.Release(Name, executor.ResourceSysctl, func(dir string) bool { return dir == st.file })
		err := p.d.Executor.Do(ctx, Name, executor.Update{
			Dir: st.file, Value: executor.HostFile{Kind: executor.ResourceSysctl, Content: orig},
			Reason: "systemStrategy off: the value before gleaner changed it",
		})
		if err != nil && !errors.Is(err, system.ErrUnsupported) && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("restoring %s to %s: %w", st.file, orig, err))
			continue
		}
		delete(p.rec.Originals, st.file)
	}
	if err := saveRecord(p.d.StateDir, p.rec); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Asks implements qosmanager.ReportingPlugin: systemStrategy is enabled.
func (p *Plugin) Asks(spec *slov1alpha1.NodeSLOSpec) bool { return enabled(spec.SystemStrategy) }
