package proc

// The files this package reads, as the kernel writes them (procfs parses them):
//
// /proc/stat, times in USER_HZ ticks (1/100 s) per column: user nice system idle iowait irq softirq steal guest
// guest_nice; guest time is already counted in user. Only the CPU lines at the top are read (on a large machine the
// intr line that follows them alone can be hundreds of KiB):
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
// /proc/pressure/{cpu,memory,io}, averages in percent, total stall time in microseconds (parsed by
// system.ParsePressure):
//
//	some avg10=0.88 avg60=1.70 avg300=10.31 total=294982350
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//
// What is refused, file by file (a refused file costs its sample and an error naming it, never the agent):
//
//   - /proc/stat: CPU lines beyond maxStatCPUBytes, a line beyond maxStatLine, a counter that is not a decimal
//     below 2^64. Below 2^64 every counter is taken as is: the kernel's own counters are unsigned 64-bit
//     nanoseconds that wrap, and so do the Durations here (after 292 CPU-years, within reach of a large machine
//     with a long uptime), which costs one sample where a rate sees the counter go back.
//   - /proc/meminfo: a file above maxMeminfoBytes, a line that is not "key: value", and a value above maxMemBytes
//     of the fields read (in kB, a value near 2^64 would overflow when turned into bytes).
//   - /proc/pressure: a file above maxPressureBytes, and what system.ParsePressure refuses.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"github.com/prometheus/procfs"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// The bounds on what FS reads, each a comfortable multiple of what a kernel writes.
const (
	// maxStatCPUBytes bounds the CPU lines of /proc/stat: the total and one line per CPU, at most 8,193 lines
	// (NR_CPUS is at most 8,192) of at most 218 bytes ("cpu8191" and ten 20-digit counters), 1.8 MB.
	maxStatCPUBytes = 2 << 20
	// maxStatLine bounds one CPU line of /proc/stat (218 bytes at most, see above); less than the read buffer.
	maxStatLine = 512
	// maxMeminfoBytes bounds /proc/meminfo: about 60 lines of under 40 bytes.
	maxMeminfoBytes = 64 << 10
	// maxPressureBytes bounds a /proc/pressure file: two lines of under 100 bytes.
	maxPressureBytes = 4 << 10
	// maxMemBytes is the largest memory figure believed (4 PiB, see system.MaxMemoryBytes).
	maxMemBytes = system.MaxMemoryBytes
)

// UserHZ is the unit of /proc/stat: the kernel always reports USER_HZ = 100 ticks per second there.
const UserHZ = 100

// FS reads a /proc tree.
type FS struct {
	root string
}

// New returns an FS rooted at root (normally "/proc"). It fails when root is not a directory.
func New(root string) (*FS, error) {
	st, err := os.Stat(root)
	if err == nil && !st.IsDir() {
		err = fmt.Errorf("%s is not a directory", root)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the proc filesystem at %s: %w", root, err)
	}
	return &FS{root: root}, nil
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

// CPUTime reads the CPU lines of /proc/stat.
func (f *FS) CPUTime() (CPUTime, error) {
	p := filepath.Join(f.root, "stat")
	fh, err := os.Open(p)
	if err != nil {
		return CPUTime{}, fmt.Errorf("reading %s: %w", p, err)
	}
	defer func() { _ = fh.Close() }() // read-only
	t, err := parseStat(fh)
	if err != nil {
		return CPUTime{}, fmt.Errorf("reading %s: %w", p, err)
	}
	return t, nil
}

// parseStat parses the CPU lines at the top of /proc/stat and reads little after them.
func parseStat(r io.Reader) (CPUTime, error) {
	br := bufio.NewReaderSize(system.LimitReader(r, maxStatCPUBytes), 4096)
	var t CPUTime
	for first := true; ; first = false {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 && !bytes.HasPrefix(line, []byte("cpu")) {
			break // the CPU lines are over
		}
		if len(line) > maxStatLine || errors.Is(err, bufio.ErrBufferFull) {
			return CPUTime{}, fmt.Errorf("CPU line %.40q... longer than %d bytes", line, maxStatLine)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return CPUTime{}, err
		}
		switch {
		case len(line) == 0:
		case first:
			if t, err = parseStatTotal(line); err != nil {
				return CPUTime{}, err
			}
		case len(line) > 3 && line[3] >= '0' && line[3] <= '9':
			t.CPUs++
		default:
			return CPUTime{}, fmt.Errorf("line %q is neither the total nor a CPU's", bytes.TrimSpace(line))
		}
		if err != nil { // io.EOF
			break
		}
	}
	if t.CPUs == 0 {
		return CPUTime{}, errors.New("no per-CPU lines")
	}
	return t, nil
}

// StatTotalBufSize is the buffer StatTotal reads into: the first line of /proc/stat (maxStatLine).
const StatTotalBufSize = maxStatLine

// StatTotal reads only the first line of /proc/stat, the CPU times summed over all CPUs, into buf (at least
// StatTotalBufSize bytes), allocating nothing: for a caller that samples more often than the collectors (CPU
// suppression, five times a second) and needs no per-CPU count. The CPUTime it returns has CPUs 0.
func (f *FS) StatTotal(buf []byte) (CPUTime, error) {
	p := filepath.Join(f.root, "stat")
	fh, err := os.Open(p)
	if err != nil {
		return CPUTime{}, fmt.Errorf("reading %s: %w", p, err)
	}
	n, err := io.ReadFull(fh, buf[:min(len(buf), StatTotalBufSize)])
	_ = fh.Close() // read-only
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return CPUTime{}, fmt.Errorf("reading %s: %w", p, err)
	}
	line, _, found := bytes.Cut(buf[:n], []byte{'\n'})
	if !found {
		return CPUTime{}, fmt.Errorf("reading %s: no complete first line in %d bytes", p, n)
	}
	t, err := parseStatTotal(line)
	if err != nil {
		return CPUTime{}, fmt.Errorf("reading %s: %w", p, err)
	}
	return t, nil
}

// parseStatTotal parses the first line, "cpu" and the counters summed over all CPUs: at least user to softirq (7),
// steal (8th) where the kernel writes it. It allocates nothing but its errors.
func parseStatTotal(line []byte) (CPUTime, error) {
	rest := line
	next := func() (f []byte) {
		f, rest = system.NextField(rest)
		return f
	}
	if string(next()) != "cpu" {
		return CPUTime{}, fmt.Errorf("first line %q is not \"cpu\" and at least 7 counters", bytes.TrimSpace(line))
	}
	var v [8]uint64 // user nice system idle iowait irq softirq steal
	for i := range v {
		f := next()
		if len(f) == 0 {
			if i < 7 {
				return CPUTime{}, fmt.Errorf("first line %q is not \"cpu\" and at least 7 counters", bytes.TrimSpace(line))
			}
			break // no steal column
		}
		n, err := strconv.ParseUint(unsafe.String(&f[0], len(f)), 10, 64) // strconv keeps nothing of it
		if err != nil {
			return CPUTime{}, fmt.Errorf("counter %d of %q: %w", i+1, bytes.TrimSpace(line), err)
		}
		v[i] = n
	}
	// Sums and the conversion to nanoseconds wrap modulo 2^64, as the kernel's own counters do (see the top).
	busy := v[0] + v[1] + v[2] + v[5] + v[6]
	total := busy + v[3] + v[4] + v[7]
	return CPUTime{Busy: ticks(busy), Total: ticks(total)}, nil
}

// ticks converts USER_HZ ticks to a Duration, wrapping like the kernel's nanosecond counters.
func ticks(n uint64) time.Duration { return time.Duration(n * uint64(time.Second/UserHZ)) }

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
	p := filepath.Join(f.root, "meminfo")
	b, err := system.ReadFile(p, maxMeminfoBytes)
	if err != nil {
		return MemInfo{}, fmt.Errorf("reading %s: %w", p, err)
	}
	m, err := parseMeminfo(b)
	if err != nil {
		return MemInfo{}, fmt.Errorf("reading %s: %w", p, err)
	}
	return m, nil
}

// parseMeminfo parses /proc/meminfo: "Key: value [kB]" lines, of which it keeps the fields of MemInfo.
func parseMeminfo(b []byte) (MemInfo, error) {
	var m MemInfo
	var seenTotal, seenAvailable bool
	for line := range system.Lines(b) {
		key, value, ok := bytes.Cut(line, []byte{':'})
		if !ok || len(bytes.TrimSpace(value)) == 0 {
			return MemInfo{}, fmt.Errorf("malformed line %q: want \"key: value\"", line)
		}
		var dst *uint64
		switch string(key) {
		case "MemTotal":
			dst, seenTotal = &m.Total, true
		case "MemAvailable":
			dst, seenAvailable = &m.Available, true
		case "MemFree":
			dst = &m.Free
		case "Cached":
			dst = &m.Cached
		case "Buffers":
			dst = &m.Buffers
		default:
			continue
		}
		n, err := parseMemValue(value)
		if err != nil {
			return MemInfo{}, fmt.Errorf("%s: %w", key, err)
		}
		*dst = n
	}
	if !seenTotal || !seenAvailable {
		return MemInfo{}, errors.New("MemTotal or MemAvailable missing")
	}
	return m, nil
}

// parseMemValue parses "  24684160 kB" into bytes, refusing more than maxMemBytes.
func parseMemValue(v []byte) (uint64, error) {
	f := bytes.Fields(v)
	if len(f) > 2 || (len(f) == 2 && string(f[1]) != "kB") {
		return 0, fmt.Errorf("%q is not \"<number> kB\"", bytes.TrimSpace(v))
	}
	n, err := strconv.ParseUint(string(f[0]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number: %w", f[0], err)
	}
	limit := uint64(maxMemBytes)
	if len(f) == 2 {
		limit /= 1024
	}
	if n > limit {
		return 0, fmt.Errorf("%q is more than 4 PiB, the most memory any machine Linux runs on can address", bytes.TrimSpace(v))
	}
	if len(f) == 2 {
		n *= 1024
	}
	return n, nil
}

// Pressure reads /proc/pressure/<r>. A kernel without PSI (no file, or PSI disabled at boot) gives an error
// wrapping system.ErrUnsupported. Full is nil where the kernel has no "full" line (cpu before 5.13).
func (f *FS) Pressure(r system.PSIResource) (procfs.PSIStats, error) {
	p := filepath.Join(f.root, "pressure", string(r))
	b, err := system.ReadFile(p, maxPressureBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EOPNOTSUPP) {
			return procfs.PSIStats{}, fmt.Errorf("reading %s: %w (%s)", p, system.ErrUnsupported, err.Error())
		}
		return procfs.PSIStats{}, fmt.Errorf("reading %s: %w", p, err)
	}
	s, err := system.ParsePressure(b)
	if err != nil {
		return procfs.PSIStats{}, fmt.Errorf("reading %s: %w", p, err)
	}
	return s, nil
}
