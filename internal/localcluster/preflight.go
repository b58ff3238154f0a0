package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/prometheus/procfs"
)

// ErrCannotRun wraps every reason the local cluster cannot start on this machine; callers that only want to skip
// (the e2e suite, `make test`) test for it.
var ErrCannotRun = errors.New("the local cluster cannot run on this machine")

// cgroupControllers are the hierarchies under /sys/fs/cgroup the kubelet and runc create kubepods in, and the local
// cluster cleans up: the cgroup v1 controllers, the named systemd hierarchy, and the cgroup v2 "unified" mount of a
// hybrid host.
func cgroupControllers() []string {
	return []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "blkio", "devices", "freezer", "hugetlb", "net_cls",
		"net_prio", "perf_event", "rdma", "misc", "systemd", "unified"}
}

// requiredControllers must be mounted and writable on a cgroup v1 host; the others are cleaned up when present.
func requiredControllers() []string { return []string{"cpu", "cpuacct", "cpuset", "memory", "pids"} }

// requiredV2Controllers must be offered by the root of a cgroup v2 host: the kubelet's own set (cpu, cpuset, memory,
// hugetlb, pids) less the two it uses only where the kernel has them (it takes the intersection with the root's
// cgroup.controllers), and io, without which no block I/O limit can be set.
func requiredV2Controllers() []string { return []string{"cpu", "io", "memory", "pids"} }

// HostInfo is what Preflight looks at; NewHostInfo reads the real machine, tests give fixtures.
type HostInfo struct {
	// EUID is the effective user ID.
	EUID int
	// CgroupRoot is where the cgroup hierarchies are mounted, normally /sys/fs/cgroup.
	CgroupRoot string
	// Mounts are the mount table (/proc/self/mountinfo).
	Mounts []*procfs.MountInfo
	// Filesystems is the content of /proc/filesystems.
	Filesystems string
}

// HostCgroupRoot is where the host's cgroup hierarchies are mounted.
const HostCgroupRoot = "/sys/fs/cgroup"

// NewHostInfo reads the real machine.
func NewHostInfo() (HostInfo, error) {
	mounts, err := procfs.GetMounts()
	if err != nil {
		return HostInfo{}, fmt.Errorf("reading the mount table: %w", err)
	}
	fsys, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return HostInfo{}, fmt.Errorf("reading /proc/filesystems: %w", err)
	}
	return HostInfo{EUID: os.Geteuid(), CgroupRoot: HostCgroupRoot, Mounts: mounts, Filesystems: string(fsys)}, nil
}

// Preflight says why the local cluster cannot start here, or nil when it can: it needs root, cgroups it may create
// (cgroup v1 hierarchies, or a cgroup v2 hierarchy offering the controllers the kubelet uses), and overlayfs. The
// error wraps ErrCannotRun.
func Preflight() error {
	h, err := NewHostInfo()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCannotRun, err)
	}
	return h.Preflight()
}

// Preflight checks h; see the package function.
func (h HostInfo) Preflight() error {
	var errs []error
	if !strings.Contains(h.Filesystems, "\toverlay\n") {
		errs = append(errs, errors.New("the kernel has no overlay filesystem (containerd's snapshotter needs it)"))
	}
	if h.EUID != 0 {
		// Without root the cgroup probes fail too; say it once.
		errs = append(errs, fmt.Errorf("it must run as root (it runs a kubelet, containerd and runc); effective uid is %d", h.EUID))
	} else {
		errs = append(errs, h.checkCgroups()...)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrCannotRun, errors.Join(errs...))
}

func (h HostInfo) checkCgroups() []error {
	fsType := map[string]string{}
	for _, m := range h.Mounts {
		fsType[m.MountPoint] = m.FSType
	}
	if fsType[h.CgroupRoot] == "cgroup2" {
		return h.checkUnified()
	}
	var errs []error
	for _, c := range requiredControllers() {
		dir := filepath.Join(h.CgroupRoot, c)
		if fsType[dir] != "cgroup" {
			errs = append(errs, fmt.Errorf("no cgroup v1 %s hierarchy mounted at %s", c, dir))
			continue
		}
		probe := filepath.Join(dir, fmt.Sprintf("gleaner-preflight-%d", os.Getpid()))
		if err := os.Mkdir(probe, 0o755); err != nil {
			errs = append(errs, fmt.Errorf("cannot create cgroups in %s: %w", dir, err))
			continue
		}
		if err := os.Remove(probe); err != nil {
			errs = append(errs, fmt.Errorf("removing the probe cgroup %s: %w", probe, err))
		}
	}
	return errs
}

// checkUnified checks a cgroup v2 host: the root offers the controllers the kubelet needs, and a cgroup can be
// created there.
func (h HostInfo) checkUnified() []error {
	b, err := os.ReadFile(filepath.Join(h.CgroupRoot, "cgroup.controllers"))
	if err != nil {
		return []error{fmt.Errorf("reading the cgroup v2 root's controllers: %w", err)}
	}
	offered := strings.Fields(string(b))
	var errs []error
	for _, c := range requiredV2Controllers() {
		if !slices.Contains(offered, c) {
			errs = append(errs, fmt.Errorf("the cgroup v2 hierarchy at %s does not offer the %s controller (it offers %q)", h.CgroupRoot, c, strings.Join(offered, " ")))
		}
	}
	probe := filepath.Join(h.CgroupRoot, fmt.Sprintf("gleaner-preflight-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return append(errs, fmt.Errorf("cannot create cgroups in %s: %w", h.CgroupRoot, err))
	}
	if err := os.Remove(probe); err != nil {
		errs = append(errs, fmt.Errorf("removing the probe cgroup %s: %w", probe, err))
	}
	return errs
}
