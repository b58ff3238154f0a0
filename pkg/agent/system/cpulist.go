package system

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"
)

// MaxCPUID is the largest CPU number a CPU list may name: far above any kernel's NR_CPUS (8,192 at most), low
// enough that a list naming every CPU up to it is small.
const MaxCPUID = 1<<16 - 1

// ParseCPUList parses a kernel CPU list ("0-3,8,10-11", as in cpuset.cpus, /sys/devices/system/cpu/online, or a
// container runtime's request), refusing CPU numbers above MaxCPUID before anything is built from them:
// cpuset.Parse itself would build a set of every CPU of "0-99999999999" and never return.
func ParseCPUList(s string) (cpuset.CPUSet, error) {
	s = strings.TrimSpace(s)
	for r := range strings.SplitSeq(s, ",") {
		for _, n := range strings.SplitN(r, "-", 2) {
			if n == "" {
				continue // an empty list, or a malformed range cpuset.Parse refuses
			}
			id, err := strconv.ParseUint(n, 10, 64)
			if err != nil {
				return cpuset.CPUSet{}, fmt.Errorf("CPU list %q: %q is not a CPU number", truncate(s), n)
			}
			if id > MaxCPUID {
				return cpuset.CPUSet{}, fmt.Errorf("CPU list %q: CPU %d is above %d", truncate(s), id, MaxCPUID)
			}
		}
	}
	set, err := cpuset.Parse(s)
	if err != nil {
		return cpuset.CPUSet{}, fmt.Errorf("CPU list %q: %w", truncate(s), err)
	}
	return set, nil
}

// truncate shortens s for an error message.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
