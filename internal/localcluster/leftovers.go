package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// Leftovers lists what a stopped cluster would have left on the machine: its processes, mounts under the state
// directory or under hostPaths, kubepods cgroups, the CNI bridge, and any of hostPaths that exists. Down ends with
// it; an empty list means the machine is as it was.
func (c *Cluster) Leftovers(hostPaths []string) []string {
	out := c.leftovers(true, hostPaths)
	for _, d := range kubepodsCgroups(HostCgroupRoot) {
		if exists(d) {
			out = append(out, "cgroup "+d)
		}
	}
	if d := filepath.Join("/sys/class/net", BridgeName); exists(d) {
		out = append(out, "network interface "+BridgeName)
	}
	for _, p := range hostPaths {
		if exists(p) {
			out = append(out, "host path "+p)
		}
	}
	return out
}

// ownLeftovers is Leftovers without what is machine-wide (kubepods cgroups, their processes, the bridge, host
// paths), for when another local cluster runs.
func (c *Cluster) ownLeftovers() []string { return c.leftovers(false, nil) }

func (c *Cluster) leftovers(containers bool, hostPaths []string) []string {
	var out []string
	if pids, err := c.strays(containers); err != nil {
		out = append(out, err.Error())
	} else {
		for _, pid := range pids {
			out = append(out, fmt.Sprintf("process %d (%s)", pid, cmdline(pid)))
		}
	}
	for _, m := range c.ownMounts(hostPaths) {
		out = append(out, "mount "+m)
	}
	return out
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func cmdline(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "cmdline"))
	if err != nil {
		return "gone"
	}
	for i := range b {
		if b[i] == 0 {
			b[i] = ' '
		}
	}
	return string(b)
}
