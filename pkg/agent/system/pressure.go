package system

// Pressure stall information, /proc/pressure/<resource> for the node and <resource>.pressure of a cgroup v2 group:
// the share of time tasks stalled, averaged over 10, 60 and 300 s, in percent, and the total stall time in
// microseconds. The "full" line is missing for cpu before kernel 5.13.
//
//	some avg10=0.88 avg60=1.70 avg300=10.31 total=294982350
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/prometheus/procfs"
)

// MaxStallTotal is the largest stall total, in microseconds, ParsePressure accepts: the most a time.Duration holds
// (292 years). A stall total grows at most as fast as the wall clock (it is the time at least one task, or all of
// them, stalled), so a larger one is a corrupt file; below it, the total converts to a Duration without overflow.
const MaxStallTotal = uint64(math.MaxInt64 / int64(time.Microsecond))

// ParsePressure parses a pressure file. Averages outside [0, 100] (NaN and infinities included) and totals above
// MaxStallTotal are refused, as are lines other than "some" and "full" and a file without "some".
func ParsePressure(b []byte) (procfs.PSIStats, error) {
	var s procfs.PSIStats
	for line := range Lines(b) {
		l, err := parsePressureLine(line)
		if err == nil {
			switch kind, _, _ := bytes.Cut(line, []byte{' '}); string(kind) {
			case "some":
				s.Some = l
			case "full":
				s.Full = l
			default:
				err = errors.New("want some or full")
			}
		}
		if err != nil {
			return procfs.PSIStats{}, fmt.Errorf("malformed line %q: %w", line, err)
		}
	}
	if s.Some == nil {
		return procfs.PSIStats{}, errors.New("no \"some\" line")
	}
	return s, nil
}

// parsePressureLine parses "<kind> avg10=<f> avg60=<f> avg300=<f> total=<n>" without allocating for the fields
// (a node with 200 pods reads 1,200 such lines per round on cgroup v2). The numbers are handed to strconv as strings
// over the read buffer, which is reused: strconv keeps nothing of its input (its errors hold a copy).
func parsePressureLine(line []byte) (*procfs.PSILine, error) {
	var l procfs.PSILine
	rest := line
	next := func() (f []byte) {
		f, rest = NextField(rest)
		return f
	}
	next() // the kind
	value := func(want string) ([]byte, error) {
		f := next()
		k, v, ok := bytes.Cut(f, []byte{'='})
		if !ok || string(k) != want || len(v) == 0 {
			return nil, fmt.Errorf("field %q, want %s=<value>", f, want)
		}
		return v, nil
	}
	for _, d := range []struct {
		name string
		dst  *float64
	}{{"avg10", &l.Avg10}, {"avg60", &l.Avg60}, {"avg300", &l.Avg300}} {
		v, err := value(d.name)
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseFloat(unsafe.String(&v[0], len(v)), 64)
		if err != nil {
			return nil, fmt.Errorf("field %s=%q: %w", d.name, v, err)
		}
		if !(n >= 0 && n <= 100) { // also refuses NaN
			return nil, fmt.Errorf("field %s=%q: a share of time in percent must be within [0, 100]", d.name, v)
		}
		*d.dst = n
	}
	v, err := value("total")
	if err != nil {
		return nil, err
	}
	n, err := strconv.ParseUint(unsafe.String(&v[0], len(v)), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("field total=%q: %w", v, err)
	}
	if n > MaxStallTotal {
		return nil, fmt.Errorf("field total=%q: above %d microseconds (292 years)", v, MaxStallTotal)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("unexpected %q after total", bytes.TrimSpace(rest))
	}
	l.Total = n
	return &l, nil
}
