package qosmanager

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/toggle"
)

// errorLogInterval is how often a plugin's recurring error is logged again.
const errorLogInterval = time.Minute

// Manager runs the enabled QoS plugins, each on its own interval. It is a Runnable.
type Manager struct {
	deps    Deps
	clock   clock.WithTicker
	running []*running
}

type running struct {
	name      string
	interval  time.Duration
	p         RunPlugin
	condition string // Factory.Condition

	mu         sync.Mutex // one run at a time (Start and RunOnce may overlap in tests)
	seen       *slov1alpha1.NodeSLO
	spec       *slov1alpha1.NodeSLOSpec // the last spec accepted, defaults filled in
	refused    string                   // the last refusal reported
	lastErr    string
	lastLogged time.Time

	// What the NodeSLO's status says of the plugin, guarded by cond.
	cond       sync.Mutex
	ran        bool
	err        error  // of the last Run
	generation int64  // of the NodeSLO the last Run enforced (0 for none)
	asks       bool   // ReportingPlugin.Asks of the spec of the last Run
	aside      string // SteppingAside.Unsupported after the last Run
	refusal    string // r.refused as of the last Run
}

// NewManager builds the plugins of factories that selection enables ("*" for those on by default, "name", "-name"),
// with intervals overriding their default intervals.
func NewManager(d Deps, clk clock.WithTicker, factories []Factory, selection []string, intervals map[string]time.Duration) (*Manager, error) {
	var names []string
	for _, f := range factories {
		names = append(names, f.Name)
	}
	if err := toggle.ValidateNamed("--qos-plugins", "--qos-plugin-intervals", names, selection, intervals); err != nil {
		return nil, err
	}
	m := &Manager{deps: d, clock: clk}
	var errs []error
	for _, f := range factories {
		if !toggle.EnabledByDefault(selection, f.Name, f.Default) {
			continue
		}
		dd := d
		dd.Interval = f.Interval
		if i, ok := intervals[f.Name]; ok {
			dd.Interval = i
		}
		p, err := f.New(dd)
		if err != nil {
			errs = append(errs, fmt.Errorf("QoS plugin %s: %w", f.Name, err))
			continue
		}
		if c, ok := p.(prometheus.Collector); ok && d.Registerer != nil {
			if err := d.Registerer.Register(c); err != nil {
				errs = append(errs, fmt.Errorf("registering the metrics of QoS plugin %s: %w", f.Name, err))
				continue
			}
		}
		m.running = append(m.running, &running{name: f.Name, interval: dd.Interval, p: p, condition: f.Condition})
	}
	return m, errors.Join(errs...)
}

// Names lists the enabled plugins in registry order.
func (m *Manager) Names() []string {
	var n []string
	for _, r := range m.running {
		n = append(n, r.name)
	}
	return n
}

// Name is the manager's name as a Runnable.
func (m *Manager) Name() string { return "qos-manager" }

// Start runs every plugin at once and then on its interval until ctx ends. It always returns nil.
func (m *Manager) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, r := range m.running {
		wg.Go(func() {
			t := m.clock.NewTicker(r.interval)
			defer t.Stop()
			for {
				_ = m.run(ctx, r) // logged by run
				select {
				case <-ctx.Done():
					return
				case <-t.C():
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// RunOnce runs every enabled plugin once, in registry order, and returns their errors.
func (m *Manager) RunOnce(ctx context.Context) error {
	var errs []error
	for _, r := range m.running {
		if err := m.run(ctx, r); err != nil {
			errs = append(errs, fmt.Errorf("QoS plugin %s: %w", r.name, err))
		}
	}
	return errors.Join(errs...)
}

// run runs r once with the spec it accepts and logs its error when the message changes or a minute passed.
func (m *Manager) run(ctx context.Context, r *running) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	log := klog.FromContext(ctx).WithValues("plugin", r.name)
	spec := m.spec(r, log)
	err := r.p.Run(klog.NewContext(ctx, log), spec)
	r.record(spec, err)
	if err == nil {
		r.lastErr = ""
		return nil
	}
	now := m.clock.Now()
	if msg := err.Error(); msg != r.lastErr || now.Sub(r.lastLogged) >= errorLogInterval {
		r.lastErr, r.lastLogged = msg, now
		log.Error(err, "QoS plugin failed")
	}
	return err
}

// spec is the NodeSLO spec r enforces: the node's, defaults filled in, when r accepts it, else the last one it
// accepted. A NodeSLO already seen is not resolved again.
func (m *Manager) spec(r *running, log klog.Logger) *slov1alpha1.NodeSLOSpec {
	slo := m.deps.States.GetNodeSLO()
	if r.spec != nil && slo == r.seen {
		return r.spec
	}
	r.seen = slo
	var spec *slov1alpha1.NodeSLOSpec
	if slo != nil {
		spec = &slo.Spec
	}
	spec = spec.WithDefaults()
	v, ok := r.p.(ValidatingPlugin)
	if !ok {
		r.spec = spec
		return spec
	}
	err := v.Validate(spec)
	if err == nil {
		r.spec, r.refused = spec, ""
		return spec
	}
	if r.spec == nil {
		// Nothing accepted yet: the defaults alone are the last good values.
		r.spec = (*slov1alpha1.NodeSLOSpec)(nil).WithDefaults()
	}
	if msg := err.Error(); msg != r.refused {
		r.refused = msg
		log.Error(err, "NodeSLO refused; enforcing the last accepted one")
		if slo != nil && m.deps.Events != nil {
			m.deps.Events.Eventf(slo, corev1.EventTypeWarning, "NodeSLORefused", "QoS plugin %s refused this NodeSLO and keeps enforcing the last one it accepted: %v", r.name, err)
		}
	}
	return r.spec
}
