package cgroup

// The cgroup file formats this package parses, as the kernel writes them.
//
// Single values: cpuacct.usage (ns), cpu.cfs_quota_us (-1 = unlimited), cpu.cfs_period_us, cpu.shares,
// cpu.weight, cpu.cfs_burst_us, cpu.max.burst (us), memory.limit_in_bytes, memory.max ("max" = unlimited):
//
//	88394832141
//
// cpu.max (v2), quota and period in microseconds:
//
//	max 100000
//	50000 100000
//
// cpu.stat, v1:
//
//	nr_periods 2410
//	nr_throttled 2322
//	throttled_time 127418437823
//	nr_bursts 0
//	burst_time 0
//
// cpu.stat, v2:
//
//	usage_usec 71866373
//	user_usec 51219834
//	system_usec 20646538
//	nr_periods 2410
//	nr_throttled 2322
//	throttled_usec 127418437
//
// memory.stat, v1 (per-cgroup fields, then total_* fields that include children):
//
//	cache 10604544
//	rss 6205440
//	shmem 9138176
//	inactive_anon 0
//	active_anon 1531904
//	inactive_file 110592
//	active_file 1355776
//	unevictable 0
//	total_cache 753471488
//	total_rss 13524992
//	total_shmem 9138176
//	total_inactive_anon 7254016
//	total_active_anon 1572864
//	total_inactive_file 288423936
//	total_active_file 457232384
//	total_unevictable 0
//
// memory.stat, v2 (children always included):
//
//	anon 8826880
//	file 745472000
//	shmem 9138176
//	inactive_anon 7254016
//	active_anon 1572864
//	inactive_file 288423936
//	active_file 457232384
//	unevictable 0
//
// cpuset lists: "0-3,8-11".
//
// <resource>.pressure (v2), as /proc/pressure (parsed by system.ParsePressure):
//
//	some avg10=0.00 avg60=0.12 avg300=0.05 total=1503741
//	full avg10=0.00 avg60=0.10 avg300=0.04 total=1280331

// Values: an integer of 2^64 or more is refused (strconv's range error). Below it, limits in microseconds saturate
// at the largest Duration (limitUs, durationUs), and cumulative counters (cpuacct.usage, usage_usec, throttled
// time) are taken modulo 2^64 nanoseconds, as the kernel's own counters wrap: a rate then sees the counter go back
// and skips that one sample.
//
// The parsers take the file's bytes rather than an io.Reader: the agent reads about 1,600 cgroup files a second
// on a node with 200 pods, and FS reads each into one pooled buffer that the parser scans in place, without a copy
// or an allocation per file.

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// unlimitedV1 is the smallest value cgroup v1 memory.limit_in_bytes holds when no limit is set: the kernel
// reports PAGE_COUNTER_MAX pages, 9223372036854771712 with 4 KiB pages; anything from 2^62 on means "none".
const unlimitedV1 = int64(1) << 62

// parseUint parses a file holding one unsigned integer.
func parseUint(b []byte) (uint64, error) {
	s, err := value(b)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(s, 10, 64)
}

// parseInt parses a file holding one signed integer.
func parseInt(b []byte) (int64, error) {
	s, err := value(b)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

// parseMax parses a v2 limit: an integer, or "max" for none (-1).
func parseMax(b []byte) (int64, error) {
	s, err := value(b)
	if err != nil {
		return 0, err
	}
	if s == "max" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// parseCPUMax parses v2 cpu.max.
func parseCPUMax(b []byte) (CPUQuota, error) {
	s, err := value(b)
	if err != nil {
		return CPUQuota{}, err
	}
	f := strings.Fields(s)
	if len(f) != 2 {
		return CPUQuota{}, fmt.Errorf("want \"<quota|max> <period>\", got %q", s)
	}
	period, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return CPUQuota{}, fmt.Errorf("period %q: %w", f[1], err)
	}
	q := CPUQuota{Quota: -1, Period: limitUs(period)}
	if f[0] != "max" {
		quota, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return CPUQuota{}, fmt.Errorf("quota %q: %w", f[0], err)
		}
		q.Quota = limitUs(quota)
	}
	return q, nil
}

// parseKeyed parses a flat keyed file ("key value" lines) and calls set for every key with its value unparsed;
// set parses the values it wants with parseValue (memory.stat has about 40 keys, the agent uses 6). A line without
// a value is an error. key and value are only valid during the call.
func parseKeyed(b []byte, set func(key, value []byte) error) error {
	return eachLine(b, func(line []byte) error {
		k, v, ok := bytes.Cut(line, []byte{' '})
		if !ok {
			return errors.New("no value")
		}
		return set(k, v)
	})
}

// eachLine calls f for every non-blank line of b; an error is returned naming the line.
func eachLine(b []byte, f func(line []byte) error) error {
	for line := range system.Lines(b) {
		if err := f(line); err != nil {
			return fmt.Errorf("malformed line %q: %w", line, err)
		}
	}
	return nil
}

// parseValue parses the unsigned integer value of a keyed line.
func parseValue(v []byte) (uint64, error) {
	return strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
}

// parseCPUStat parses cpu.stat of either version; v2 also yields usage_usec (0 on v1).
func parseCPUStat(b []byte, v Version) (CPUStat, time.Duration, error) {
	var s CPUStat
	var usage time.Duration
	var seen int
	err := parseKeyed(b, func(key, value []byte) error {
		var dst *uint64
		var scale time.Duration
		switch k := string(key); {
		case k == "nr_periods":
			dst = &s.Periods
		case k == "nr_throttled":
			dst = &s.ThrottledPeriods
		case k == "throttled_time" && v == V1:
			scale = time.Nanosecond
		case k == "throttled_usec" && v == V2:
			scale = time.Microsecond
		case k == "usage_usec" && v == V2:
			n, err := parseValue(value)
			usage = time.Duration(n) * time.Microsecond
			return err
		default:
			return nil
		}
		n, err := parseValue(value)
		if err != nil {
			return err
		}
		seen++
		if dst != nil {
			*dst = n
		} else {
			s.ThrottledTime = time.Duration(n) * scale
		}
		return nil
	})
	if err != nil {
		return CPUStat{}, 0, err
	}
	// v2 cpu.stat lacks the bandwidth lines where the cpu controller is not enabled; usage_usec is always there.
	if v == V1 && seen < 3 {
		return CPUStat{}, 0, errors.New("nr_periods, nr_throttled or throttled_time missing")
	}
	return s, usage, nil
}

// parseMemoryStat parses memory.stat of either version, taking the hierarchical total_* fields on v1.
func parseMemoryStat(b []byte, v Version) (MemoryStat, error) {
	var m MemoryStat
	prefix := ""
	cache := "file"
	if v == V1 {
		prefix, cache = "total_", "total_cache"
	}
	var seen int
	err := parseKeyed(b, func(key, value []byte) error {
		var dst *uint64
		if string(key) == cache {
			dst = &m.Cache
		} else if name, ok := bytes.CutPrefix(key, []byte(prefix)); ok {
			switch string(name) {
			case "active_anon":
				dst = &m.ActiveAnon
			case "inactive_anon":
				dst = &m.InactiveAnon
			case "active_file":
				dst = &m.ActiveFile
			case "inactive_file":
				dst = &m.InactiveFile
			case "unevictable":
				dst = &m.Unevictable
			case "shmem":
				n, err := parseValue(value)
				m.Shmem = n
				return err
			}
		}
		if dst == nil {
			return nil
		}
		n, err := parseValue(value)
		*dst = n
		seen++
		return err
	})
	if err != nil {
		return MemoryStat{}, err
	}
	if seen < 6 {
		return MemoryStat{}, fmt.Errorf("missing fields: want %scache/file, %s{active,inactive}_{anon,file} and %sunevictable", prefix, prefix, prefix)
	}
	return m, nil
}

// value returns the first line of a single-value file, trimmed; an empty file is an error.
func value(b []byte) (string, error) {
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return "", errors.New("empty file")
	}
	return string(line), nil
}

// limitUs converts a limit in microseconds (a quota, a period, a burst) to a Duration, saturating: no kernel
// writes one past 292 years, and a corrupt file must not turn into a negative Duration, which would read as
// "unlimited".
func limitUs(us uint64) time.Duration {
	if us > uint64(math.MaxInt64/int64(time.Microsecond)) {
		return math.MaxInt64
	}
	return time.Duration(us) * time.Microsecond
}

// durationUs converts microseconds that may be negative (-1 = unlimited) to a Duration, saturating.
func durationUs(us int64) time.Duration {
	if us < 0 {
		return -1
	}
	if us > math.MaxInt64/int64(time.Microsecond) {
		return math.MaxInt64
	}
	return time.Duration(us) * time.Microsecond
}
