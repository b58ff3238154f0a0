package cgroup

import (
	"strconv"
	"time"

	"github.com/prometheus/procfs"
	"k8s.io/utils/cpuset"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// Reader reads the cgroup values gleaner-agent uses, with the same meaning on cgroup v1 and v2.
//
// dir is a cgroup path relative to the hierarchy root, as Layout returns it; "" is the root cgroup. Every method
// reads the kernel's current value; nothing is cached. Errors:
//   - the cgroup does not exist (the pod or container is gone): the error wraps fs.ErrNotExist;
//   - the cgroup exists but this kernel or cgroup version lacks the file: the error wraps system.ErrUnsupported;
//   - the file cannot be parsed: an error naming the file.
//
// Implementations are safe for concurrent use.
type Reader interface {
	// CPUUsage is the cumulative CPU time of the cgroup's tasks, children included: cpuacct.usage (v1) or
	// usage_usec of cpu.stat (v2).
	CPUUsage(dir string) (time.Duration, error)
	// CPUStat is the CFS bandwidth statistics of cpu.stat: periods, throttled periods and throttled time.
	CPUStat(dir string) (CPUStat, error)
	// CPUQuota is the CFS bandwidth limit: cpu.cfs_quota_us and cpu.cfs_period_us (v1) or cpu.max (v2).
	CPUQuota(dir string) (CPUQuota, error)
	// CPUShares is the CPU weight in cgroup v1 shares (2..262144): cpu.shares (v1) or cpu.weight converted
	// with WeightToShares (v2).
	CPUShares(dir string) (uint64, error)
	// CPUBurst is the CFS burst: cpu.cfs_burst_us (v1) or cpu.max.burst (v2). Kernels before 5.14 lack it.
	CPUBurst(dir string) (time.Duration, error)
	// CPUSet is the set of CPUs the cgroup's tasks may run on: cpuset.effective_cpus (v1) or
	// cpuset.cpus.effective (v2).
	CPUSet(dir string) (cpuset.CPUSet, error)
	// MemoryStat is memory.stat, hierarchical (the total_* fields on v1).
	MemoryStat(dir string) (MemoryStat, error)
	// MemoryLimit is the memory limit in bytes, -1 for none: memory.limit_in_bytes (v1) or memory.max (v2).
	MemoryLimit(dir string) (int64, error)
	// Pressure is the cgroup's pressure stall information, <r>.pressure. cgroup v1 has none: the error wraps
	// system.ErrUnsupported.
	Pressure(dir string, r system.PSIResource) (procfs.PSIStats, error)
	// CPUIdle says whether the cgroup's tasks run as SCHED_IDLE against their siblings: cpu.idle (v1 and v2,
	// kernels since 5.15).
	CPUIdle(dir string) (bool, error)
	// MemoryMin is the memory the kernel never reclaims from the cgroup, bytes, -1 for all of it: memory.min
	// (v2; upstream v1 has none).
	MemoryMin(dir string) (int64, error)
	// MemoryLow is the memory the kernel reclaims from the cgroup only when nothing else is left, bytes, -1 for
	// all of it: memory.low (v2; upstream v1 has none).
	MemoryLow(dir string) (int64, error)
	// MemoryHigh is the usage above which the cgroup's tasks are throttled and reclaimed from, bytes, -1 for none:
	// memory.high (v2; upstream v1 has none).
	MemoryHigh(dir string) (int64, error)
	// MemoryOOMGroup says whether the OOM killer kills the cgroup's tasks together: memory.oom.group (v2; upstream
	// v1 has none).
	MemoryOOMGroup(dir string) (bool, error)
	// IOLimits are the cgroup's I/O caps by device: blkio.throttle.{read,write}_{bps,iops}_device (v1) or io.max
	// (v2). Devices without a cap are absent.
	IOLimits(dir string) (map[Device]IOLimit, error)
	// IOWeight is the cgroup's proportional I/O weight, default 100: blkio.bfq.weight (v1, BFQ, 1..1000) or the
	// default of io.weight (v2, 1..10000).
	IOWeight(dir string) (uint64, error)
	// IOStats is the cgroup's cumulative I/O by device, children included: blkio.throttle.io_service_bytes_recursive
	// and io_serviced_recursive (v1) or io.stat (v2). Devices without I/O may be absent.
	IOStats(dir string) (map[Device]IOStat, error)
	// Children are the names of the cgroups directly below dir, sorted: the directories of dir in the cpu hierarchy
	// (v1) or the unified one (v2). What exists in the kernel, not what the kubelet reports: a container's cgroup is
	// there from runc's creating it, before its status says it runs.
	Children(dir string) ([]string, error)
	// IdlePageStats is the kidled histogram of the cgroup's idle pages, memory.idle_page_stats: Anolis-like
	// kernels only; elsewhere the error wraps system.ErrUnsupported.
	IdlePageStats(dir string) (IdlePageStats, error)
}

// Writer sets the cgroup values gleaner-agent controls, with the same meaning on cgroup v1 and v2.
//
// dir is as for Reader. A Writer never creates a file or a cgroup: a missing cgroup is an error wrapping
// fs.ErrNotExist, a file this kernel lacks an error wrapping system.ErrUnsupported. Writing the value a file already
// holds is harmless, so every method is idempotent. The kernel may refuse a value (a quota below a child's on v1,
// a cpuset outside the parent's): that is returned as the write error.
type Writer interface {
	// SetCPUQuota writes the CFS bandwidth limit; a negative Quota removes it. On v1 the period is written first.
	SetCPUQuota(dir string, q CPUQuota) error
	// SetCPUShares writes the CPU weight given in v1 shares; on v2 it is converted with SharesToWeight.
	SetCPUShares(dir string, shares uint64) error
	// SetCPUBurst writes the CFS burst.
	SetCPUBurst(dir string, burst time.Duration) error
	// SetCPUSet writes cpuset.cpus.
	SetCPUSet(dir string, cpus cpuset.CPUSet) error
	// SetMemoryLimit writes the memory limit in bytes; a negative limit removes it.
	SetMemoryLimit(dir string, limit int64) error
	// SetCPUIdle writes cpu.idle.
	SetCPUIdle(dir string, idle bool) error
	// SetMemoryMin writes memory.min in bytes; a negative value protects everything ("max").
	SetMemoryMin(dir string, bytes int64) error
	// SetMemoryLow writes memory.low in bytes; a negative value protects everything ("max").
	SetMemoryLow(dir string, bytes int64) error
	// SetMemoryHigh writes memory.high in bytes; a negative value removes it ("max").
	SetMemoryHigh(dir string, bytes int64) error
	// SetMemoryOOMGroup writes memory.oom.group.
	SetMemoryOOMGroup(dir string, group bool) error
	// SetIOLimit writes the I/O caps of one device; a zero field removes that cap. On v1 that is four files, on v2
	// one line of io.max.
	SetIOLimit(dir string, dev Device, l IOLimit) error
	// SetIOWeight writes the proportional I/O weight (default 100): blkio.bfq.weight (v1) or io.weight's default
	// (v2).
	SetIOWeight(dir string, weight uint64) error
}

// Device is a block device by its numbers, as cgroup files name it ("8:0").
type Device struct {
	// Major and Minor are the device numbers.
	Major, Minor uint32
}

func (d Device) String() string {
	return strconv.FormatUint(uint64(d.Major), 10) + ":" + strconv.FormatUint(uint64(d.Minor), 10)
}

// IOLimit caps a cgroup's I/O on one device; a zero field is no cap.
type IOLimit struct {
	// ReadBPS and WriteBPS are bytes per second.
	ReadBPS, WriteBPS uint64
	// ReadIOPS and WriteIOPS are operations per second.
	ReadIOPS, WriteIOPS uint64
}

// ReadWriter is a Reader and a Writer.
type ReadWriter interface {
	Reader
	Writer
}

// CPUStat is the CFS bandwidth statistics of a cgroup.
type CPUStat struct {
	// Periods is the number of enforcement periods in which the cgroup was runnable (nr_periods).
	Periods uint64
	// ThrottledPeriods is the number of those periods in which it hit its quota (nr_throttled).
	ThrottledPeriods uint64
	// ThrottledTime is the total time its tasks were throttled (throttled_time, throttled_usec).
	ThrottledTime time.Duration
}

// ThrottledRatio is the share of periods between prev and s in which the cgroup was throttled, 0 when no period
// passed (or the counters went back, as after the cgroup was recreated).
func (s CPUStat) ThrottledRatio(prev CPUStat) float64 {
	if s.Periods <= prev.Periods || s.ThrottledPeriods < prev.ThrottledPeriods {
		return 0
	}
	return float64(s.ThrottledPeriods-prev.ThrottledPeriods) / float64(s.Periods-prev.Periods)
}

// CPUQuota is a CFS bandwidth limit: the cgroup may run Quota of CPU time every Period.
type CPUQuota struct {
	// Quota is the CPU time per period; negative means unlimited.
	Quota time.Duration
	// Period is the enforcement period.
	Period time.Duration
}

// Unlimited reports whether the quota sets no limit.
func (q CPUQuota) Unlimited() bool { return q.Quota < 0 || q.Period <= 0 }

// Cores is the limit in CPUs (Quota / Period), or -1 when unlimited.
func (q CPUQuota) Cores() float64 {
	if q.Unlimited() {
		return -1
	}
	return float64(q.Quota) / float64(q.Period)
}

// MemoryStat is the part of memory.stat the agent uses, in bytes, children included.
type MemoryStat struct {
	// ActiveAnon and InactiveAnon are anonymous memory (process heap, stack, shared memory not backed by a file).
	ActiveAnon, InactiveAnon uint64
	// ActiveFile and InactiveFile are the page cache split by the kernel's LRU lists.
	ActiveFile, InactiveFile uint64
	// Unevictable is memory the kernel cannot reclaim (mlocked, ramfs).
	Unevictable uint64
	// Cache is the page cache (total_cache on v1, file on v2).
	Cache uint64
	// Shmem is shared memory and tmpfs, which the kernel counts as page cache but cannot drop.
	Shmem uint64
}

// Usage is the memory the cgroup uses without page cache: anonymous memory plus unevictable memory. It is what
// the agent reports as a pod's memory usage: page cache is dropped under pressure and does not need a reservation.
func (m MemoryStat) Usage() uint64 { return m.ActiveAnon + m.InactiveAnon + m.Unevictable }
