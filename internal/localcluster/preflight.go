package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// requiredControllers must be mounted and writable; the others are cleaned up when present.
func requiredControllers() []string { return []string{"cpu", "cpuacct", "cpuset", "memory", "pids"} }

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
	return HostInfo{EUID: os.Geteuid(), CgroupRoot: "/sys/fs/cgroup", Mounts: mounts, Filesystems: string(fsys)}, nil
}

// Preflight says why the local cluster cannot start here, or nil when it can: it needs root, cgroup v1 hierarchies
// it may create cgroups in, and overlayfs. The error wraps ErrCannotRun.
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
		return []error{fmt.Errorf("%s is cgroup v2; the local cluster supports cgroup v1 hosts only", h.CgroupRoot)}
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
