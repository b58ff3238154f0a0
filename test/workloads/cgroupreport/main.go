// Command cgroupreport prints, as the very first thing its container does, the cgroup values the container was
// created with, then waits like pause. The runtime hook's e2e test and benchmark read the line from the container's
// log: values that are right at the first instruction were set at creation (by the NRI plugin), not later by a
// reconciler, which can only see a container once the kubelet has reported it running.
//
// The line is
//
//	cgroupreport start=<unix nanoseconds> shares=2048 quota=200000 period=100000 memory=4294967296 oom_score_adj=1000
//
// on cgroup v1 (runc mounts the container's own cgroups at /sys/fs/cgroup/<subsystem>), and with weight=, max= and
// memory= from cpu.weight, cpu.max and memory.max on v2; oom_score_adj is the process's own, which the runtime set
// from the container's spec. A file that cannot be read is reported as "?".
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	start := time.Now()
	fmt.Printf("cgroupreport start=%d %s oom_score_adj=%s\n", start.UnixNano(), report("/sys/fs/cgroup"), read("/proc/self/oom_score_adj"))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}

// report reads the container's CPU and memory values under root, the container's view of /sys/fs/cgroup.
func report(root string) string {
	files := [][2]string{{"shares", "cpu/cpu.shares"}, {"quota", "cpu/cpu.cfs_quota_us"}, {"period", "cpu/cpu.cfs_period_us"}, {"memory", "memory/memory.limit_in_bytes"}}
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		files = [][2]string{{"weight", "cpu.weight"}, {"max", "cpu.max"}, {"memory", "memory.max"}}
	}
	parts := make([]string, 0, len(files))
	for _, f := range files {
		parts = append(parts, f[0]+"="+read(filepath.Join(root, f[1])))
	}
	return strings.Join(parts, " ")
}

// read is the content of file, its spaces as "/", or "?" when it cannot be read.
func read(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return "?"
	}
	return strings.ReplaceAll(strings.TrimSpace(string(b)), " ", "/")
}
