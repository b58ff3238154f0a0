package proc

// The per-process files this file reads (procfs parses them, each read capped at 1 MiB):
//
// /proc/<pid>/cgroup, one line per hierarchy, "id:controllers:path"; on cgroup v2 the one line "0::<path>". The
// path is relative to the reader's cgroup namespace, so from a container with its own namespace a host process's
// path starts with "/..":
//
//	12:memory:/kubepods/burstable/pod7b6f.../4f1c...
//	4:cpu,cpuacct:/kubepods/burstable/pod7b6f.../4f1c...
//	0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7b6f....slice/cri-containerd-4f1c....scope
//
// /proc/<pid>/mountinfo, one line per mount: id, parent id, major:minor, root, mount point, options, optional
// fields, "-", file system type, source, super options:
//
//	27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
//	31 27 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755

import (
	"fmt"
	"slices"

	"github.com/prometheus/procfs"
)

// CgroupPath is the cgroup of process pid as /proc/<pid>/cgroup names it: the path in the v1 memory hierarchy
// where there is one, else the v2 path, else the first line's. Kubelets put a container's processes in the same
// path in every hierarchy they manage; on a hybrid host the v2 line is systemd's, not the kubelet's, so v1 comes
// first.
func (f *FS) CgroupPath(pid int) (string, error) {
	cgs, err := guard(func() ([]procfs.Cgroup, error) {
		p, err := f.process(pid)
		if err != nil {
			return nil, err
		}
		return p.Cgroups()
	})
	if err != nil {
		return "", fmt.Errorf("reading the cgroup of process %d in %s: %w", pid, f.root, err)
	}
	if len(cgs) == 0 {
		return "", fmt.Errorf("reading the cgroup of process %d in %s: no cgroup listed", pid, f.root)
	}
	for _, c := range cgs {
		if slices.Contains(c.Controllers, "memory") {
			return c.Path, nil
		}
	}
	for _, c := range cgs {
		if c.HierarchyID == 0 && len(c.Controllers) == 0 {
			return c.Path, nil
		}
	}
	return cgs[0].Path, nil
}

// MountInfo is the mount table that process pid sees, /proc/<pid>/mountinfo. The agent reads pid 1's: with the
// host's pid namespace that is the host's init, whose mounts are the node's.
func (f *FS) MountInfo(pid int) ([]*procfs.MountInfo, error) {
	m, err := guard(func() ([]*procfs.MountInfo, error) {
		p, err := f.process(pid)
		if err != nil {
			return nil, err
		}
		return p.MountInfo()
	})
	if err != nil {
		return nil, fmt.Errorf("reading the mounts of process %d in %s: %w", pid, f.root, err)
	}
	return m, nil
}

// process is procfs's view of process pid under the FS's root. The system-wide files have parsers of their own
// (proc.go); these two per-process files are still procfs's.
func (f *FS) process(pid int) (procfs.Proc, error) {
	fs, err := procfs.NewFS(f.root)
	if err != nil {
		return procfs.Proc{}, err
	}
	return fs.Proc(pid)
}

// guard turns a panic inside procfs (it indexes fields of malformed lines unchecked) into an error, so a corrupt
// file costs one sample, not the agent.
func guard[T any](read func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed file: %v", r)
		}
	}()
	return read()
}
