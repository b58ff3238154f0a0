package executor

import (
	"strconv"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// The QoS tuning resources: CPU idle, memory protection and throttling, block I/O.
const (
	// ResourceCPUIdle is cpu.idle (v1 and v2).
	ResourceCPUIdle Resource = "cpu.idle"
	// ResourceMemoryMin is memory.min (v2 only upstream).
	ResourceMemoryMin Resource = "memory.min"
	// ResourceMemoryLow is memory.low (v2 only upstream).
	ResourceMemoryLow Resource = "memory.low"
	// ResourceMemoryHigh is memory.high (v2 only upstream).
	ResourceMemoryHigh Resource = "memory.high"
	// ResourceMemoryOOMGroup is memory.oom.group (v2 only upstream).
	ResourceMemoryOOMGroup Resource = "memory.oom.group"
	// ResourceIOLimit is one device's caps: blkio.throttle.*_device (v1) or its line of io.max (v2).
	ResourceIOLimit Resource = "blkio.throttle"
	// ResourceIOWeight is blkio.bfq.weight (v1) or io.weight (v2).
	ResourceIOWeight Resource = "blkio.bfq.weight"
)

// CPUIdle is cpu.idle: true runs the cgroup's tasks as SCHED_IDLE against their siblings.
type CPUIdle bool

// Resource implements Value.
func (CPUIdle) Resource() Resource { return ResourceCPUIdle }

func (c CPUIdle) String() string { return boolString(bool(c)) }

func (c CPUIdle) write(t targets, dir string) error { return t.cgroup.SetCPUIdle(dir, bool(c)) }

func (CPUIdle) read(t targets, dir string) (Value, error) {
	v, err := t.cgroup.CPUIdle(dir)
	return CPUIdle(v), err
}

// relax: the kernel puts no order between a parent's and a child's cpu.idle.
func (CPUIdle) relax(Value) int { return 0 }

// MemoryMin is memory.min in bytes; negative is "max".
type MemoryMin int64

// Resource implements Value.
func (MemoryMin) Resource() Resource { return ResourceMemoryMin }

func (m MemoryMin) String() string { return maxString(int64(m)) }

func (m MemoryMin) write(t targets, dir string) error { return t.cgroup.SetMemoryMin(dir, int64(m)) }

func (MemoryMin) read(t targets, dir string) (Value, error) {
	v, err := t.cgroup.MemoryMin(dir)
	return MemoryMin(v), err
}

// relax: the kernel accepts a child claiming more protection than its parent has (it caps the effective value),
// but in the meantime the child is less protected than asked. More protection is written parents first, less
// children first, so that the QoS parents (kubepods, burstable, besteffort) always cover their pods.
func (m MemoryMin) relax(old Value) int { return compareLimits(int64(m), old) }

// MemoryLow is memory.low in bytes; negative is "max".
type MemoryLow int64

// Resource implements Value.
func (MemoryLow) Resource() Resource { return ResourceMemoryLow }

func (m MemoryLow) String() string { return maxString(int64(m)) }

func (m MemoryLow) write(t targets, dir string) error { return t.cgroup.SetMemoryLow(dir, int64(m)) }

func (MemoryLow) read(t targets, dir string) (Value, error) {
	v, err := t.cgroup.MemoryLow(dir)
	return MemoryLow(v), err
}

// relax: as MemoryMin.
func (m MemoryLow) relax(old Value) int { return compareLimits(int64(m), old) }

// MemoryHigh is memory.high in bytes; negative is "max" (no throttling).
type MemoryHigh int64

// Resource implements Value.
func (MemoryHigh) Resource() Resource { return ResourceMemoryHigh }

func (m MemoryHigh) String() string { return maxString(int64(m)) }

func (m MemoryHigh) write(t targets, dir string) error { return t.cgroup.SetMemoryHigh(dir, int64(m)) }

func (MemoryHigh) read(t targets, dir string) (Value, error) {
	v, err := t.cgroup.MemoryHigh(dir)
	return MemoryHigh(v), err
}

// relax: a parent's memory.high throttles its children too, so a higher value is written parents first.
func (m MemoryHigh) relax(old Value) int { return compareLimits(int64(m), old) }

// MemoryOOMGroup is memory.oom.group.
type MemoryOOMGroup bool

// Resource implements Value.
func (MemoryOOMGroup) Resource() Resource { return ResourceMemoryOOMGroup }

func (g MemoryOOMGroup) String() string { return boolString(bool(g)) }

func (g MemoryOOMGroup) write(t targets, dir string) error {
	return t.cgroup.SetMemoryOOMGroup(dir, bool(g))
}

func (MemoryOOMGroup) read(t targets, dir string) (Value, error) {
	v, err := t.cgroup.MemoryOOMGroup(dir)
	return MemoryOOMGroup(v), err
}

// relax: no order.
func (MemoryOOMGroup) relax(Value) int { return 0 }

// IOLimit is the I/O caps of one device; each device of a cgroup is held on its own. A zero IOLimit removes every
// cap of the device.
type IOLimit struct {
	// Device is the block device.
	Device cgroup.Device
	// Limit holds the caps; a zero field is no cap.
	Limit cgroup.IOLimit
}

// Resource implements Value.
func (IOLimit) Resource() Resource { return ResourceIOLimit }

// instance tells the devices of one cgroup apart.
func (l IOLimit) instance() string { return l.Device.String() }

func (l IOLimit) String() string {
	n := func(v uint64) string {
		if v == 0 {
			return "max"
		}
		return strconv.FormatUint(v, 10)
	}
	return l.Device.String() + " rbps=" + n(l.Limit.ReadBPS) + " wbps=" + n(l.Limit.WriteBPS) +
		" riops=" + n(l.Limit.ReadIOPS) + " wiops=" + n(l.Limit.WriteIOPS)
}

func (l IOLimit) write(t targets, dir string) error {
	return t.cgroup.SetIOLimit(dir, l.Device, l.Limit)
}

func (l IOLimit) read(t targets, dir string) (Value, error) {
	all, err := t.cgroup.IOLimits(dir)
	return IOLimit{Device: l.Device, Limit: all[l.Device]}, err
}

// relax: throttling is hierarchical (a child is held to the tighter of its own and its parents' caps) but the kernel
// accepts any order of writes.
func (IOLimit) relax(Value) int { return 0 }

// IOWeight is the proportional I/O weight, default 100.
type IOWeight uint64

// Resource implements Value.
func (IOWeight) Resource() Resource { return ResourceIOWeight }

func (w IOWeight) String() string { return strconv.FormatUint(uint64(w), 10) }

func (w IOWeight) write(t targets, dir string) error { return t.cgroup.SetIOWeight(dir, uint64(w)) }

func (IOWeight) read(t targets, dir string) (Value, error) {
	v, err := t.cgroup.IOWeight(dir)
	return IOWeight(v), err
}

// relax: weights are relative among siblings; no order.
func (IOWeight) relax(Value) int { return 0 }

// compareLimits orders two byte amounts of one kind, negative meaning "max", as compareCores does.
func compareLimits(v int64, old Value) int {
	var o int64
	switch x := old.(type) {
	case MemoryMin:
		o = int64(x)
	case MemoryLow:
		o = int64(x)
	case MemoryHigh:
		o = int64(x)
	default:
		return 0
	}
	return compareCores(float64(v), float64(o))
}

func boolString(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func maxString(n int64) string {
	if n < 0 {
		return "max"
	}
	return strconv.FormatInt(n, 10)
}
