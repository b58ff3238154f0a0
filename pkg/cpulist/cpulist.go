package cpulist

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"
)

// MaxID is the largest CPU number a CPU list may name: far above any kernel's NR_CPUS (8,192 at most), low enough
// that a list naming every CPU up to it is small.
const MaxID = 1<<16 - 1

// Parse parses a kernel CPU list ("0-3,8,10-11", as in cpuset.cpus, /sys/devices/system/cpu/online, a container
// runtime's request or a node-reservation annotation's reservedCPUs), bounding the work before anything is built:
// CPU numbers above MaxID are refused (cpuset.Parse itself would build a set of every CPU of "0-99999999999" and
// never return), and so is a list whose ranges name more than MaxID+1 CPUs in all, counting overlaps ("0-65535"
// repeated 1,000 times in 8 KB took cpuset.Parse 1.5 s, and an annotation may hold 256 KiB). The kernel writes
// lists without overlaps, so no list it writes is refused.
func Parse(s string) (cpuset.CPUSet, error) {
	s = strings.TrimSpace(s)
	var named uint64
	for r := range strings.SplitSeq(s, ",") {
		bounds := strings.SplitN(r, "-", 2)
		var ids [2]uint64
		for i, n := range bounds {
			if n == "" {
				continue // an empty list, or a malformed range cpuset.Parse refuses
			}
			id, err := strconv.ParseUint(n, 10, 64)
			if err != nil {
				return cpuset.CPUSet{}, fmt.Errorf("CPU list %q: %q is not a CPU number", truncate(s), n)
			}
			if id > MaxID {
				return cpuset.CPUSet{}, fmt.Errorf("CPU list %q: CPU %d is above %d", truncate(s), id, MaxID)
			}
			ids[i] = id
		}
		if len(bounds) == 2 && ids[1] > ids[0] {
			named += ids[1] - ids[0] + 1
		} else {
			named++
		}
		if named > MaxID+1 {
			return cpuset.CPUSet{}, fmt.Errorf("CPU list %q: its ranges name more than %d CPUs (overlapping ranges?)", truncate(s), MaxID+1)
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
