package collector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/toggle"
)

// errorLogInterval is how often a collector's recurring error is logged again.
const errorLogInterval = time.Minute

// sweepInterval is how often the runner lets go of cgroup files no collector read since the last sweep.
const sweepInterval = time.Minute

// sweeper is a cgroup reader that keeps files open between reads (cgroup.FS.KeepOpen).
type sweeper interface{ Sweep() int }

// Runner runs the enabled collectors and records their duration and result. It is a Runnable. One goroutine
// coordinates the rounds: at each moment some collectors are due (all at start, then each every interval), those
// run one after another in registry order, sharing one Round. Collectors whose intervals divide each other
// therefore always meet in the same rounds, and a collector that derives from others' samples reads them from the
// same moment (Factory.Inputs). The Runner also deletes the cache series of pods that left the node as soon as the
// states informer reports it, and, when the cgroup reader keeps files open, sweeps the files no collector read for
// a minute.
type Runner struct {
	deps    Deps
	clock   clock.WithTicker
	running []*running
	synced  chan struct{} // closed after the first round

	mu    sync.Mutex // one round at a time: Start's, CollectOnce's, and PruneEndedPods waits for them
	round *Round
}

type running struct {
	name     string
	interval time.Duration
	c        Collector
	next     time.Time // when it is due next (zero: at once)

	loggedOnce map[string]bool
	lastErr    string
	lastLogged time.Time
}

// NewRunner builds the collectors of factories that selection enables, with intervals overriding their default
// intervals. selection holds "*" (every collector on by default), "name" (turn one on) and "-name" (turn one off);
// an explicit name wins over "*". Unknown names, duplicate factories, non-positive intervals, and a collector whose
// inputs are off, come after it, or do not run in each of its rounds are errors.
func NewRunner(d Deps, clk clock.WithTicker, factories []Factory, selection []string, intervals map[string]time.Duration) (*Runner, error) {
	if err := ValidateSelection(factories, selection, intervals); err != nil {
		return nil, err
	}
	r := &Runner{deps: d, clock: clk, synced: make(chan struct{}), round: newRound(d.States, d.Cache)}
	interval := func(f Factory) time.Duration {
		if i, ok := intervals[f.Name]; ok {
			return i
		}
		return f.Interval
	}
	for _, f := range factories {
		if !Enabled(selection, f) {
			continue
		}
		dd := d
		dd.Interval = interval(f)
		r.running = append(r.running, &running{name: f.Name, interval: dd.Interval, c: f.New(dd), loggedOnce: map[string]bool{}})
	}
	return r, validateInputs(factories, selection, interval)
}

// validateInputs checks that every enabled collector's inputs are enabled, come before it in the registry and run
// in every round it runs in (its interval is a multiple of theirs).
func validateInputs(factories []Factory, selection []string, interval func(Factory) time.Duration) error {
	var errs []error
	for i, f := range factories {
		if !Enabled(selection, f) {
			continue
		}
		for _, in := range f.Inputs {
			j := slices.IndexFunc(factories, func(g Factory) bool { return g.Name == in })
			switch {
			case j < 0 || j > i:
				errs = append(errs, fmt.Errorf("collector %s derives from %s, which is not registered before it", f.Name, in))
			case !Enabled(selection, factories[j]):
				errs = append(errs, fmt.Errorf("--collectors: %s derives from %s: turn %s on, or %s off", f.Name, in, in, f.Name))
			case interval(f)%interval(factories[j]) != 0:
				errs = append(errs, fmt.Errorf("--collector-intervals: %s (%s) derives from %s (%s): its interval must be a multiple of its input's, so both run in the same rounds",
					f.Name, interval(f), in, interval(factories[j])))
			}
		}
	}
	return errors.Join(errs...)
}

// Enabled reports whether selection turns the collector on.
func Enabled(selection []string, f Factory) bool {
	return toggle.EnabledByDefault(selection, f.Name, f.Default)
}

// ValidateSelection reports every unknown collector name in selection and intervals, every duplicate name in
// factories and every non-positive interval.
func ValidateSelection(factories []Factory, selection []string, intervals map[string]time.Duration) error {
	var names []string
	for _, f := range factories {
		names = append(names, f.Name)
	}
	return toggle.ValidateNamed("--collectors", "--collector-intervals", names, selection, intervals)
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
	defer wg.Wait()
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
	if len(r.running) == 0 {
		close(r.synced)
		<-ctx.Done()
		return nil
	}
	for first := true; ; first = false {
		r.mu.Lock()
		next := r.runDue(ctx, r.clock.Now())
		r.mu.Unlock()
		if first {
			close(r.synced)
		}
		t := r.clock.NewTimer(next.Sub(r.clock.Now()))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// runDue runs the round at now: every collector due by then, in registry order. It schedules each of them one
// interval after the time it was due (skipping rounds a slow host made it miss), so collectors keep meeting in the
// same rounds, and returns when the next round is due. The caller holds r.mu.
func (r *Runner) runDue(ctx context.Context, now time.Time) time.Time {
	r.round.reset(now)
	var next time.Time
	for _, c := range r.running {
		if c.next.After(now) {
			next = earliest(next, c.next)
			continue
		}
		_ = r.run(ctx, c, r.round) // recorded and logged by run
		if c.next.IsZero() {
			c.next = now
		}
		for !c.next.After(now) {
			c.next = c.next.Add(c.interval)
		}
		next = earliest(next, c.next)
	}
	return next
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// WaitForSync blocks until every collector has run once (true) or ctx ends (false).
func (r *Runner) WaitForSync(ctx context.Context) bool {
	select {
	case <-r.synced:
		return true
	case <-ctx.Done():
		return false
	}
}

// CollectOnce runs one round of every enabled collector, in registry order, at the clock's time, and returns their
// errors: one full collection cycle. It does not change when Start runs them next.
func (r *Runner) CollectOnce(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.round.reset(r.clock.Now())
	var errs []error
	for _, c := range r.running {
		if err := r.run(ctx, c, r.round); err != nil {
			errs = append(errs, fmt.Errorf("collector %s: %w", c.name, err))
		}
	}
	return errors.Join(errs...)
}

// PruneEndedPods deletes the cache series of pods the states informer no longer lists. It waits for the round in
// flight: one that listed the pods before the pod ended would otherwise write its samples after the deletion and
// bring its series back. Rounds that start later list the pods without it.
func (r *Runner) PruneEndedPods() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	alive := map[string]bool{}
	for _, m := range r.deps.States.GetAllPods() {
		alive[string(m.Pod.UID)] = true
	}
	return r.deps.Cache.Delete(func(k metriccache.Key) bool { return k.Pod != "" && !alive[k.Pod] })
}

// run runs c in round, records it and logs its error: unsupported once per message, others when the message
// changes or a minute passed. The caller holds r.mu.
func (r *Runner) run(ctx context.Context, c *running, round *Round) error {
	log := klog.FromContext(ctx).WithValues("collector", c.name)
	start := time.Now() // real elapsed time for the duration metric, whatever the injected clock says
	err := c.c.Collect(klog.NewContext(ctx, log), round)
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
