package collector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// errorLogInterval is how often a collector's recurring error is logged again.
const errorLogInterval = time.Minute

// sweepInterval is how often the runner lets go of cgroup files no collector read since the last sweep.
const sweepInterval = time.Minute

// sweeper is a cgroup reader that keeps files open between reads (cgroup.FS.KeepOpen).
type sweeper interface{ Sweep() int }

// Runner runs the enabled collectors, each on its own interval, and records their duration and result. It is a
// Runnable. It also deletes the cache series of pods that left the node as soon as the states informer reports it,
// and, when the cgroup reader keeps files open, sweeps the files no collector read for a minute.
type Runner struct {
	deps    Deps
	clock   clock.WithTicker
	running []*running
	ran     sync.WaitGroup // every collector's first round
}

type running struct {
	name     string
	interval time.Duration
	c        Collector

	mu         sync.Mutex // one round at a time (Start and CollectOnce may overlap in tests)
	loggedOnce map[string]bool
	lastErr    string
	lastLogged time.Time
}

// NewRunner builds the collectors of factories that selection enables, with intervals overriding their default
// intervals. selection holds "*" (every collector on by default), "name" (turn one on) and "-name" (turn one off);
// an explicit name wins over "*". Unknown names, duplicate factories and non-positive intervals are errors.
func NewRunner(d Deps, clk clock.WithTicker, factories []Factory, selection []string, intervals map[string]time.Duration) (*Runner, error) {
	if err := ValidateSelection(factories, selection, intervals); err != nil {
		return nil, err
	}
	r := &Runner{deps: d, clock: clk}
	for _, f := range factories {
		if !Enabled(selection, f) {
			continue
		}
		interval := f.Interval
		if i, ok := intervals[f.Name]; ok {
			interval = i
		}
		dd := d
		dd.Interval = interval
		r.running = append(r.running, &running{name: f.Name, interval: interval, c: f.New(dd), loggedOnce: map[string]bool{}})
	}
	// Counted here, not in Start, so WaitForSync cannot see zero before Start has begun.
	r.ran.Add(len(r.running))
	return r, nil
}

// Enabled reports whether selection turns the collector on.
func Enabled(selection []string, f Factory) bool {
	on := false
	for _, s := range selection {
		switch s {
		case f.Name:
			return true
		case "-" + f.Name:
			return false
		case "*":
			on = f.Default
		}
	}
	return on
}

// ValidateSelection reports every unknown collector name in selection and intervals, every duplicate name in
// factories and every non-positive interval.
func ValidateSelection(factories []Factory, selection []string, intervals map[string]time.Duration) error {
	var errs []error
	var names []string
	for _, f := range factories {
		if slices.Contains(names, f.Name) {
			errs = append(errs, fmt.Errorf("collector %q is registered twice", f.Name))
		}
		names = append(names, f.Name)
	}
	known := strings.Join(names, ", ")
	for _, s := range selection {
		if n := strings.TrimPrefix(s, "-"); n != "*" && !slices.Contains(names, n) {
			errs = append(errs, fmt.Errorf("--collectors: unknown collector %q (known: %s)", n, known))
		}
	}
	for n, i := range intervals {
		if !slices.Contains(names, n) {
			errs = append(errs, fmt.Errorf("--collector-intervals: unknown collector %q (known: %s)", n, known))
		}
		if i <= 0 {
			errs = append(errs, fmt.Errorf("--collector-intervals: %s must be positive, got %s", n, i))
		}
	}
	return errors.Join(errs...)
}

// Names lists the enabled collectors in run order.
func (r *Runner) Names() []string {
	var n []string
	for _, c := range r.running {
		n = append(n, c.name)
	}
	return n
}

// Name is the runner's name as a Runnable.
func (r *Runner) Name() string { return "collectors" }

// Start runs every collector at once and then on its interval until ctx ends. It always returns nil. Call it once.
func (r *Runner) Start(ctx context.Context) error {
	r.deps.States.RegisterCallback(statesinformer.KindPods, "collector-prune-ended-pods", func(statesinformer.Kind) { r.PruneEndedPods() })
	var wg sync.WaitGroup
	if s, ok := r.deps.Cgroups.(sweeper); ok {
		wg.Go(func() {
			t := r.clock.NewTicker(sweepInterval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C():
					if n := s.Sweep(); n > 0 {
						klog.FromContext(ctx).V(4).Info("closed cgroup files no longer read", "count", n)
					}
				}
			}
		})
	}
	for _, c := range r.running {
		wg.Go(func() {
			t := r.clock.NewTicker(c.interval)
			defer t.Stop()
			_ = r.run(ctx, c) // recorded and logged by run
			r.ran.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C():
					_ = r.run(ctx, c)
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// WaitForSync blocks until every collector has run once (true) or ctx ends (false).
func (r *Runner) WaitForSync(ctx context.Context) bool {
	done := make(chan struct{})
	go func() { r.ran.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// CollectOnce runs every enabled collector once, in order, and returns their errors: one full collection cycle.
func (r *Runner) CollectOnce(ctx context.Context) error {
	var errs []error
	for _, c := range r.running {
		if err := r.run(ctx, c); err != nil {
			errs = append(errs, fmt.Errorf("collector %s: %w", c.name, err))
		}
	}
	return errors.Join(errs...)
}

// PruneEndedPods deletes the cache series of pods the states informer no longer lists. It waits for the rounds in
// flight: one that read the pod list before the pod ended would otherwise write its samples after the deletion and
// bring its series back. Rounds that start later read the list without the pod.
func (r *Runner) PruneEndedPods() int {
	for _, c := range r.running {
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	alive := map[string]bool{}
	for _, m := range r.deps.States.GetAllPods() {
		alive[string(m.Pod.UID)] = true
	}
	return r.deps.Cache.Delete(func(k metriccache.Key) bool { return k.Pod != "" && !alive[k.Pod] })
}

// run runs one round of c, records it and logs its error: unsupported once per message, others when the message
// changes or a minute passed.
func (r *Runner) run(ctx context.Context, c *running) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	log := klog.FromContext(ctx).WithValues("collector", c.name)
	start := time.Now() // real elapsed time for the duration metric, whatever the injected clock says
	err := c.c.Collect(klog.NewContext(ctx, log))
	r.deps.Metrics.CollectorDuration.WithLabelValues(c.name).Observe(time.Since(start).Seconds())
	result := metrics.ResultSuccess
	switch {
	case err == nil:
		c.lastErr = ""
	case onlyUnsupported(err):
		result = metrics.ResultUnsupported
		if !c.loggedOnce[err.Error()] {
			c.loggedOnce[err.Error()] = true
			log.Info("not supported on this host; stepping aside for this measurement", "reason", err.Error())
		}
	default:
		result = metrics.ResultError
		now := r.clock.Now()
		if msg := err.Error(); msg != c.lastErr || now.Sub(c.lastLogged) >= errorLogInterval {
			c.lastErr, c.lastLogged = msg, now
			log.Error(err, "collection failed")
		}
	}
	r.deps.Metrics.CollectorRuns.WithLabelValues(c.name, result).Inc()
	return err
}

// onlyUnsupported reports whether err, and every error joined in it, wraps system.ErrUnsupported: a round that
// also failed for another reason is an error.
func onlyUnsupported(err error) bool {
	var j interface{ Unwrap() []error }
	if errors.As(err, &j) {
		for _, e := range j.Unwrap() {
			if !onlyUnsupported(e) {
				return false
			}
		}
		return len(j.Unwrap()) > 0
	}
	return errors.Is(err, system.ErrUnsupported)
}
