package cgroup

// The device statistics this file reads, as the kernel writes them.
//
// blkio.throttle.io_service_bytes_recursive (v1, bytes) and blkio.throttle.io_serviced_recursive (v1, operations),
// children included; one line per device and operation, then a grand total:
//
//	8:0 Read 1277952
//	8:0 Write 4096
//	8:0 Sync 1282048
//	8:0 Async 0
//	8:0 Discard 0
//	8:0 Total 1282048
//	Total 1282048
//
// io.stat (v2), children included, one line per device with I/O:
//
//	8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0
//
// memory.idle_page_stats (kidled, Anolis-like kernels; v1 and v2): bytes idle for an age range (in scan periods)
// by page type, a four-letter code: clean/dirty, swap-backed (anonymous)/file, evictable/unevictable,
// inactive/active. A cgroup without buckets says "# buckets: no valid bucket available" and has no table.
//
//	# version: 1.0
//	# page_scans: 92
//	# slab_scans: 92
//	# scan_period_in_seconds: 120
//	# buckets: 1,2,5,15,30,60,120,240
//	# |||||    [1,2)   [2,5)  [5,15)  [15,30)  [30,60)  [60,120)  [120,240)  [240,+inf)
//	  csei         0       0       0        0        0         0          0           0
//	  cfei    774144 3624960 1744896  1298432 20676608 161087488          0           0
//	  slab      2704     832   15600    20800    70720 763819160          0           0

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// IOStat is a cgroup's cumulative I/O on one device since the cgroup was created.
type IOStat struct {
	// ReadBytes and WriteBytes are bytes transferred.
	ReadBytes, WriteBytes uint64
	// ReadOps and WriteOps are operations completed.
	ReadOps, WriteOps uint64
}

// IOStats implements Reader.
func (f *FS) IOStats(dir string) (map[Device]IOStat, error) {
	stats := map[Device]IOStat{}
	if f.version == V2 {
		err := f.read(dir, fileIOServiceBytes, func(b []byte) error { return parseIOStatV2(b, stats) })
		return stats, err
	}
	if err := f.read(dir, fileIOServiceBytes, func(b []byte) error {
		return parseIOServiced(b, func(d Device, read, write uint64) {
			s := stats[d]
			s.ReadBytes, s.WriteBytes = read, write
			stats[d] = s
		})
	}); err != nil {
		return nil, err
	}
	err := f.read(dir, fileIOServiced, func(b []byte) error {
		return parseIOServiced(b, func(d Device, read, write uint64) {
			s := stats[d]
			s.ReadOps, s.WriteOps = read, write
			stats[d] = s
		})
	})
	return stats, err
}

// maxDevices bounds the devices one statistics file may list: a node has tens of block devices, a file with more
// lines is not one the kernel wrote.
const maxDevices = 4096

// parseIOServiced parses a v1 blkio statistics file and calls set with each device's Read and Write values.
func parseIOServiced(b []byte, set func(d Device, read, write uint64)) error {
	type rw struct{ read, write uint64 }
	devs := map[Device]rw{}
	var order []Device
	err := eachLine(b, func(line []byte) error {
		f := strings.Fields(string(line))
		if len(f) == 2 && f[0] == "Total" {
			return nil
		}
		if len(f) != 3 {
			return fmt.Errorf("want \"major:minor operation value\"")
		}
		d, err := ParseDevice(f[0])
		if err != nil {
			return err
		}
		v, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return err
		}
		cur, ok := devs[d]
		if !ok {
			if len(devs) == maxDevices {
				return fmt.Errorf("more than %d devices", maxDevices)
			}
			order = append(order, d)
		}
		switch f[1] {
		case "Read":
			cur.read = v
		case "Write":
			cur.write = v
		}
		devs[d] = cur
		return nil
	})
	if err != nil {
		return err
	}
	for _, d := range order {
		set(d, devs[d].read, devs[d].write)
	}
	return nil
}

// parseIOStatV2 parses v2 io.stat into stats.
func parseIOStatV2(b []byte, stats map[Device]IOStat) error {
	return eachLine(b, func(line []byte) error {
		f := strings.Fields(string(line))
		d, err := ParseDevice(f[0])
		if err != nil {
			return err
		}
		if _, ok := stats[d]; !ok && len(stats) == maxDevices {
			return fmt.Errorf("more than %d devices", maxDevices)
		}
		var s IOStat
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("%q is not key=value", kv)
			}
			var field *uint64
			switch k {
			case "rbytes":
				field = &s.ReadBytes
			case "wbytes":
				field = &s.WriteBytes
			case "rios":
				field = &s.ReadOps
			case "wios":
				field = &s.WriteOps
			default:
				continue // dbytes, dios, and what newer kernels add
			}
			if *field, err = strconv.ParseUint(v, 10, 64); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
		stats[d] = s
		return nil
	})
}

// IdlePageStats is kidled's histogram of a cgroup's idle memory, children included (memory.idle_page_stats).
type IdlePageStats struct {
	// ScanPeriod is how long kidled takes for one scan of all memory; ages are counted in scan periods.
	ScanPeriod time.Duration
	// Buckets are the lower bounds of the age columns, in scan periods, increasing ("1,2,5,15,30,60,120,240"); a
	// column holds the pages idle for at least its bound and less than the next one. Empty when the cgroup has
	// no buckets (nothing is accounted to it).
	Buckets []int
	// Bytes holds, per page type ("cfei": clean, file, evictable, inactive), the bytes in each bucket. The slab
	// row is left out: slab objects are not pages of the cgroup's usage.
	Bytes map[string][]uint64
}

// Cold is the memory idle for at least minAge scan periods (the buckets whose lower bound is at least minAge),
// split into anonymous (swap-backed) and file pages.
func (s IdlePageStats) Cold(minAge int) (anon, file uint64) {
	for typ, row := range s.Bytes {
		for i, v := range row {
			if i >= len(s.Buckets) || s.Buckets[i] < minAge {
				continue
			}
			if typ[1] == 's' {
				anon += v
			} else {
				file += v
			}
		}
	}
	return anon, file
}

// IdlePageStats implements Reader.
func (f *FS) IdlePageStats(dir string) (IdlePageStats, error) {
	var s IdlePageStats
	err := f.read(dir, fileIdlePageStats, func(b []byte) (err error) { s, err = parseIdlePageStats(b); return err })
	return s, err
}

// idlePageType reports whether t is one of the four-letter page types of a kidled table: clean/dirty, swap/file,
// evictable/unevictable, inactive/active.
func idlePageType(t string) bool {
	return len(t) == 4 && strings.IndexByte("cd", t[0]) >= 0 && strings.IndexByte("sf", t[1]) >= 0 &&
		strings.IndexByte("eu", t[2]) >= 0 && strings.IndexByte("ia", t[3]) >= 0
}

// maxIdleBuckets is the most age buckets kidled keeps (NUM_KIDLED_BUCKETS).
const maxIdleBuckets = 8

// parseIdlePageStats parses memory.idle_page_stats.
func parseIdlePageStats(b []byte) (IdlePageStats, error) {
	s := IdlePageStats{Bytes: map[string][]uint64{}}
	var sawPeriod, sawBuckets bool
	err := eachLine(b, func(line []byte) error {
		line = bytes.TrimSpace(line)
		if rest, ok := bytes.CutPrefix(line, []byte("#")); ok {
			return s.header(string(rest), &sawPeriod, &sawBuckets)
		}
		if !sawBuckets {
			return fmt.Errorf("table row before the buckets line")
		}
		return s.row(strings.Fields(string(line)))
	})
	if err != nil {
		return IdlePageStats{}, err
	}
	if !sawPeriod || !sawBuckets {
		return IdlePageStats{}, fmt.Errorf("no scan_period_in_seconds or buckets header: not a kidled memory.idle_page_stats")
	}
	return s, nil
}

// header parses a "# key: value" line; the legend and the column header have no key and are skipped.
func (s *IdlePageStats) header(line string, sawPeriod, sawBuckets *bool) error {
	k, v, ok := strings.Cut(line, ":")
	if !ok {
		return nil
	}
	v = strings.TrimSpace(v)
	switch strings.TrimSpace(k) {
	case "scan_period_in_seconds":
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return fmt.Errorf("scan period: %w", err)
		}
		s.ScanPeriod, *sawPeriod = time.Duration(n)*time.Second, true
	case "buckets":
		*sawBuckets = true
		if strings.HasPrefix(v, "no valid bucket") {
			return nil
		}
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 || n > 255 || (len(s.Buckets) > 0 && n <= s.Buckets[len(s.Buckets)-1]) {
				return fmt.Errorf("buckets %q are not increasing ages of 0..255", v)
			}
			if len(s.Buckets) == maxIdleBuckets {
				return fmt.Errorf("more than %d buckets", maxIdleBuckets)
			}
			s.Buckets = append(s.Buckets, n)
		}
	}
	return nil
}

// row parses a table row: a page type and one value per bucket. The slab row is skipped.
func (s *IdlePageStats) row(f []string) error {
	if len(f) != len(s.Buckets)+1 {
		return fmt.Errorf("want a type and %d values, got %d fields", len(s.Buckets), len(f))
	}
	if f[0] == "slab" {
		return nil
	}
	if !idlePageType(f[0]) {
		return fmt.Errorf("unknown page type %q", f[0])
	}
	if _, dup := s.Bytes[f[0]]; dup {
		return fmt.Errorf("page type %q twice", f[0])
	}
	row := make([]uint64, len(s.Buckets))
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return err
		}
		row[i] = n
	}
	s.Bytes[f[0]] = row
	return nil
}
