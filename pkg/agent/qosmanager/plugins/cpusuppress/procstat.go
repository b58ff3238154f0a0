package cpusuppress

// The plugin reads only the first line of /proc/stat, the node's CPU times summed over all CPUs in USER_HZ ticks
// (1/100 s): user nice system idle iowait irq softirq steal guest guest_nice (guest time is inside user already).
//
//	cpu  4705 356 584 3699 23 23 0 0 0 0
//	cpu0 1393 280 32 1813 10 12 0 0 0 0
//
// The node resource collector reads all the CPU lines once a second (proc.FS); this plugin runs five times as
// often, so it parses the one line it needs, into a buffer it keeps. The read is bounded by the buffer; a counter
// of 2^64 or more is refused, and sums wrap modulo 2^64 as the kernel's own counters do (a window across the wrap
// is skipped: busy goes back).

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of /proc/stat: the kernel always reports USER_HZ = 100 ticks per second there.
const userHZ = 100

// statBufSize holds the first line of /proc/stat: ten counters of at most 20 digits.
const statBufSize = 512

// readBusy reads the node's cumulative busy CPU time from the /proc/stat at path, using buf (statBufSize bytes).
func readBusy(path string, buf []byte) (time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("reading the node's CPU time: %w", err)
	}
	n, err := io.ReadFull(f, buf)
	_ = f.Close() // read-only
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return 0, fmt.Errorf("reading the node's CPU time from %s: %w", path, err)
	}
	busy, err := parseBusy(buf[:n])
	if err != nil {
		return 0, fmt.Errorf("parsing %s: %w", path, err)
	}
	return busy, nil
}

// parseBusy returns user + nice + system + irq + softirq of the first line of /proc/stat: the time the CPUs spent
// running anything, as the node resource collector counts it (idle, iowait and steal are not busy).
func parseBusy(b []byte) (time.Duration, error) {
	line, _, found := bytes.Cut(b, []byte{'\n'})
	if !found {
		return 0, fmt.Errorf("no complete first line in %d bytes", len(b))
	}
	rest, ok := bytes.CutPrefix(line, []byte("cpu "))
	if !ok {
		return 0, fmt.Errorf("first line %q is not the \"cpu\" total", line)
	}
	var ticks uint64
	for i := 0; i < 7; i++ { // user nice system idle iowait irq softirq
		rest = bytes.TrimLeft(rest, " ")
		var field []byte
		field, rest, _ = bytes.Cut(rest, []byte{' '})
		if len(field) == 0 {
			return 0, fmt.Errorf("first line %q has %d counters, want at least 7", line, i)
		}
		v, err := strconv.ParseUint(string(field), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("counter %d of %q: %w", i+1, line, err)
		}
		if i != 3 && i != 4 { // idle and iowait are not busy
			ticks += v
		}
	}
	return time.Duration(ticks) * (time.Second / userHZ), nil
}
