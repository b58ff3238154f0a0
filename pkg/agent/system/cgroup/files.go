package cgroup

import "github.com/gleaner-sh/gleaner/pkg/agent/system"

// file is one value the agent reads or writes, and fileNames is the v1 -> v2 mapping:
//
//	value            v1 (subsystem/file)               v2 file
//	CPU usage        cpuacct/cpuacct.usage (ns)        cpu.stat usage_usec
//	CPU stat         cpu/cpu.stat                      cpu.stat (nr_periods, nr_throttled, throttled_usec)
//	CPU quota        cpu/cpu.cfs_quota_us + period     cpu.max "<quota|max> <period>"
//	CPU period       cpu/cpu.cfs_period_us             cpu.max
//	CPU weight       cpu/cpu.shares                    cpu.weight (converted, see SharesToWeight)
//	CPU burst        cpu/cpu.cfs_burst_us              cpu.max.burst
//	CPU set (read)   cpuset/cpuset.effective_cpus      cpuset.cpus.effective
//	CPU set (write)  cpuset/cpuset.cpus                cpuset.cpus
//	memory stat      memory/memory.stat (total_*)      memory.stat
//	memory limit     memory/memory.limit_in_bytes      memory.max
//	pressure         (none)                            cpu.pressure, memory.pressure, io.pressure
type file int

const (
	fileCPUUsage file = iota
	fileCPUStat
	fileCPUQuota
	fileCPUPeriod
	fileCPUShares
	fileCPUBurst
	fileCPUSetEffective
	fileCPUSet
	fileMemoryStat
	fileMemoryLimit
	fileCPUPressure
	fileMemoryPressure
	fileIOPressure
)

// fileNames returns the v1 subsystem and file name and the v2 file name of f; an empty name means the version
// has no such file.
func fileNames(f file) (v1Subsystem, v1Name, v2Name string) {
	switch f {
	case fileCPUUsage:
		return "cpuacct", "cpuacct.usage", "cpu.stat"
	case fileCPUStat:
		return "cpu", "cpu.stat", "cpu.stat"
	case fileCPUQuota:
		return "cpu", "cpu.cfs_quota_us", "cpu.max"
	case fileCPUPeriod:
		return "cpu", "cpu.cfs_period_us", "cpu.max"
	case fileCPUShares:
		return "cpu", "cpu.shares", "cpu.weight"
	case fileCPUBurst:
		return "cpu", "cpu.cfs_burst_us", "cpu.max.burst"
	case fileCPUSetEffective:
		return "cpuset", "cpuset.effective_cpus", "cpuset.cpus.effective"
	case fileCPUSet:
		return "cpuset", "cpuset.cpus", "cpuset.cpus"
	case fileMemoryStat:
		return "memory", "memory.stat", "memory.stat"
	case fileMemoryLimit:
		return "memory", "memory.limit_in_bytes", "memory.max"
	case fileCPUPressure:
		return "", "", "cpu.pressure"
	case fileMemoryPressure:
		return "", "", "memory.pressure"
	case fileIOPressure:
		return "", "", "io.pressure"
	}
	panic("cgroup: unknown file") // a programmer's error: every file constant is listed above
}

func pressureFile(r system.PSIResource) (file, bool) {
	switch r {
	case system.PSICPU:
		return fileCPUPressure, true
	case system.PSIMemory:
		return fileMemoryPressure, true
	case system.PSIIO:
		return fileIOPressure, true
	}
	return 0, false
}

// V1Subsystems are the v1 hierarchies the agent uses, the directories under a v1 root.
func V1Subsystems() []string { return []string{"cpu", "cpuacct", "cpuset", "memory"} }

// SharesToWeight converts cgroup v1 cpu.shares (2..262144) to cgroup v2 cpu.weight (1..10000) with the linear
// rule of the Kubernetes cgroup v2 design (KEP-2254) and runc before 1.3.2:
// weight = 1 + (shares - 2) * 9999 / 262142. Newer runc and crun use a curve that maps 1024 to 100 instead; a
// weight written by them reads back through WeightToShares as a slightly different share count.
func SharesToWeight(shares uint64) uint64 {
	switch {
	case shares < MinShares:
		shares = MinShares
	case shares > MaxShares:
		shares = MaxShares
	}
	return 1 + (shares-2)*9999/262142
}

// WeightToShares is the inverse of SharesToWeight: shares = 2 + (weight - 1) * 262142 / 9999.
func WeightToShares(weight uint64) uint64 {
	switch {
	case weight < 1:
		weight = 1
	case weight > 10000:
		weight = 10000
	}
	return 2 + (weight-1)*262142/9999
}
