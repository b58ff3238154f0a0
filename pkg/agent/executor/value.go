package executor

import (
	"strconv"
	"time"

	"k8s.io/utils/cpuset"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// Resource names a kind of value the executor writes: the cgroup v1 file (cgroup.FS maps it to its v2
// equivalent). It labels metrics and audit records.
type Resource string

// The resources the executor writes.
const (
	// ResourceCPUQuota is cpu.cfs_quota_us with cpu.cfs_period_us (v2: cpu.max).
	ResourceCPUQuota Resource = "cpu.cfs_quota_us"
	// ResourceCPUShares is cpu.shares (v2: cpu.weight).
	ResourceCPUShares Resource = "cpu.shares"
	// ResourceCPUBurst is cpu.cfs_burst_us (v2: cpu.max.burst).
	ResourceCPUBurst Resource = "cpu.cfs_burst_us"
	// ResourceCPUSet is cpuset.cpus.
	ResourceCPUSet Resource = "cpuset.cpus"
	// ResourceMemoryLimit is memory.limit_in_bytes (v2: memory.max).
	ResourceMemoryLimit Resource = "memory.limit_in_bytes"
)

// Value is one value of a cgroup file, as a plugin or the runtime hook wants it. The implementations are the types
// below; each knows how it is written and read, and which of two values of its kind confines a cgroup more, which
// decides the order of a batch (see Executor.Apply).
type Value interface {
	// Resource is the file the value belongs in.
	Resource() Resource
	// String is the value as the audit trail shows it.
	String() string

	write(t targets, dir string) error
	read(t targets, dir string) (Value, error)
	// relax compares the value with old, the one in the file: +1 when it confines less (parents must change
	// first), -1 when it confines more (children must change first), 0 when neither or unordered.
	relax(old Value) int
}

// CPUQuota is a CFS bandwidth limit; a negative Quota removes the limit.
type CPUQuota cgroup.CPUQuota

// Resource implements Value.
func (CPUQuota) Resource() Resource { return ResourceCPUQuota }

func (q CPUQuota) String() string {
	if cgroup.CPUQuota(q).Unlimited() {
		return "max " + strconv.FormatInt(q.Period.Microseconds(), 10)
	}
	return strconv.FormatInt(q.Quota.Microseconds(), 10) + " " + strconv.FormatInt(q.Period.Microseconds(), 10)
}

func (q CPUQuota) write(t targets, dir string) error {
	return t.cgroup.SetCPUQuota(dir, cgroup.CPUQuota(q))
}

func (CPUQuota) read(t targets, dir string) (Value, error) {
	q, err := t.cgroup.CPUQuota(dir)
	return CPUQuota(q), err
}

func (q CPUQuota) relax(old Value) int {
	o, ok := old.(CPUQuota)
	if !ok {
		return 0
	}
	return compareCores(cgroup.CPUQuota(q).Cores(), cgroup.CPUQuota(o).Cores())
}

// compareCores orders two limits in cores where -1 means unlimited.
func compareCores(v, old float64) int {
	switch {
	case v == old:
		return 0
	case v < 0:
		return 1
	case old < 0:
		return -1
	case v > old:
		return 1
	default:
		return -1
	}
}

// CPUShares is the CPU weight in cgroup v1 shares.
type CPUShares uint64

// Resource implements Value.
func (CPUShares) Resource() Resource { return ResourceCPUShares }

func (s CPUShares) String() string { return strconv.FormatUint(uint64(s), 10) }

func (s CPUShares) write(t targets, dir string) error { return t.cgroup.SetCPUShares(dir, uint64(s)) }

func (CPUShares) read(t targets, dir string) (Value, error) {
	s, err := t.cgroup.CPUShares(dir)
	return CPUShares(s), err
}

// relax: weights are relative among siblings; the kernel puts no order on parents and children.
func (CPUShares) relax(Value) int { return 0 }

// CPUBurst is the CFS burst.
type CPUBurst time.Duration

// Resource implements Value.
func (CPUBurst) Resource() Resource { return ResourceCPUBurst }

func (b CPUBurst) String() string { return strconv.FormatInt(time.Duration(b).Microseconds(), 10) }

func (b CPUBurst) write(t targets, dir string) error {
	return t.cgroup.SetCPUBurst(dir, time.Duration(b))
}

func (CPUBurst) read(t targets, dir string) (Value, error) {
	b, err := t.cgroup.CPUBurst(dir)
	return CPUBurst(b), err
}

// relax: the kernel requires burst <= quota of the same cgroup, not an order between cgroups; run writes a burst
// after the loosening quotas of its depth, so a quota raised in the same batch is there first.
func (CPUBurst) relax(Value) int { return 0 }

// CPUSet is a set of CPUs.
type CPUSet struct{ cpuset.CPUSet }

// NewCPUSet returns the CPUSet of cpus.
func NewCPUSet(cpus cpuset.CPUSet) CPUSet { return CPUSet{cpus} }

// Resource implements Value.
func (CPUSet) Resource() Resource { return ResourceCPUSet }

func (s CPUSet) String() string { return s.CPUSet.String() }

func (s CPUSet) write(t targets, dir string) error { return t.cgroup.SetCPUSet(dir, s.CPUSet) }

func (CPUSet) read(t targets, dir string) (Value, error) {
	s, err := t.cgroup.CPUSet(dir)
	return CPUSet{s}, err
}

func (s CPUSet) relax(old Value) int {
	o, ok := old.(CPUSet)
	switch {
	case !ok || s.Equals(o.CPUSet):
		return 0
	case o.IsSubsetOf(s.CPUSet):
		return 1
	case s.IsSubsetOf(o.CPUSet):
		return -1
	}
	// Neither contains the other: the executor widens to the union first, then narrows (see Apply).
	return 0
}

// MemoryLimit is a memory limit in bytes; negative removes it.
type MemoryLimit int64

// Resource implements Value.
func (MemoryLimit) Resource() Resource { return ResourceMemoryLimit }

func (m MemoryLimit) String() string {
	if m < 0 {
		return "max"
	}
	return strconv.FormatInt(int64(m), 10)
}

func (m MemoryLimit) write(t targets, dir string) error {
	return t.cgroup.SetMemoryLimit(dir, int64(m))
}

func (MemoryLimit) read(t targets, dir string) (Value, error) {
	m, err := t.cgroup.MemoryLimit(dir)
	return MemoryLimit(m), err
}

func (m MemoryLimit) relax(old Value) int {
	o, ok := old.(MemoryLimit)
	if !ok {
		return 0
	}
	return compareCores(float64(m), float64(o))
}
