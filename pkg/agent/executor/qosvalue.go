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

// memoryBytes is a byte amount in one memory file of the cgroup (negative is "max"); F says which file. MemoryMin,
// MemoryLow and MemoryHigh are its instances: a new file of this shape is one more memoryFile, not one more value
// type.
type memoryBytes[F memoryFile] int64

// memoryFile is a memory file holding bytes or "max", with its Resource and the cgroup methods that read and write
// it.
type memoryFile interface {
	resource() Resource
	get(r cgroup.Reader, dir string) (int64, error)
	set(w cgroup.Writer, dir string, bytes int64) error
}

type (
	minFile  struct{}
	lowFile  struct{}
	highFile struct{}
)

func (minFile) resource() Resource                                 { return ResourceMemoryMin }
func (minFile) get(r cgroup.Reader, dir string) (int64, error)     { return r.MemoryMin(dir) }
func (minFile) set(w cgroup.Writer, dir string, bytes int64) error { return w.SetMemoryMin(dir, bytes) }

func (lowFile) resource() Resource                                 { return ResourceMemoryLow }
func (lowFile) get(r cgroup.Reader, dir string) (int64, error)     { return r.MemoryLow(dir) }
func (lowFile) set(w cgroup.Writer, dir string, bytes int64) error { return w.SetMemoryLow(dir, bytes) }

func (highFile) resource() Resource                             { return ResourceMemoryHigh }
func (highFile) get(r cgroup.Reader, dir string) (int64, error) { return r.MemoryHigh(dir) }
func (highFile) set(w cgroup.Writer, dir string, bytes int64) error {
	return w.SetMemoryHigh(dir, bytes)
}

// MemoryMin is memory.min in bytes; negative is "max".
type MemoryMin = memoryBytes[minFile]

// MemoryLow is memory.low in bytes; negative is "max".
type MemoryLow = memoryBytes[lowFile]

// MemoryHigh is memory.high in bytes; negative is "max" (no throttling).
type MemoryHigh = memoryBytes[highFile]

// Resource implements Value.
func (memoryBytes[F]) Resource() Resource {
	var f F
	return f.resource()
}

func (m memoryBytes[F]) String() string { return maxString(int64(m)) }

func (m memoryBytes[F]) write(t targets, dir string) error {
	var f F
	return f.set(t.cgroup, dir, int64(m))
}

func (memoryBytes[F]) read(t targets, dir string) (Value, error) {
	var f F
	v, err := f.get(t.cgroup, dir)
	return memoryBytes[F](v), err
}

// relax: more is written parents first, less children first, as compareCores orders them. memory.min and
// memory.low: the kernel accepts a child claiming more protection than its parent has (it caps the effective
// value), but in the meantime the child is less protected than asked, so the QoS parents (kubepods, burstable,
// besteffort) always cover their pods. memory.high: a parent's throttles its children too.
func (m memoryBytes[F]) relax(old Value) int {
	o, ok := old.(memoryBytes[F])
	if !ok {
		return 0
	}
	return compareCores(float64(m), float64(o))
}

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
