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
// <resource>.pressure (v2), as /proc/pressure:
//
//	some avg10=0.00 avg60=0.12 avg300=0.05 total=1503741
//	full avg10=0.00 avg60=0.10 avg300=0.04 total=1280331

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
)

// unlimitedV1 is the smallest value cgroup v1 memory.limit_in_bytes holds when no limit is set: the kernel
// reports PAGE_COUNTER_MAX pages, 9223372036854771712 with 4 KiB pages; anything from 2^62 on means "none".
const unlimitedV1 = int64(1) << 62

// parseUint parses a file holding one unsigned integer.
func parseUint(r io.Reader) (uint64, error) {
	s, err := readValue(r)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(s, 10, 64)
}

// parseInt parses a file holding one signed integer.
func parseInt(r io.Reader) (int64, error) {
	s, err := readValue(r)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

// parseMax parses a v2 limit: an integer, or "max" for none (-1).
func parseMax(r io.Reader) (int64, error) {
	s, err := readValue(r)
	if err != nil {
		return 0, err
	}
	if s == "max" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// parseCPUMax parses v2 cpu.max.
func parseCPUMax(r io.Reader) (CPUQuota, error) {
	s, err := readValue(r)
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
	q := CPUQuota{Quota: -1, Period: time.Duration(period) * time.Microsecond}
	if f[0] != "max" {
		quota, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return CPUQuota{}, fmt.Errorf("quota %q: %w", f[0], err)
		}
		q.Quota = time.Duration(quota) * time.Microsecond
	}
	return q, nil
}

// parseKeyed parses a flat keyed file ("key value" lines) and calls set for every key; unknown keys are the
// caller's to ignore. A line that is not "key unsigned-integer" is an error.
func parseKeyed(r io.Reader, set func(key string, v uint64)) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			if strings.TrimSpace(line) == "" {
				continue
			}
			return fmt.Errorf("malformed line %q", line)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return fmt.Errorf("malformed line %q: %w", line, err)
		}
		set(k, n)
	}
	return sc.Err()
}

// parseCPUStat parses cpu.stat of either version; v2 also yields usage_usec (0 on v1).
func parseCPUStat(r io.Reader, v Version) (CPUStat, time.Duration, error) {
	var s CPUStat
	var usage time.Duration
	var seen int
	err := parseKeyed(r, func(k string, n uint64) {
		switch {
		case k == "nr_periods":
			s.Periods, seen = n, seen+1
		case k == "nr_throttled":
			s.ThrottledPeriods, seen = n, seen+1
		case k == "throttled_time" && v == V1:
			s.ThrottledTime, seen = time.Duration(n), seen+1
		case k == "throttled_usec" && v == V2:
			s.ThrottledTime, seen = time.Duration(n)*time.Microsecond, seen+1
		case k == "usage_usec" && v == V2:
			usage = time.Duration(n) * time.Microsecond
		}
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
func parseMemoryStat(r io.Reader, v Version) (MemoryStat, error) {
	var m MemoryStat
	prefix := ""
	cache := "file"
	if v == V1 {
		prefix, cache = "total_", "total_cache"
	}
	var seen int
	err := parseKeyed(r, func(k string, n uint64) {
		if k == cache {
			m.Cache, seen = n, seen+1
			return
		}
		name, ok := strings.CutPrefix(k, prefix)
		if !ok {
			return
		}
		switch name {
		case "active_anon":
			m.ActiveAnon, seen = n, seen+1
		case "inactive_anon":
			m.InactiveAnon, seen = n, seen+1
		case "active_file":
			m.ActiveFile, seen = n, seen+1
		case "inactive_file":
			m.InactiveFile, seen = n, seen+1
		case "unevictable":
			m.Unevictable, seen = n, seen+1
		case "shmem":
			m.Shmem = n
		}
	})
	if err != nil {
		return MemoryStat{}, err
	}
	if seen < 6 {
		return MemoryStat{}, fmt.Errorf("missing fields: want %scache/file, %s{active,inactive}_{anon,file} and %sunevictable", prefix, prefix, prefix)
	}
	return m, nil
}

// parsePressure parses a pressure file (the format of /proc/pressure, which procfs parses only under /proc).
func parsePressure(r io.Reader) (procfs.PSIStats, error) {
	var s procfs.PSIStats
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		var l procfs.PSILine
		if n, err := fmt.Sscanf(rest, "avg10=%f avg60=%f avg300=%f total=%d", &l.Avg10, &l.Avg60, &l.Avg300, &l.Total); err != nil || n != 4 {
			return procfs.PSIStats{}, fmt.Errorf("malformed line %q", sc.Text())
		}
		switch kind {
		case "some":
			s.Some = &l
		case "full":
			s.Full = &l
		default:
			return procfs.PSIStats{}, fmt.Errorf("malformed line %q", sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		return procfs.PSIStats{}, err
	}
	if s.Some == nil {
		return procfs.PSIStats{}, errors.New("no \"some\" line")
	}
	return s, nil
}

// readValue returns the first line of a single-value file, trimmed; an empty file is an error.
func readValue(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, 4096))
	if err != nil {
		return "", err
	}
	s, _, _ := strings.Cut(string(b), "\n")
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("empty file")
	}
	return s, nil
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
