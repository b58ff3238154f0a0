package cgroup

import "testing"

// The parsers read whatever a kernel (or a corrupt fixture) writes: they must return an error, never panic.
// `go test` runs the seeds; `go test -fuzz FuzzParsers ./pkg/agent/system/cgroup/` explores further.
func FuzzParsers(f *testing.F) {
	for _, seed := range []string{
		"88394832141\n", "max\n", "max 100000\n", "50000 100000\n", "-1\n", "",
		"nr_periods 2410\nnr_throttled 2322\nthrottled_time 127418437823\n",
		"usage_usec 71866373\nnr_periods 1\nnr_throttled 1\nthrottled_usec 1\n",
		"total_cache 1\ntotal_inactive_anon 2\ntotal_active_anon 3\ntotal_inactive_file 4\ntotal_active_file 5\ntotal_unevictable 6\n",
		"key\n", "\n\n", "a b c\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseUint(b)
		_, _ = parseInt(b)
		_, _ = parseMax(b)
		_, _ = parseCPUMax(b)
		_, _, _ = parseCPUStat(b, V1)
		_, _, _ = parseCPUStat(b, V2)
		_, _ = parseMemoryStat(b, V1)
		_, _ = parseMemoryStat(b, V2)
	})
}

// FuzzDeviceStatParsers does for the I/O and idle-page parsers what FuzzParsers does for the others.
func FuzzDeviceStatParsers(f *testing.F) {
	for _, seed := range []string{
		ioServiceBytesV1, ioServicedV1, idlePageStats, "Total 0\n", "8:16 rbytes=1 wbytes=2 rios=3 wios=4\n",
		"# scan_period_in_seconds: 1\n# buckets: no valid bucket available\n", "# buckets: 1\ncsei 1\n", "8:0\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = parseIOServiced(b, func(Device, uint64, uint64) {})
		_ = parseIOStatV2(b, map[Device]IOStat{})
		if s, err := parseIdlePageStats(b); err == nil {
			_, _ = s.Cold(2)
		}
	})
}
