package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Version is a cgroup version.
type Version int

// The cgroup versions.
const (
	// V1 is the legacy hierarchy: one directory per subsystem (cpu, cpuacct, cpuset, memory, ...) under the root.
	// A hybrid host (v1 subsystems plus an empty v2 tree at unified/) counts as V1.
	V1 Version = 1
	// V2 is the unified hierarchy: one tree, every controller's files in each cgroup directory.
	V2 Version = 2
)

// String is "v1" or "v2".
func (v Version) String() string { return fmt.Sprintf("v%d", int(v)) }

// DetectVersion tells which cgroup version is mounted at root (normally /sys/fs/cgroup). A cgroup2 filesystem
// (by its statfs magic) is V2. Anything else is decided by what root holds, so that fixture trees (plain
// directories) work too: a cgroup.controllers file means V2, a cpu or cpuacct subsystem directory V1.
func DetectVersion(root string) (Version, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return 0, fmt.Errorf("detecting the cgroup version: statfs %s: %w", root, err)
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return V2, nil
	}
	if exists(filepath.Join(root, "cgroup.controllers")) {
		return V2, nil
	}
	for _, sub := range []string{"cpu", "cpuacct"} {
		if exists(filepath.Join(root, sub)) {
			return V1, nil
		}
	}
	return 0, fmt.Errorf("detecting the cgroup version: %s is neither a cgroup2 mount nor holds the v1 cpu/cpuacct hierarchies", root)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil || !errors.Is(err, os.ErrNotExist)
}
