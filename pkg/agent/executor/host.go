package executor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// The resources outside the cgroup hierarchies, written through Options.Host.
const (
	// ResourceSysctl is a file under /proc/sys.
	ResourceSysctl Resource = "sysctl"
	// ResourceResctrlSchemata is a resctrl group's schemata.
	ResourceResctrlSchemata Resource = "resctrl.schemata"
	// ResourceResctrlTasks is a resctrl group's tasks file, written one task at a time with Do.
	ResourceResctrlTasks Resource = "resctrl.tasks"
	// ResourceDir is a directory of the host made or removed with MakeDir and RemoveDir (a resctrl group).
	ResourceDir Resource = "dir"
)

// HostWriter reads and writes the host's files outside cgroups (*system.HostFS implements it). Paths are relative
// to the host root.
type HostWriter interface {
	ReadFile(rel string) (string, error)
	WriteFile(rel, content string) error
	Mkdir(rel string) error
	Remove(rel string) error
}

// targets are what values are written to: the cgroup hierarchies and the host's other kernel files.
type targets struct {
	cgroup cgroup.ReadWriter
	host   HostWriter
}

// errNoHost is returned for host values when the executor was built without Options.Host.
var errNoHost = fmt.Errorf("the executor has no host writer: %w", system.ErrUnsupported)

// HostFile is the content of a kernel file outside the cgroup hierarchies. The Dir of its Update is the file's path
// relative to the host root ("proc/sys/vm/min_free_kbytes", "sys/fs/resctrl/gleaner-BE/schemata"); Kind names it
// in the audit trail and metrics. A missing file is said once per file (unlike cgroup files, whose absence is said
// once per kind): one kernel may have vm.watermark_scale_factor and lack another sysctl.
type HostFile struct {
	// Kind is ResourceSysctl or ResourceResctrlSchemata (or another host resource).
	Kind Resource
	// Content is written as is, in one write.
	Content string
}

// Resource implements Value.
func (f HostFile) Resource() Resource { return f.Kind }

func (f HostFile) String() string { return f.Content }

func (f HostFile) write(t targets, path string) error {
	if t.host == nil {
		return errNoHost
	}
	return t.host.WriteFile(path, f.Content)
}

func (f HostFile) read(t targets, path string) (Value, error) {
	if t.host == nil {
		return nil, errNoHost
	}
	s, err := t.host.ReadFile(path)
	return HostFile{Kind: f.Kind, Content: s}, err
}

// relax: host files have no hierarchy.
func (HostFile) relax(Value) int { return 0 }

// host marks a value whose absence is said per file.
func (HostFile) host() {}

// Do writes u once on behalf of owner without holding it: an action, such as moving a task into a resctrl group,
// not a value to keep in force. It is recorded like every other write.
func (e *Executor) Do(ctx context.Context, owner string, u Update) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	err := u.Value.write(e.targets, u.Dir)
	e.record(ctx, owner, u.Dir, u.Value.Resource(), u.Value.String(), u.Reason, err)
	return err
}

// DoAll writes each update once, as Do does, but records them as one audit record (the first update's path and
// resource, how many were written, gone or failed, and reason): for actions that come many at a time, such as
// moving a pod's threads into a resctrl group, which would otherwise push every other record out of the audit
// trail. The counters count every write. It returns each update's error, in order (nil for those written).
func (e *Executor) DoAll(ctx context.Context, owner, reason string, updates ...Update) []error {
	if len(updates) == 0 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	errs := make([]error, len(updates))
	counts := map[string]int{}
	var firstErr error
	for i, u := range updates {
		errs[i] = u.Value.write(e.targets, u.Dir)
		result := resultOf(errs[i])
		counts[result]++
		e.writes.WithLabelValues(string(u.Value.Resource()), result).Inc()
		if firstErr == nil && result == ResultError {
			firstErr = errs[i]
		}
	}
	var summary []string
	for _, r := range []string{ResultWritten, ResultGone, ResultUnsupported, ResultError} {
		if counts[r] > 0 {
			summary = append(summary, fmt.Sprintf("%d %s", counts[r], r))
		}
	}
	result := ResultWritten
	if firstErr != nil {
		result = ResultError
	}
	rec := Record{Time: e.clock.Now(), Owner: owner, Dir: updates[0].Dir, Resource: updates[0].Value.Resource(),
		Value: strings.Join(summary, ", "), Reason: reason, Result: result}
	if firstErr != nil {
		rec.Error = firstErr.Error()
	}
	e.audit.add(rec)
	e.log(ctx, rec)
	return errs
}

// MakeDir creates the host directory rel (relative to the host root, as HostFile paths) on behalf of owner.
func (e *Executor) MakeDir(ctx context.Context, owner, rel, reason string) error {
	return e.dir(ctx, owner, rel, reason, "create")
}

// RemoveDir removes the host directory rel on behalf of owner, and stops holding every value under it.
func (e *Executor) RemoveDir(ctx context.Context, owner, rel, reason string) error {
	return e.dir(ctx, owner, rel, reason, "remove")
}

func (e *Executor) dir(ctx context.Context, owner, rel, reason, op string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	err := errNoHost
	if e.targets.host != nil {
		if op == "create" {
			err = e.targets.host.Mkdir(rel)
		} else {
			err = e.targets.host.Remove(rel)
			prefix := rel + "/"
			for k := range e.held {
				if err == nil && (k.dir == rel || strings.HasPrefix(k.dir, prefix)) {
					delete(e.held, k)
				}
			}
		}
	}
	e.record(ctx, owner, rel, ResourceDir, op, reason, err)
	return err
}

// Invalidate makes the executor write resource r of dir again at the next Apply that asks for it, as if it had
// never written it: for an owner that read the file and found someone else changed it (systemd resetting cpu.idle)
// and cannot wait for the resync.
func (e *Executor) Invalidate(dir string, r Resource) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, h := range e.held {
		if k.dir == dir && k.resource == r {
			h.written = false
		}
	}
}

// Release stops holding owner's values of resource r in the cgroups (or host paths) for which match is true,
// without writing anything, and returns how many it dropped. A plugin that restored the kernel's value calls it so
// that the executor does not keep asserting that value against other writers (the kubelet, an operator).
func (e *Executor) Release(owner string, r Resource, match func(dir string) bool) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for k, h := range e.held {
		if k.resource == r && h.owner == owner && match(k.dir) {
			delete(e.held, k)
			n++
		}
	}
	return n
}

// record counts and audits one write that is not a held value's; e.mu is held.
func (e *Executor) record(ctx context.Context, owner, dir string, r Resource, value, reason string, err error) {
	result := resultOf(err)
	e.writes.WithLabelValues(string(r), result).Inc()
	rec := Record{Time: e.clock.Now(), Owner: owner, Dir: dir, Resource: r, Value: value, Reason: reason, Result: result}
	if err != nil {
		rec.Error = err.Error()
	}
	e.audit.add(rec)
	e.log(ctx, rec)
}

// resultOf is the result of a write that failed with err (nil: written).
func resultOf(err error) string {
	switch {
	case err == nil:
		return ResultWritten
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ESRCH): // ESRCH: the task moved into a group ended
		return ResultGone
	case errors.Is(err, system.ErrUnsupported):
		return ResultUnsupported
	}
	return ResultError
}
