package executor

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"syscall"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// ResourceOOMScoreAdj is /proc/PID/oom_score_adj of every process of a cgroup.
const ResourceOOMScoreAdj Resource = "oom_score_adj"

// OOMScoreAdj is the oom_score_adj of every process in a cgroup and the cgroups below it, in [-1000, 1000]: how
// much more (or less) willing the kernel's OOM killer is to pick them. The Dir of its Update is a container's
// cgroup, never a pod's (the pod's sandbox keeps the runtime's value). The kernel keeps the value per process and
// a child inherits it, so a process forked later has it already; one started into the cgroup from outside (an
// exec) gets it at the executor's next resync.
//
// Writing it needs the host's /proc as the agent's pid namespace sees the cgroup's processes (hostPID), through
// the executor's host writer, and the cgroup reader's process lists.
type OOMScoreAdj int

// Resource implements Value.
func (OOMScoreAdj) Resource() Resource { return ResourceOOMScoreAdj }

func (a OOMScoreAdj) String() string { return strconv.Itoa(int(a)) }

// procLister lists a cgroup's processes (*cgroup.FS implements it).
type procLister interface {
	Procs(dir string) ([]int, error)
}

// procs are the processes of dir, through t's cgroup reader.
func procs(t targets, dir string) ([]int, error) {
	if t.host == nil {
		return nil, errNoHost
	}
	l, ok := t.cgroup.(procLister)
	if !ok {
		return nil, fmt.Errorf("listing the processes of %s: the executor's cgroup reader cannot: %w", dir, system.ErrUnsupported)
	}
	return l.Procs(dir)
}

// write sets every process of dir; a process that exits meanwhile is skipped. A cgroup that is gone is
// fs.ErrNotExist, as for any cgroup file.
func (a OOMScoreAdj) write(t targets, dir string) error {
	pids, err := procs(t, dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, pid := range pids {
		if err := t.host.WriteFile(procFile(pid), a.String()); err != nil && !exited(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// read is the processes' value when they all have the same one; when they differ, or the cgroup has no process,
// it is an error, and the executor writes the value.
func (a OOMScoreAdj) read(t targets, dir string) (Value, error) {
	pids, err := procs(t, dir)
	if err != nil {
		return nil, err
	}
	var got []string
	for _, pid := range pids {
		s, err := t.host.ReadFile(procFile(pid))
		if err != nil {
			if exited(err) {
				continue
			}
			return nil, err
		}
		if s = strings.TrimSpace(s); len(got) == 0 || got[0] != s {
			got = append(got, s)
		}
	}
	if len(got) != 1 {
		return nil, fmt.Errorf("the processes of %s have oom_score_adj %v, not one value", dir, got)
	}
	v, err := strconv.Atoi(got[0])
	return OOMScoreAdj(v), err
}

// relax: processes have no hierarchy.
func (OOMScoreAdj) relax(Value) int { return 0 }

func procFile(pid int) string { return "proc/" + strconv.Itoa(pid) + "/oom_score_adj" }

// exited reports whether err says the process is no more: its /proc directory is gone, or it is exiting.
func exited(err error) bool { return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) }
