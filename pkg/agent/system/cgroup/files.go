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
//	CPU idle         cpu/cpu.idle                      cpu.idle (both since 5.15)
//	memory min       (none upstream)                   memory.min
//	memory low       (none upstream)                   memory.low
//	memory high      (none upstream)                   memory.high
//	OOM group        (none upstream)                   memory.oom.group
//	I/O limits       blkio/blkio.throttle.{read,write}_{bps,iops}_device    io.max
//	I/O weight       blkio/blkio.bfq.weight (BFQ)      io.weight
//	I/O bytes        blkio/blkio.throttle.io_service_bytes_recursive        io.stat
//	I/O operations   blkio/blkio.throttle.io_serviced_recursive             io.stat
//	idle pages       memory/memory.idle_page_stats (kidled kernels only, v1 and v2)
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
	fileCPUIdle
	fileMemoryMin
	fileMemoryLow
	fileMemoryHigh
	fileMemoryOOMGroup
	fileIOReadBPS
	fileIOWriteBPS
	fileIOReadIOPS
	fileIOWriteIOPS
	fileIOWeight
	fileIOServiceBytes
	fileIOServiced
	fileIdlePageStats
)

// fileName is where one value lives: the v1 subsystem and file, and the v2 file; an empty name means the version
// has no such file.
type fileName struct{ v1Subsystem, v1, v2 string }

// fileTable lists every file constant; fileNames panics on one missing here (a programmer's error).
var fileTable = [...]fileName{
	fileCPUUsage:        {"cpuacct", "cpuacct.usage", "cpu.stat"},
	fileCPUStat:         {"cpu", "cpu.stat", "cpu.stat"},
	fileCPUQuota:        {"cpu", "cpu.cfs_quota_us", "cpu.max"},
	fileCPUPeriod:       {"cpu", "cpu.cfs_period_us", "cpu.max"},
	fileCPUShares:       {"cpu", "cpu.shares", "cpu.weight"},
	fileCPUBurst:        {"cpu", "cpu.cfs_burst_us", "cpu.max.burst"},
	fileCPUSetEffective: {"cpuset", "cpuset.effective_cpus", "cpuset.cpus.effective"},
	fileCPUSet:          {"cpuset", "cpuset.cpus", "cpuset.cpus"},
	fileMemoryStat:      {"memory", "memory.stat", "memory.stat"},
	fileMemoryLimit:     {"memory", "memory.limit_in_bytes", "memory.max"},
	fileCPUPressure:     {"", "", "cpu.pressure"},
	fileMemoryPressure:  {"", "", "memory.pressure"},
	fileIOPressure:      {"", "", "io.pressure"},
	fileCPUIdle:         {"cpu", "cpu.idle", "cpu.idle"},
	fileMemoryMin:       {"", "", "memory.min"},
	fileMemoryLow:       {"", "", "memory.low"},
	fileMemoryHigh:      {"", "", "memory.high"},
	fileMemoryOOMGroup:  {"", "", "memory.oom.group"},
	fileIOReadBPS:       {"blkio", "blkio.throttle.read_bps_device", "io.max"},
	fileIOWriteBPS:      {"blkio", "blkio.throttle.write_bps_device", "io.max"},
	fileIOReadIOPS:      {"blkio", "blkio.throttle.read_iops_device", "io.max"},
	fileIOWriteIOPS:     {"blkio", "blkio.throttle.write_iops_device", "io.max"},
	fileIOWeight:        {"blkio", "blkio.bfq.weight", "io.weight"},
	fileIOServiceBytes:  {"blkio", "blkio.throttle.io_service_bytes_recursive", "io.stat"},
	fileIOServiced:      {"blkio", "blkio.throttle.io_serviced_recursive", "io.stat"},
	fileIdlePageStats:   {"memory", "memory.idle_page_stats", "memory.idle_page_stats"},
}

// fileNames returns the v1 subsystem and file name and the v2 file name of f; an empty name means the version
// has no such file.
func fileNames(f file) (v1Subsystem, v1Name, v2Name string) {
	n := fileTable[f]
	if n.v1 == "" && n.v2 == "" {
		panic("cgroup: unknown file") // a programmer's error: every file constant is listed in fileTable
	}
	return n.v1Subsystem, n.v1, n.v2
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
func V1Subsystems() []string { return []string{"cpu", "cpuacct", "cpuset", "memory", "blkio"} }

// SharesToWeight converts cgroup v1 cpu.shares (2..262144) to cgroup v2 cpu.weight (1..10000) with the linear
// rule of the Kubernetes cgroup v2 design (KEP-2254) and runc before 1.3.2:
// weight = 1 + (shares - 2) * 9999 / 262142, the kubelet's own for pod and QoS cgroups (its getCPUWeight, v1.36).
// Newer runc and crun use a curve that maps 1024 to 100 for containers instead; a weight written by them reads back
// through WeightToShares as a different share count.
func SharesToWeight(shares uint64) uint64 {
	switch {
	case shares < MinShares:
		shares = MinShares
	case shares > MaxShares:
		shares = MaxShares
	}
	return 1 + (shares-2)*9999/262142
}

// WeightToShares is the inverse of SharesToWeight: the fewest shares with that weight,
// shares = 2 + ceil((weight - 1) * 262142 / 9999), so that SharesToWeight(WeightToShares(w)) is w.
func WeightToShares(weight uint64) uint64 {
	switch {
	case weight < 1:
		weight = 1
	case weight > 10000:
		weight = 10000
	}
	return 2 + ((weight-1)*262142+9998)/9999
}
