package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// killPasses bounds how often Kill re-reads the process lists on cgroup v1 (and v2 without cgroup.kill): a process
// forked before its parent died shows up in the next pass; a cgroup that still gains new processes after this many
// passes is reported as an error.
const killPasses = 8

// Kill sends SIGKILL to every process in cgroup dir and its descendants: the agent's last resort against memory
// pressure while the API server cannot be reached. dir is a cgroup path as for Reader.
//
// On cgroup v2 it writes "1" to cgroup.kill, which the kernel (5.14 and later) applies to the whole subtree at once,
// forks included. Where cgroup.kill is missing, and on cgroup v1 (in the memory hierarchy, else the cpu one), it
// reads cgroup.procs of dir and every descendant and signals each process, repeating until a pass finds no new
// process. Those pids are as the agent's pid namespace sees them: the agent needs the host's (hostPID) for them, and
// a process it cannot see (listed as pid 0) makes Kill fail rather than signal the wrong process.
//
// A cgroup that does not exist is an error wrapping fs.ErrNotExist: the pod is gone already. A process that exits
// before its signal arrives is not an error. Kill only returns once the signals are sent; the processes exit and
// leave the cgroup shortly afterwards.
func (f *FS) Kill(dir string) error {
	return f.kill(dir, func(pid int) error { return unix.Kill(pid, unix.SIGKILL) })
}

// kill is Kill with the signal sending injected, so tests check which pids would be signalled.
func (f *FS) kill(dir string, sigkill func(pid int) error) error {
	if f.version == V2 {
		top := f.Dir("", dir)
		if _, err := os.Stat(top); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("killing the processes of cgroup %q: it does not exist: %w", dir, fs.ErrNotExist)
			}
			return fmt.Errorf("killing the processes of cgroup %q: %w", dir, err)
		}
		err := writeExisting(filepath.Join(top, "cgroup.kill"), "1")
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		// Kernels before 5.14 have no cgroup.kill.
		return killTasks(top, sigkill)
	}
	for _, sub := range []string{"memory", "cpu"} {
		top := f.Dir(sub, dir)
		if _, err := os.Stat(top); err == nil {
			return killTasks(top, sigkill)
		}
	}
	return fmt.Errorf("killing the processes of cgroup %q: no such cgroup in the memory or cpu hierarchy under %s: %w", dir, f.root, fs.ErrNotExist)
}

// killTasks signals every process listed in cgroup.procs of top and its descendants, pass after pass, until a pass
// finds none it has not signalled yet.
func killTasks(top string, sigkill func(pid int) error) error {
	self := os.Getpid()
	signalled := map[int]bool{}
	for range killPasses {
		pids, err := treeIDs(top, "cgroup.procs")
		if err != nil {
			return err
		}
		fresh := 0
		for _, pid := range pids {
			switch {
			case pid <= 0:
				return fmt.Errorf("killing the processes of %s: it holds processes outside this pid namespace (the agent needs hostPID)", top)
			case pid == self:
				return fmt.Errorf("killing the processes of %s: the agent itself runs in it", top)
			case signalled[pid]:
				continue
			}
			signalled[pid] = true
			fresh++
			if err := sigkill(pid); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("killing process %d of %s: %w", pid, top, err)
			}
		}
		if fresh == 0 {
			return nil
		}
	}
	return fmt.Errorf("killing the processes of %s: new processes still appeared after %d passes", top, killPasses)
}

// writeExisting writes v to the file p without creating it.
func writeExisting(p, v string) error {
	fh, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	_, err = fh.WriteString(v)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %q to %s: %w", v, p, err)
	}
	return nil
}
