package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Down stops the cluster and removes what it left on the machine: processes (by PID, then any container or shim
// still running), mounts, the kubepods cgroups, the CNI bridge, the host paths the kubelet created, the firewall
// chains a component added, and the state directory's data (the logs stay). It works without a cluster.json too (sweeping only), so it also cleans up after
// an Up that crashed. It returns an error listing whatever it could not remove.
func (c *Cluster) Down(ctx context.Context) error {
	unlock, err := c.lock()
	if err != nil {
		return err
	}
	defer unlock()
	st, err := readState(c.layout.StateFile())
	switch {
	case errors.Is(err, errNoState):
		st = &State{}
	case err != nil:
		c.logf("%v; cleaning up by sweeping", err)
		st = &State{}
	}
	return c.teardown(ctx, st)
}

// stopGrace is how long a component gets to exit after SIGTERM.
const stopGrace = 10 * time.Second

// teardown is Down without the lock. Every step runs even when an earlier one failed.
func (c *Cluster) teardown(ctx context.Context, st *State) error {
	t := c.cfg.Clock.Now()
	var errs []error
	step := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	byName := map[string]Process{}
	for _, p := range st.Processes {
		byName[p.Name] = p
	}
	stop := func(names ...string) {
		for _, n := range names {
			if p, ok := byName[n]; ok {
				step(p.stop(ctx, stopGrace))
			}
		}
	}
	// Nothing may recreate or reschedule pods while they go.
	stop("kube-controller-manager", "kube-scheduler")
	if byName["kube-apiserver"].Alive() && byName["kubelet"].Alive() {
		step(c.deletePods(ctx))
	}
	stop("kubelet")
	// The kubepods cgroups, the bridge, ip_forward and the kubelet's host paths are machine-wide: when a cluster
	// from another state directory runs, they are its, and stay.
	machine := true
	if pid := c.otherKubelet(); pid != 0 {
		machine = false
		c.logf("the kubelet of another local cluster runs (pid %d, %s); leaving the kubepods cgroups, the bridge and "+
			"the kubelet's host paths to it", pid, cmdline(pid))
	}
	if byName["containerd"].Alive() {
		c.removeContainers(ctx)
	}
	stop("containerd")
	// Containers and shims now, the API server and etcd (still recorded and running) gracefully after them.
	step(c.killStrays(ctx, machine, byName["kube-apiserver"].PID, byName["etcd"].PID))
	stop("kube-apiserver", "etcd")
	step(c.killStrays(ctx, machine))
	if machine {
		step(c.unmountAll(st.CreatedHostPaths))
		step(removeCgroups(HostCgroupRoot))
		step(deleteBridge())
		if st.IPForward != "" && readIPForward() != st.IPForward {
			step(os.WriteFile(ipForwardFile, []byte(st.IPForward), 0o644))
		}
		if st.Firewall != nil {
			removed, err := hostFirewall().removeAdded(ctx, st.Firewall)
			if len(removed) > 0 {
				c.logf("removed from the firewall what a component added: %s", strings.Join(removed, "; "))
			}
			step(err)
		}
		for _, p := range st.CreatedHostPaths {
			step(os.RemoveAll(p))
		}
	} else {
		step(c.unmountAll(nil))
	}
	for _, d := range c.layout.dataDirs() {
		step(os.RemoveAll(d))
	}
	step(removeFile(c.layout.Kubeconfig()))
	left := c.ownLeftovers()
	if machine {
		left = c.Leftovers(st.CreatedHostPaths)
	}
	if len(left) > 0 {
		errs = append(errs, fmt.Errorf("left behind:\n  %s", strings.Join(left, "\n  ")))
	}
	if err := errors.Join(errs...); err != nil {
		// Keep cluster.json: the next down or up tries again with the same record.
		return fmt.Errorf("tearing down the local cluster: %w", err)
	}
	step(removeFile(c.layout.StateFile()))
	c.logf("stopped and cleaned up in %s; logs in %s", c.cfg.Clock.Since(t).Round(100*time.Millisecond), c.layout.LogDir())
	return errors.Join(errs...)
}

// removeFile removes a file that may not exist.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// deletePods deletes every pod and waits for the kubelet to stop them, so that containers, their network and
// their mounts are taken down the ordinary way.
func (c *Cluster) deletePods(ctx context.Context) error {
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing namespaces to delete their pods: %w", err)
	}
	grace := int64(5)
	for _, ns := range nss.Items {
		err := cs.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace}, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("deleting the pods in %s: %w", ns.Name, err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, nil
	})
	if err != nil {
		// Not fatal: whatever the kubelet did not stop is killed and swept below.
		c.logf("pods still there after a minute; killing their containers instead")
	}
	return nil
}

// removeContainers kills and deletes what containerd still runs after the kubelet stopped. Best effort: whatever
// remains is killed by killStrays and unmounted by unmountAll.
func (c *Cluster) removeContainers(ctx context.Context) {
	out, err := c.ctr(ctx, "tasks", "list", "--quiet")
	if err != nil {
		return
	}
	for _, id := range strings.Fields(out) {
		_, _ = c.ctr(ctx, "tasks", "kill", "--all", "--signal", "SIGKILL", id)
		_, _ = c.ctr(ctx, "tasks", "delete", "--force", id)
	}
	if out, err := c.ctr(ctx, "containers", "list", "--quiet"); err == nil {
		for _, id := range strings.Fields(out) {
			_, _ = c.ctr(ctx, "containers", "delete", id)
		}
	}
}

// strayPrograms are the executables of processes that belong to the cluster when their command line names the
// state directory (containerd's shims and runc are started by containerd, not recorded by Up).
func strayPrograms() []string {
	return []string{"containerd-shim-runc-v2", "runc", "containerd", "kubelet", "etcd", "kube-apiserver",
		"kube-controller-manager", "kube-scheduler"}
}

// strays returns the PIDs of processes that belong to this cluster, other than those in except: the cluster's
// programs whose command line names the state directory (containerd's shims, runc, and components of a cluster
// whose record was lost) and, with containers, the processes in the kubepods cgroups.
func (c *Cluster) strays(containers bool, except ...int) ([]int, error) {
	pids := map[int]bool{}
	for _, top := range kubepodsCgroups(HostCgroupRoot) {
		if !containers {
			break
		}
		for _, pid := range cgroupTreeProcs(top) {
			pids[pid] = true
		}
	}
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	for _, p := range procs {
		if p.PID == os.Getpid() || slices.Contains(except, p.PID) {
			continue
		}
		exe, err := p.Executable()
		if err != nil || !slices.Contains(strayPrograms(), filepath.Base(exe)) {
			continue
		}
		args, err := p.CmdLine()
		if err != nil {
			continue
		}
		if namesDir(args, c.layout.Dir) {
			pids[p.PID] = true
		}
	}
	out := make([]int, 0, len(pids))
	for pid := range pids {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out, nil
}

// killStrays SIGKILLs the strays, other than except, and waits for them to go.
func (c *Cluster) killStrays(ctx context.Context, containers bool, except ...int) error {
	pids, err := c.strays(containers, except...)
	if err != nil || len(pids) == 0 {
		return err
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		left, err := c.strays(containers, except...)
		return err == nil && len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("processes %v still run after SIGKILL: %w", pids, err)
	}
	return nil
}

// otherKubelet returns the PID of a kubelet whose command line does not name this state directory, or 0.
func (c *Cluster) otherKubelet() int {
	procs, err := procfs.AllProcs()
	if err != nil {
		return 0
	}
	for _, p := range procs {
		exe, err := p.Executable()
		if err != nil || filepath.Base(exe) != "kubelet" {
			continue
		}
		args, err := p.CmdLine()
		if err == nil && !namesDir(args, c.layout.Dir) {
			return p.PID
		}
	}
	return 0
}

// namesDir reports whether a command line names a path under dir.
func namesDir(args []string, dir string) bool {
	return strings.Contains(strings.Join(args, " "), dir+string(filepath.Separator))
}

// cgroupTreeProcs returns the PIDs in a cgroup directory and every cgroup below it.
func cgroupTreeProcs(dir string) []int {
	var pids []int
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil //nolint:nilerr // a cgroup removed while walking is simply not there any more
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil //nolint:nilerr // as above
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// unmountAll unmounts every mount under the state directory or a created host path, deepest first, detaching the
// ones that are busy. Mounts can be stacked, so it repeats until none is left.
func (c *Cluster) unmountAll(hostPaths []string) error {
	for range 5 {
		mounts := c.ownMounts(hostPaths)
		if len(mounts) == 0 {
			return nil
		}
		for _, m := range mounts {
			if err := unix.Unmount(m, 0); err != nil {
				_ = unix.Unmount(m, unix.MNT_DETACH)
			}
		}
	}
	if left := c.ownMounts(hostPaths); len(left) > 0 {
		return fmt.Errorf("could not unmount %s", strings.Join(left, ", "))
	}
	return nil
}

// ownMounts returns the mount points under the state directory or at or under a created host path, deepest first.
// A mount at the state directory itself is not the cluster's: whoever chose the directory put it there (the cgroup v2
// node's tmpfs, so that nothing the cluster writes reaches the host's disk through 9p), and the next start writes
// into it.
func (c *Cluster) ownMounts(hostPaths []string) []string {
	mounts, err := procfs.GetMounts()
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range mounts {
		if strings.HasPrefix(m.MountPoint, c.layout.Dir+"/") {
			out = append(out, m.MountPoint)
			continue
		}
		for _, p := range hostPaths {
			if r := resolvePath(p); m.MountPoint == r || strings.HasPrefix(m.MountPoint, r+"/") {
				out = append(out, m.MountPoint)
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return out
}

// kubepodsCgroups are the kubepods cgroups the kubelet may have made under root: the unified hierarchy's of a cgroup
// v2 host, and one in each cgroup v1 hierarchy. The caller checks which exist.
func kubepodsCgroups(root string) []string {
	dirs := []string{filepath.Join(root, "kubepods")}
	for _, ctl := range cgroupControllers() {
		dirs = append(dirs, filepath.Join(root, ctl, "kubepods"))
	}
	return dirs
}

// removeCgroups removes the kubepods tree in every hierarchy under root, deepest first. A cgroup may refuse removal
// for a moment after its last process exits, so each pass is retried briefly.
func removeCgroups(root string) error {
	var errs []error
	for _, top := range kubepodsCgroups(root) {
		if _, err := os.Stat(top); err != nil {
			continue
		}
		var dirs []string
		_ = filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
		for _, d := range dirs {
			err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 5*time.Second, true,
				func(context.Context) (bool, error) {
					err := syscall.Rmdir(d)
					return err == nil || errors.Is(err, syscall.ENOENT), nil
				})
			if err != nil {
				errs = append(errs, fmt.Errorf("removing cgroup %s: still busy", d))
			}
		}
	}
	return errors.Join(errs...)
}

// deleteBridge deletes the CNI bridge and any veth still attached to it. The bridge plugin creates it on the first
// pod; nothing deletes it otherwise.
func deleteBridge() error {
	dir := filepath.Join("/sys/class/net", BridgeName)
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	ports, _ := os.ReadDir(filepath.Join(dir, "brif"))
	for _, p := range ports {
		_ = exec.Command("ip", "link", "delete", p.Name()).Run()
	}
	if out, err := exec.Command("ip", "link", "delete", BridgeName).CombinedOutput(); err != nil {
		return fmt.Errorf("deleting the bridge %s: %w: %s", BridgeName, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ipForwardFile is the sysctl the CNI bridge plugin turns on for its gateway.
const ipForwardFile = "/proc/sys/net/ipv4/ip_forward"

func readIPForward() string {
	b, err := os.ReadFile(ipForwardFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// watchedHostPaths are the paths outside the state directory that the components create whatever they are told:
// the kubelet hard-codes its device-plugin socket and the container log symlinks, NRI's socket is at its default, the
// agent's DaemonSet keeps its state in a hostPath.
// Up records which of them did not exist; Down removes those.
func watchedHostPaths() []string {
	return []string{
		"/var/lib/kubelet",    // device-plugins/kubelet.sock, whatever --root-dir says
		"/var/log/containers", // the kubelet's symlinks to container logs
		"/var/log/pods",
		"/var/run/nri", // NRISocket
		"/var/run/netns",
		"/var/lib/cni",
		"/etc/cni",
		"/run/containerd",
		"/opt/containerd",
		"/usr/libexec/kubernetes",
		"/var/run/kubernetes",
		"/var/lib/gleaner-agent", // the agent's --state-dir (config/agent/daemonset.yaml)
	}
}

// missingPaths returns the paths that do not exist.
func missingPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			out = append(out, p)
		}
	}
	return out
}

// resolvePath resolves symbolic links in the directories of p (/var/run is often a link to /run), as the mount
// table shows them.
func resolvePath(p string) string {
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return p
	}
	return filepath.Join(dir, filepath.Base(p))
}
