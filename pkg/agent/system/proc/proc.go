package proc

// The files this package reads, as the kernel writes them (procfs parses them):
//
// /proc/stat, times in USER_HZ ticks (1/100 s) per column: user nice system idle iowait irq softirq steal guest
// guest_nice; guest time is already counted in user:
//
//	cpu  4705 356 584 3699 23 23 0 0 0 0
//	cpu0 1393 280 32 1813 10 12 0 0 0 0
//	intr 1143 40 0 0
//	ctxt 18466
//	btime 1700000000
//
// /proc/meminfo, kB:
//
//	MemTotal:       24684160 kB
//	MemFree:        23992272 kB
//	MemAvailable:   24238820 kB
//	Buffers:           21424 kB
//	Cached:           509732 kB
//
// /proc/pressure/{cpu,memory,io}, averages in percent, total stall time in microseconds:
//
//	some avg10=0.88 avg60=1.70 avg300=10.31 total=294982350
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"syscall"
	"time"

	"github.com/prometheus/procfs"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// FS reads a /proc tree.
type FS struct {
	root string
	fs   procfs.FS
}

// New returns an FS rooted at root (normally "/proc"). It fails when root is not a directory.
func New(root string) (*FS, error) {
	p, err := procfs.NewFS(root)
	if err != nil {
		return nil, fmt.Errorf("opening the proc filesystem at %s: %w", root, err)
	}
	return &FS{root: root, fs: p}, nil
}

// Root is the directory the FS reads.
func (f *FS) Root() string { return f.root }

// CPUTime is the node's cumulative CPU time since boot, summed over all CPUs.
type CPUTime struct {
	// Busy is user + nice + system + irq + softirq: time the CPUs spent running anything. iowait, idle and steal
	// are not busy; guest time is inside user already.
	Busy time.Duration
	// Total is the sum of every column but guest and guest_nice (which user and nice already contain).
	Total time.Duration
	// CPUs is the number of CPUs /proc/stat lists (the online ones).
	CPUs int
}

// CPUTime reads /proc/stat.
func (f *FS) CPUTime() (CPUTime, error) {
	st, err := guard(f.fs.Stat)
	if err != nil {
		return CPUTime{}, fmt.Errorf("reading %s/stat: %w", f.root, err)
	}
	if len(st.CPU) == 0 {
		return CPUTime{}, fmt.Errorf("reading %s/stat: no per-CPU lines", f.root)
	}
	c := st.CPUTotal
	busy := c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ
	total := busy + c.Idle + c.Iowait + c.Steal
	return CPUTime{Busy: seconds(busy), Total: seconds(total), CPUs: len(st.CPU)}, nil
}

// MemInfo is the part of /proc/meminfo the agent uses, in bytes.
type MemInfo struct {
	// Total is MemTotal.
	Total uint64
	// Available is MemAvailable: what could be allocated without swapping, page cache that can be dropped
	// included.
	Available uint64
	// Free is MemFree.
	Free uint64
	// Cached is Cached: the page cache (without Buffers).
	Cached uint64
	// Buffers is Buffers.
	Buffers uint64
}

// Used is Total - Available: memory in use that the kernel cannot simply drop, the agent's node memory usage.
func (m MemInfo) Used() uint64 {
	if m.Available > m.Total {
		return 0
	}
	return m.Total - m.Available
}

// MemInfo reads /proc/meminfo. MemTotal and MemAvailable (kernel 3.14+) must be present.
func (f *FS) MemInfo() (MemInfo, error) {
	m, err := guard(f.fs.Meminfo)
	if err != nil {
		return MemInfo{}, fmt.Errorf("reading %s/meminfo: %w", f.root, err)
	}
	if m.MemTotalBytes == nil || m.MemAvailableBytes == nil {
		return MemInfo{}, fmt.Errorf("reading %s/meminfo: MemTotal or MemAvailable missing", f.root)
	}
	return MemInfo{
		Total:     *m.MemTotalBytes,
		Available: *m.MemAvailableBytes,
		Free:      deref(m.MemFreeBytes),
		Cached:    deref(m.CachedBytes),
		Buffers:   deref(m.BuffersBytes),
	}, nil
}

// Pressure reads /proc/pressure/<r>. A kernel without PSI (no file, or PSI disabled at boot) gives an error
// wrapping system.ErrUnsupported. Full is nil where the kernel has no "full" line (cpu before 5.13).
func (f *FS) Pressure(r system.PSIResource) (procfs.PSIStats, error) {
	s, err := guard(func() (procfs.PSIStats, error) { return f.fs.PSIStatsForResource(string(r)) })
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EOPNOTSUPP) {
			return procfs.PSIStats{}, fmt.Errorf("reading %s/pressure/%s: %w (%s)", f.root, r, system.ErrUnsupported, err.Error())
		}
		return procfs.PSIStats{}, fmt.Errorf("reading %s/pressure/%s: %w", f.root, r, err)
	}
	if s.Some == nil {
		return procfs.PSIStats{}, fmt.Errorf("reading %s/pressure/%s: no \"some\" line", f.root, r)
	}
	return s, nil
}

// guard turns a panic inside procfs (it indexes fields of malformed lines unchecked) into an error, so a corrupt
// file costs one sample, not the agent.
func guard[T any](read func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed file: %v", r)
		}
	}()
	return read()
}

// seconds converts procfs's float seconds back to a Duration, rounding away the float error of the tick division.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}
