package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// Update asks for one value in one cgroup.
type Update struct {
	// Dir is the cgroup, relative to the hierarchy root, as cgroup.Layout gives it.
	Dir string
	// Value is what the file must hold.
	Value Value
	// Reason says why, with the numbers that led to the value; it goes into the audit trail.
	Reason string
}

// Write results, the values of the result label of gleaner_agent_executor_writes_total and of Record.Result.
const (
	// ResultWritten: the file was written.
	ResultWritten = "written"
	// ResultError: the kernel refused the value or the file could not be written; the resync tries again.
	ResultError = "error"
	// ResultUnsupported: this kernel or cgroup version lacks the file; the executor stops asking for it.
	ResultUnsupported = "unsupported"
	// ResultGone: the cgroup no longer exists (its pod ended); the executor forgets it.
	ResultGone = "gone"
)

// Options configure an Executor.
type Options struct {
	// Resync is how often every value the executor holds is written again, undoing changes made behind its back.
	Resync time.Duration
	// AuditSize is how many records the audit trail keeps.
	AuditSize int
	// Host writes the kernel files outside cgroups (sysctls, resctrl); nil refuses HostFile values as unsupported.
	Host HostWriter
}

// DefaultOptions resync every minute and keep the last 1,024 writes.
func DefaultOptions() Options { return Options{Resync: time.Minute, AuditSize: 1024} }

// Executor is the one place the agent writes cgroup values. It remembers what each owner asked for, skips writes
// of a value the file already holds (as far as it knows: it wrote it), writes a batch in the order the kernel's
// hierarchy rules need, writes everything again every Options.Resync, and records each write (an audit trail in
// memory, a log line at verbosity 4, Prometheus counters). One failed file never stops the rest of a batch.
//
// It is a Runnable: Start runs the resync. Apply may be called before Start and from any goroutine.
type Executor struct {
	targets targets
	clock   clock.WithTicker
	opts    Options

	writes *prometheus.CounterVec

	mu          sync.Mutex
	held        map[key]*held
	unsupported map[key]bool // said once: per Resource for cgroup files (see unsupportedKey), per file for host files
	audit       ring
}

type key struct {
	dir      string
	resource Resource
	instance string // tells apart values of one resource in one cgroup: the devices of IOLimit
}

// keyOf is the key of value v in dir.
func keyOf(dir string, v Value) key {
	k := key{dir: dir, resource: v.Resource()}
	if i, ok := v.(interface{ instance() string }); ok {
		k.instance = i.instance()
	}
	return k
}

// unsupportedKey is what a file this kernel lacks is remembered by: a cgroup file is missing from every cgroup
// alike, so its kind; a host file (a sysctl) is missing on its own.
func unsupportedKey(k key, v Value) key {
	if _, ok := v.(interface{ host() }); ok {
		return k
	}
	return key{resource: k.resource}
}

// held is a value the executor keeps in force.
type held struct {
	value   Value
	owner   string
	reason  string
	written bool // the last write succeeded, so the file holds value unless someone else changed it
}

// New returns an executor writing through rw; reg receives its counters.
func New(rw cgroup.ReadWriter, clk clock.WithTicker, reg prometheus.Registerer, opts Options) (*Executor, error) {
	if opts.Resync <= 0 {
		return nil, fmt.Errorf("executor resync must be positive, got %s", opts.Resync)
	}
	if opts.AuditSize < 1 {
		return nil, fmt.Errorf("executor audit size must be at least 1, got %d", opts.AuditSize)
	}
	e := &Executor{
		targets: targets{cgroup: rw, host: opts.Host}, clock: clk, opts: opts,
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gleaner_agent_executor_writes_total",
			Help: "Cgroup writes of the agent's resource executor, by resource (cgroup v1 file name) and result (written, error, unsupported, gone).",
		}, []string{"resource", "result"}),
		held:        map[key]*held{},
		unsupported: map[key]bool{},
		audit:       ring{records: make([]Record, opts.AuditSize)},
	}
	if err := reg.Register(e.writes); err != nil {
		return nil, fmt.Errorf("registering the executor's metrics: %w", err)
	}
	return e, nil
}

// Name is the executor's name as a Runnable.
func (e *Executor) Name() string { return "executor" }

// Start writes every held value again every Options.Resync until ctx ends. It always returns nil.
func (e *Executor) Start(ctx context.Context) error {
	t := e.clock.NewTicker(e.opts.Resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			_ = e.Resync(ctx) // failures are counted, audited and logged
		}
	}
}

// Apply makes the files hold the updates' values, on behalf of owner (a plugin's or module's name), and keeps them
// in force until the cgroup goes away or an owner asks for another value. A value the executor already wrote and
// still holds is not written again. The batch is ordered for the kernel: values that confine a cgroup less are
// written parents first (a cgroup's CPU burst after its quota), values that confine it more children first, after
// all the loosening ones; a CPU set that neither contains nor is contained in the current one is widened to the
// union first and narrowed at the end. It returns the errors of the writes that failed, joined; the others are
// written.
func (e *Executor) Apply(ctx context.Context, owner string, updates ...Update) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var steps []step
	for _, u := range updates {
		k := keyOf(u.Dir, u.Value)
		if h, ok := e.held[k]; ok && h.written && h.value.String() == u.Value.String() {
			h.owner, h.reason = owner, u.Reason
			continue
		}
		if e.unsupported[unsupportedKey(k, u.Value)] {
			continue
		}
		e.held[k] = &held{value: u.Value, owner: owner, reason: u.Reason}
		steps = append(steps, e.plan(k, u.Value)...)
	}
	return e.run(ctx, steps)
}

// Resync writes every held value again, in the kernel's order, and returns the errors joined.
func (e *Executor) Resync(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var steps []step
	for k, h := range e.held {
		steps = append(steps, e.plan(k, h.value)...)
	}
	return e.run(ctx, steps)
}

// Forget stops keeping the values of cgroups for which match is true (a pod that left the node), without writing
// anything, and returns how many it dropped.
func (e *Executor) Forget(match func(dir string) bool) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for k := range e.held {
		if match(k.dir) {
			delete(e.held, k)
			n++
		}
	}
	return n
}

// step is one write of a batch: phase 0 loosens (parents first), phase 1 tightens (children first).
type step struct {
	k     key
	value Value
	phase int
	depth int
	final bool // the value held, as opposed to an intermediate one (the union of two CPU sets)
}

// plan decides in which phase v is written, from the value the file holds now; e.mu is held.
func (e *Executor) plan(k key, v Value) []step {
	depth := strings.Count(strings.Trim(k.dir, "/"), "/")
	old, err := v.read(e.targets, k.dir)
	if err != nil {
		// Unknown: write it among the loosening ones; the write itself will say what is wrong.
		return []step{{k: k, value: v, depth: depth, final: true}}
	}
	if s, ok := v.(CPUSet); ok {
		o := old.(CPUSet)
		if !s.IsSubsetOf(o.CPUSet) && !o.IsSubsetOf(s.CPUSet) {
			return []step{
				{k: k, value: CPUSet{s.Union(o.CPUSet)}, phase: 0, depth: depth},
				{k: k, value: v, phase: 1, depth: depth, final: true},
			}
		}
	}
	if v.relax(old) < 0 {
		return []step{{k: k, value: v, phase: 1, depth: depth, final: true}}
	}
	return []step{{k: k, value: v, phase: 0, depth: depth, final: true}}
}

// run writes the steps in order; e.mu is held.
func (e *Executor) run(ctx context.Context, steps []step) error {
	slices.SortStableFunc(steps, func(a, b step) int {
		if a.phase != b.phase {
			return cmp.Compare(a.phase, b.phase)
		}
		if a.phase == 0 {
			// Loosening: parents first; in one cgroup the quota before the burst, which the kernel takes only up
			// to the quota (a shrinking burst goes first anyway: it never confines the quota).
			return cmp.Or(cmp.Compare(a.depth, b.depth), cmp.Compare(isBurst(a.value), isBurst(b.value)))
		}
		return cmp.Compare(b.depth, a.depth) // tightening: children first
	})
	log := klog.FromContext(ctx).WithName("executor")
	var errs []error
	failed := map[key]bool{} // a widening step failed: its final value would fail too
	for _, s := range steps {
		h := e.held[s.k]
		if h == nil || failed[s.k] {
			continue // dropped by an earlier step of this batch (the cgroup is gone), or already reported
		}
		err := s.value.write(e.targets, s.k.dir)
		result := ResultWritten
		switch {
		case err == nil:
		case errors.Is(err, fs.ErrNotExist):
			result = ResultGone
			delete(e.held, s.k)
		case errors.Is(err, system.ErrUnsupported):
			result = ResultUnsupported
			delete(e.held, s.k)
			if uk := unsupportedKey(s.k, s.value); !e.unsupported[uk] {
				e.unsupported[uk] = true
				log.Info("this kernel lacks a file; values of this kind are not written", "resource", s.k.resource, "reason", err.Error())
			}
		default:
			result = ResultError
			failed[s.k] = true
			via := ""
			if !s.final {
				via = fmt.Sprintf(", widening to %s first", s.value)
			}
			errs = append(errs, fmt.Errorf("writing %s %s of %s (%s%s): %w", s.k.resource, h.value, s.k.dir, h.owner, via, err))
		}
		h.written = s.final && result == ResultWritten
		e.writes.WithLabelValues(string(s.k.resource), result).Inc()
		r := Record{Time: e.clock.Now(), Owner: h.owner, Dir: s.k.dir, Resource: s.k.resource, Value: s.value.String(), Reason: h.reason, Result: result}
		if err != nil {
			r.Error = err.Error()
		}
		e.audit.add(r)
		e.log(ctx, r)
	}
	return errors.Join(errs...)
}

// isBurst is 1 for a CPU burst, which run writes after the quotas it depends on, 0 for any other value.
func isBurst(v Value) int {
	if _, ok := v.(CPUBurst); ok {
		return 1
	}
	return 0
}

// log writes r at verbosity 4.
func (e *Executor) log(ctx context.Context, r Record) {
	klog.FromContext(ctx).WithName("executor").V(4).Info("write", "owner", r.Owner, "dir", r.Dir, "resource", r.Resource,
		"value", r.Value, "reason", r.Reason, "result", r.Result, "error", r.Error)
}

// ResourceKill is the audit trail's and the metric's name for killing a cgroup's processes.
const ResourceKill Resource = "cgroup.kill"

// Kill kills every process in the cgroup dir and its children (cgroup.FS.Kill: cgroup.kill on v2, SIGKILL to every
// task on v1): the evictor's last resort while the API server cannot be reached. It is an action, not a value to
// hold, so nothing is kept or resynced; it goes through the executor so that it is recorded like every other write.
func (e *Executor) Kill(dir string) error {
	k, ok := e.targets.cgroup.(interface{ Kill(dir string) error })
	if !ok {
		return fmt.Errorf("killing the processes of %s: the executor's cgroup writer cannot kill: %w", dir, system.ErrUnsupported)
	}
	err := k.Kill(dir)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.record(context.Background(), "evictor", dir, ResourceKill, "1", "local last resort", err)
	return err
}
