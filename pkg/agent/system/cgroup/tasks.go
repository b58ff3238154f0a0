package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// Tasks returns the thread ids of every task in cgroup dir and its descendants, as the agent's pid namespace sees
// them: on cgroup v1 the tasks files of the memory hierarchy (else the cpu one, as Kill chooses), on v2
// cgroup.threads. Resctrl groups take threads, not processes: every thread of a process has to be moved.
//
// A cgroup that does not exist is an error wrapping fs.ErrNotExist (the pod is gone); a cgroup below it removed
// during the walk is skipped. A listed id of 0 (a task outside the agent's pid namespace: the agent needs hostPID)
// is an error, so that a caller never acts on a task it cannot name.
func (f *FS) Tasks(dir string) ([]int, error) {
	file := "cgroup.threads"
	if f.version == V1 {
		file = "tasks"
	}
	return f.ids(dir, file, "tasks")
}

// Procs returns the process ids of every process in cgroup dir and its descendants (cgroup.procs, on v1 of the
// memory hierarchy, else the cpu one), as Tasks does threads: for what the kernel keeps per process, such as
// oom_score_adj. The errors are Tasks'.
func (f *FS) Procs(dir string) ([]int, error) { return f.ids(dir, "cgroup.procs", "processes") }

// ids lists the ids in file of dir's cgroup and its descendants; what names them in the error.
func (f *FS) ids(dir, file, what string) ([]int, error) {
	tops := []string{f.Dir("", dir)}
	if f.version == V1 {
		tops = []string{f.Dir("memory", dir), f.Dir("cpu", dir)}
	}
	for _, top := range tops {
		if _, err := os.Stat(top); err != nil {
			continue
		}
		return treeIDs(top, file)
	}
	return nil, fmt.Errorf("listing the %s of cgroup %q: no such cgroup under %s: %w", what, dir, f.root, fs.ErrNotExist)
}

// treeIDs reads the ids listed in file (tasks, cgroup.threads, cgroup.procs) of top and every cgroup below it;
// Tasks and Kill share it. A listed id of 0 or less is an error (see Tasks): for Kill it would signal the agent's
// own process group.
func treeIDs(top, file string) ([]int, error) {
	var ids []int
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != top {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, file))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != top {
				return nil
			}
			return err
		}
		for _, field := range bytes.Fields(b) {
			id, err := strconv.Atoi(string(field))
			if err != nil {
				return fmt.Errorf("parsing %s/%s: %w", p, file, err)
			}
			if id <= 0 {
				return fmt.Errorf("%s/%s lists tasks outside this pid namespace (the agent needs hostPID)", p, file)
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the tasks of %s: %w", top, err)
	}
	return ids, nil
}
