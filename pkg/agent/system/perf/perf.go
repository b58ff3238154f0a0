package perf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// Events is the pair of events a group counts: the leader and one member, of one perf type.
type Events struct {
	// Name says what they are, for messages.
	Name string
	// Type is the perf event type (PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE).
	Type uint32
	// Leader and Member are the events' configs of that type.
	Leader, Member uint64
}

// CyclesInstructions are CPU cycles and retired instructions: the hardware counters CPI is made of.
var CyclesInstructions = Events{Name: "cycles and instructions", Type: unix.PERF_TYPE_HARDWARE,
	Leader: unix.PERF_COUNT_HW_CPU_CYCLES, Member: unix.PERF_COUNT_HW_INSTRUCTIONS}

// TaskClock is the cgroup's CPU time in nanoseconds (and its context switches): software events every kernel
// has, with the same per-CPU cgroup groups and reads as the hardware ones. Tests and benchmarks use them to
// exercise the machinery on machines without a PMU.
var TaskClock = Events{Name: "task clock and context switches", Type: unix.PERF_TYPE_SOFTWARE,
	Leader: unix.PERF_COUNT_SW_TASK_CLOCK, Member: unix.PERF_COUNT_SW_CONTEXT_SWITCHES}

// ErrNoCounters says the CPU or the hypervisor exposes no counters for the events (perf_event_open answers ENOENT
// or EOPNOTSUPP): a VM without a virtual PMU. It wraps system.ErrUnsupported.
var ErrNoCounters = fmt.Errorf("no hardware performance counters on this host: %w", system.ErrUnsupported)

// ErrForbidden says the kernel refuses the agent counters on every CPU (EACCES, EPERM): perf_event_paranoid is
// above 0 and the agent lacks CAP_PERFMON and CAP_SYS_ADMIN. It wraps system.ErrUnsupported.
var ErrForbidden = fmt.Errorf("counting a cgroup's events is forbidden: %w", system.ErrUnsupported)

// Probe checks that this host lets the agent count e on cgroups: that the events exist (else ErrNoCounters) and
// that CPU-wide counting is allowed (else ErrForbidden, naming perf_event_paranoid as read under procRoot). It
// opens two counters for a moment and closes them.
func Probe(e Events, procRoot string) error {
	// The events on this thread, user space only: allowed at any paranoid level below 3, so a failure here is
	// about the events themselves.
	fd, err := open(e.Type, e.Leader, unix.PerfBitExcludeKernel|unix.PerfBitExcludeHv, 0, -1, -1, 0)
	if err != nil {
		return probeError(e, err, procRoot)
	}
	_ = unix.Close(fd)
	// A software clock on CPU 0 for every task: what a cgroup counter needs the right for.
	fd, err = open(unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_CPU_CLOCK, 0, -1, 0, -1, 0)
	if err != nil {
		return probeError(e, err, procRoot)
	}
	_ = unix.Close(fd)
	return nil
}

func probeError(e Events, err error, procRoot string) error {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENODEV):
		return fmt.Errorf("opening %s: %w (%s; a VM whose hypervisor exposes no PMU, or a CPU perf does not know)", e.Name, ErrNoCounters, err.Error())
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Errorf("opening %s on every CPU: %w (%s; perf_event_paranoid is %s: the agent needs CAP_PERFMON or CAP_SYS_ADMIN)",
			e.Name, ErrForbidden, err.Error(), paranoid(procRoot))
	}
	return fmt.Errorf("opening %s: %w", e.Name, err)
}

// paranoid is the value of perf_event_paranoid, or why it could not be read.
func paranoid(procRoot string) string {
	b, err := os.ReadFile(filepath.Join(procRoot, "sys", "kernel", "perf_event_paranoid"))
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return strings.TrimSpace(string(b))
}

// readFormat is what a read of a group leader returns: the number of events, the time enabled and running, then
// each event's value.
const readFormat = unix.PERF_FORMAT_GROUP | unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING

// groupSize is the bytes of one read: nr, time_enabled, time_running and two values.
const groupSize = 5 * 8

func open(typ uint32, config, bits uint64, pid, cpu, group, flags int) (int, error) {
	attr := unix.PerfEventAttr{Type: typ, Config: config, Bits: bits, Read_format: readFormat}
	attr.Size = uint32(binary.Size(attr))
	for {
		fd, err := unix.PerfEventOpen(&attr, pid, cpu, group, flags|unix.PERF_FLAG_FD_CLOEXEC)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// Counts are a group's event counts, summed over CPUs and scaled for the time the kernel multiplexed the counters
// away (value * enabled / running per CPU).
type Counts struct {
	// Leader and Member are the counts of the two events (cycles and instructions).
	Leader, Member uint64
}

// Group counts a pair of events of one cgroup on a set of CPUs. It holds two file descriptors per CPU until
// Close. Not safe for concurrent use.
type Group struct {
	dir     string
	leaders []int
	members []int
	buf     [groupSize]byte
}

// OpenCgroup starts counting e for the tasks of the cgroup directory dir (an absolute path in the hierarchy the
// perf_event controller is attached to) on each of cpus. A cgroup that does not exist is an error wrapping
// fs.ErrNotExist; the errors of Probe are returned as Probe returns them.
func OpenCgroup(dir string, cpus []int, e Events, procRoot string) (*Group, error) {
	cg, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening cgroup %s: %w", dir, &os.PathError{Op: "open", Path: dir, Err: err})
	}
	defer unix.Close(cg)
	g := &Group{dir: dir}
	for _, cpu := range cpus {
		leader, err := open(e.Type, e.Leader, unix.PerfBitExcludeHv, cg, cpu, -1, unix.PERF_FLAG_PID_CGROUP)
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("counting cgroup %s on CPU %d: %w", dir, cpu, probeError(e, err, procRoot))
		}
		member, err := open(e.Type, e.Member, unix.PerfBitExcludeHv, cg, cpu, leader, unix.PERF_FLAG_PID_CGROUP)
		if err != nil {
			_ = unix.Close(leader)
			g.Close()
			return nil, fmt.Errorf("counting cgroup %s on CPU %d: %w", dir, cpu, probeError(e, err, procRoot))
		}
		g.leaders, g.members = append(g.leaders, leader), append(g.members, member)
	}
	return g, nil
}

// Read returns the counts since the group was opened: one read(2) per CPU.
func (g *Group) Read() (Counts, error) {
	var c Counts
	for i, fd := range g.leaders {
		n, err := unix.Read(fd, g.buf[:])
		for errors.Is(err, unix.EINTR) {
			n, err = unix.Read(fd, g.buf[:])
		}
		if err != nil {
			return Counts{}, fmt.Errorf("reading the counters of cgroup %s on its CPU #%d: %w", g.dir, i, err)
		}
		leader, member, err := parseGroup(g.buf[:n])
		if err != nil {
			return Counts{}, fmt.Errorf("reading the counters of cgroup %s: %w", g.dir, err)
		}
		c.Leader += leader
		c.Member += member
	}
	return c, nil
}

// parseGroup decodes one group read (native byte order) and scales the values for multiplexing.
func parseGroup(b []byte) (leader, member uint64, err error) {
	if len(b) != groupSize {
		return 0, 0, fmt.Errorf("a group read returned %d bytes, want %d", len(b), groupSize)
	}
	u := func(i int) uint64 { return binary.NativeEndian.Uint64(b[i*8:]) }
	if nr := u(0); nr != 2 {
		return 0, 0, fmt.Errorf("a group read holds %d events, want 2", nr)
	}
	enabled, running := u(1), u(2)
	if running == 0 { // never scheduled on the PMU: no count
		return 0, 0, nil
	}
	scale := func(v uint64) uint64 {
		if running >= enabled {
			return v
		}
		return uint64(float64(v) * float64(enabled) / float64(running))
	}
	return scale(u(3)), scale(u(4)), nil
}

// Close stops counting and releases the file descriptors. It may be called more than once.
func (g *Group) Close() {
	for _, fd := range append(g.members, g.leaders...) {
		_ = unix.Close(fd)
	}
	g.leaders, g.members = nil, nil
}
