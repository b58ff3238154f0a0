package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MachineSnapshot is what a local cluster could leave on the machine, read without the cluster's own code so that
// the teardown test checks the teardown independently.
type MachineSnapshot struct {
	// Processes are the processes whose command line names the state directory, or that run in a kubepods cgroup.
	Processes []string
	// Mounts are the mount points under the state directory or a host path the cluster uses.
	Mounts []string
	// Cgroups are the kubepods cgroup directories.
	Cgroups []string
	// Interfaces are the network interfaces the CNI bridge plugin makes (the bridge, veth pairs).
	Interfaces []string
	// HostPaths are the host paths a kubelet, containerd or CNI plugin creates by default that exist.
	HostPaths []string
	// IPForward is net.ipv4.ip_forward.
	IPForward string
	// Firewall is the firewall's ruleset: `nft list ruleset` where nft is installed, else what iptables-save and
	// ip6tables-save print, without comments and packet counters.
	Firewall []string
	// StateDir lists the entries left in the state directory.
	StateDir []string
	// Home lists every file and directory under the user's home but for the build caches (homeCaches): no client the
	// suite starts (kubectl, helm, client-go) may keep anything there.
	Home []string
}

// hostPaths are the default paths of the kubelet, containerd, CNI, NRI and the agent's state (the home directory,
// where kubectl and helm would keep caches, is compared as a whole: Home).
func hostPaths() []string {
	return []string{"/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/var/run/nri", "/run/nri",
		"/var/run/netns", "/run/netns", "/var/lib/cni", "/etc/cni", "/opt/cni", "/run/containerd", "/var/lib/containerd",
		"/opt/containerd", "/etc/containerd", "/usr/libexec/kubernetes", "/var/run/kubernetes", "/etc/kubernetes", "/var/lib/gleaner-agent"}
}

// homeCaches are the directories under the home directory that builds fill while the suite runs (it builds
// kubectl-glean and images): Go's build and module caches, its telemetry, and the project's tool cache.
func homeCaches(home string) []string {
	dirs := []string{filepath.Join(home, ".cache", "go-build"), filepath.Join(home, "go"),
		filepath.Join(home, ".config", "go"), filepath.Join(home, ".cache", "gleaner"), filepath.Join(home, ".cache", "golangci-lint")}
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GLEANER_CACHE"} {
		if d := os.Getenv(v); d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// homeEntries lists the paths under the home directory, relative to it, without the build caches.
func homeEntries() []string {
	home, err := os.UserHomeDir()
	if err != nil {
		return []string{err.Error()}
	}
	skip := homeCaches(home)
	var out []string
	_ = filepath.WalkDir(home, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == home {
			return nil
		}
		if d.IsDir() && slices.Contains(skip, path) {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(home, path)
		out = append(out, "~/"+rel)
		return nil
	})
	return out
}

// TakeSnapshot reads the machine.
func TakeSnapshot(stateDir string) MachineSnapshot {
	s := MachineSnapshot{IPForward: readTrimmed("/proc/sys/net/ipv4/ip_forward"), Firewall: readFirewall(), Home: homeEntries()}
	s.Cgroups, _ = filepath.Glob("/sys/fs/cgroup/*/kubepods") // cgroup v1: one per hierarchy
	if _, err := os.Stat("/sys/fs/cgroup/kubepods/cgroup.procs"); err == nil {
		s.Cgroups = append(s.Cgroups, "/sys/fs/cgroup/kubepods") // cgroup v2
	}
	s.Processes = clusterProcesses(stateDir, s.Cgroups)
	roots := []string{stateDir}
	for _, p := range hostPaths() {
		if _, err := os.Lstat(p); err == nil {
			s.HostPaths = append(s.HostPaths, p)
		}
		roots = append(roots, p)
	}
	s.Mounts = mountsUnder(roots)
	ifaces, _ := net.Interfaces()
	for _, i := range ifaces {
		if strings.HasPrefix(i.Name, "gleaner") || strings.HasPrefix(i.Name, "veth") || strings.HasPrefix(i.Name, "cni") {
			s.Interfaces = append(s.Interfaces, i.Name)
		}
	}
	entries, _ := os.ReadDir(stateDir)
	for _, e := range entries {
		s.StateDir = append(s.StateDir, e.Name())
	}
	slices.Sort(s.StateDir)
	return s
}

// clusterProcesses lists the processes in the cgroups (recursively) and those whose command line names stateDir.
func clusterProcesses(stateDir string, cgroups []string) []string {
	inCgroups := map[string]bool{}
	for _, dir := range cgroups {
		_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
			if err == nil && info.Name() == "cgroup.procs" {
				for _, pid := range strings.Fields(readTrimmed(path)) {
					inCgroups[pid] = true
				}
			}
			return nil
		})
	}
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil || p.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		cmd := strings.ReplaceAll(readTrimmed(filepath.Join("/proc", p.Name(), "cmdline")), "\x00", " ")
		if inCgroups[p.Name()] || strings.Contains(cmd, stateDir+"/") {
			out = append(out, p.Name()+" "+cmd)
		}
	}
	return out
}

// mountsUnder lists the mount points (/proc/self/mountinfo) at or under one of roots.
func mountsUnder(roots []string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return []string{err.Error()}
	}
	defer func() { _ = f.Close() }()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw: the fifth field is the mount point.
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		for _, r := range roots {
			if fields[4] == r || strings.HasPrefix(fields[4], r+"/") {
				out = append(out, fields[4])
				break
			}
		}
	}
	return out
}

// counters matches the packet counters of nft's and iptables-save's output, which move without the rules changing.
var counters = regexp.MustCompile(`counter packets \d+ bytes \d+|\[\d+:\d+\]`)

// noFirewallTool starts the line readFirewall gives for a command that is not installed: a snapshot without the
// ruleset could not see a rule left behind (an empty ruleset, as iptables-nft prints with no tables, is fine).
const noFirewallTool = "not installed"

// readFirewall lists the ruleset line by line; a command that fails is a line with its error, so that the snapshots
// before and after differ when it fails only once.
func readFirewall() []string {
	commands := [][]string{{"nft", "list", "ruleset"}}
	if _, err := exec.LookPath("nft"); err != nil {
		commands = [][]string{{"iptables-save"}, {"ip6tables-save"}}
	}
	var out []string
	for _, c := range commands {
		if _, err := exec.LookPath(c[0]); err != nil {
			out = append(out, fmt.Sprintf("%s: %s", noFirewallTool, c[0]))
			continue
		}
		b, err := exec.Command(c[0], c[1:]...).Output()
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", strings.Join(c, " "), err))
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(counters.ReplaceAllString(line, "counter"))
			if line != "" && !strings.HasPrefix(line, "#") {
				out = append(out, c[0]+": "+line)
			}
		}
	}
	return out
}

func readTrimmed(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// String lists the snapshot for failure messages.
func (s MachineSnapshot) String() string {
	return fmt.Sprintf("processes %q\nmounts %q\ncgroups %q\ninterfaces %q\nhost paths %q\nip_forward %s\nfirewall %q\nstate dir %q\nhome %q",
		s.Processes, s.Mounts, s.Cgroups, s.Interfaces, s.HostPaths, s.IPForward, s.Firewall, s.StateDir, s.Home)
}
