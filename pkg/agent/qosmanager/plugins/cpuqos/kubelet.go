package cpuqos

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/proc"
)

// KubeletSettle is how long the kubelet must have run before the besteffort QoS cgroup is made idle. The kubelet
// writes that cgroup's cpu.shares (cpu.weight on v2) when it sets up its QoS cgroups at start, and the kernel
// refuses the write while cpu.idle is 1: the kubelet then exits ("Failed to start ContainerManager"), and, restarted
// by its service manager, fails again for as long as the cgroup stays idle. The set-up comes within a second of its
// start on the local node; the margin is for loaded nodes.
const KubeletSettle = 30 * time.Second

// kubeletWatch tells whether the node's kubelet has run for KubeletSettle: the process named "kubelet" in the
// host's /proc, known by its PID and start time. A kubelet that is gone, or has started again, is not settled, so
// the plugin takes cpu.idle off the besteffort QoS cgroup until the new one has set up its QoS cgroups (a kubelet
// that already failed once starts again after its service manager's delay, 10 s with kubeadm's unit, and then
// finds the cgroup writable). A node where no kubelet process was ever seen (no host PID namespace, a kubelet
// inside another binary, as in k3s) counts as settled: the plugin cannot tell, and the cgroup stays idle.
type kubeletWatch struct {
	procRoot string
	pid      int
	start    uint64    // the process's start time, clock ticks after boot
	since    time.Time // when the process started, by the plugin's clock
	seen     bool      // a kubelet process was seen since the agent started
	scanned  time.Time // the last look for a kubelet never seen: /proc is read again at most every KubeletSettle
}

// settled reports whether the kubelet has run for KubeletSettle at now (true while no kubelet was ever seen).
func (w *kubeletWatch) settled(now time.Time) bool {
	switch {
	case w.seen && w.alive():
	case !w.seen && !w.scanned.IsZero() && now.Sub(w.scanned) < KubeletSettle:
		return true
	case !w.find(now):
		w.scanned = now
		return !w.seen
	}
	return now.Sub(w.since) >= KubeletSettle
}

// alive reports whether the process last seen still runs.
func (w *kubeletWatch) alive() bool {
	start, ok := startTime(w.procRoot, w.pid)
	return ok && start == w.start
}

// find looks for the kubelet process in /proc and records it; false when there is none.
func (w *kubeletWatch) find(now time.Time) bool {
	entries, err := os.ReadDir(w.procRoot)
	if err != nil {
		return false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(w.procRoot, e.Name(), "comm"))
		if err != nil || string(bytes.TrimSpace(comm)) != "kubelet" {
			continue
		}
		start, ok := startTime(w.procRoot, pid)
		if !ok {
			continue
		}
		w.pid, w.start, w.seen = pid, start, true
		w.since = now
		if up, ok := uptime(w.procRoot); ok {
			w.since = now.Add(-(up - time.Duration(start)*time.Second/proc.UserHZ))
		}
		return true
	}
	return false
}

// startTime reads field 22 of /proc/PID/stat: the process's start, in clock ticks after boot.
func startTime(procRoot string, pid int) (uint64, bool) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces: the fields after it start at state (3).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	return v, err == nil
}

// uptime reads the first number of /proc/uptime, the time since boot.
func uptime(procRoot string) (time.Duration, bool) {
	b, err := os.ReadFile(filepath.Join(procRoot, "uptime"))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	s, err := strconv.ParseFloat(f[0], 64)
	return time.Duration(s * float64(time.Second)), err == nil
}
