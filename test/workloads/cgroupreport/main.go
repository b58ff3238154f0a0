// Command cgroupreport prints, as the very first thing its container does, the cgroup values the container was
// created with, then waits like pause. The runtime hook's e2e test and benchmark read the line from the container's
// log: values that are right at the first instruction were set at creation (by the NRI plugin), not later by a
// reconciler, which can only see a container once the kubelet has reported it running.
//
// The line is
//
//	cgroupreport start=<unix nanoseconds> shares=2048 quota=200000 period=100000 memory=4294967296
//
// on cgroup v1 (runc mounts the container's own cgroups at /sys/fs/cgroup/<subsystem>), and with weight=, max= and
// memory= from cpu.weight, cpu.max and memory.max on v2. A file that cannot be read is reported as "?".
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
	fmt.Printf("cgroupreport start=%d %s\n", start.UnixNano(), report("/sys/fs/cgroup"))
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
		v := "?"
		if b, err := os.ReadFile(filepath.Join(root, f[1])); err == nil {
			v = strings.ReplaceAll(strings.TrimSpace(string(b)), " ", "/")
		}
		parts = append(parts, f[0]+"="+v)
	}
	return strings.Join(parts, " ")
}
