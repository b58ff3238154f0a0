package cgroup

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseSingleValues(t *testing.T) {
	tests := []struct {
		name    string
		parse   func(string) (any, error)
		in      string
		want    any
		wantErr string
	}{
		{name: "uint", parse: wrap(parseUint), in: "88394832141\n", want: uint64(88394832141)},
		{name: "uint empty", parse: wrap(parseUint), in: "\n", wantErr: "empty file"},
		{name: "uint negative", parse: wrap(parseUint), in: "-1\n", wantErr: "invalid syntax"},
		{name: "int unlimited quota", parse: wrap(parseInt), in: "-1\n", want: int64(-1)},
		{name: "max", parse: wrap(parseMax), in: "max\n", want: int64(-1)},
		{name: "max number", parse: wrap(parseMax), in: "268435456\n", want: int64(268435456)},
		{name: "max garbage", parse: wrap(parseMax), in: "lots\n", wantErr: "invalid syntax"},
		{name: "cpu.max limited", parse: wrap(parseCPUMax), in: "50000 100000\n", want: CPUQuota{Quota: 50 * time.Millisecond, Period: 100 * time.Millisecond}},
		{name: "cpu.max unlimited", parse: wrap(parseCPUMax), in: "max 100000\n", want: CPUQuota{Quota: -1, Period: 100 * time.Millisecond}},
		{name: "cpu.max one field", parse: wrap(parseCPUMax), in: "max\n", wantErr: "want \"<quota|max> <period>\""},
		{name: "cpu.max bad period", parse: wrap(parseCPUMax), in: "max x\n", wantErr: "period"},
		{name: "cpu.max bad quota", parse: wrap(parseCPUMax), in: "x 100000\n", wantErr: "quota"},
		// Limits past what a Duration holds saturate instead of wrapping to a negative ("unlimited") quota; 2^64 is
		// refused.
		{name: "cpu.max huge", parse: wrap(parseCPUMax), in: "18446744073709551615 9223372036854775808\n", want: CPUQuota{Quota: math.MaxInt64, Period: math.MaxInt64}},
		{name: "cpu.max 2^64", parse: wrap(parseCPUMax), in: "18446744073709551616 100000\n", wantErr: "value out of range"},
		{name: "uint 2^64", parse: wrap(parseUint), in: "18446744073709551616\n", wantErr: "value out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.parse(tt.in)
			checkParse(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestParseCPUStat(t *testing.T) {
	type result struct {
		Stat  CPUStat
		Usage time.Duration
	}
	tests := []struct {
		name    string
		version Version
		in      string
		want    result
		wantErr string
	}{
		{
			name: "v1", version: V1,
			in:   "nr_periods 2410\nnr_throttled 2322\nthrottled_time 127418437823\nnr_bursts 0\nburst_time 0\n",
			want: result{Stat: CPUStat{Periods: 2410, ThrottledPeriods: 2322, ThrottledTime: 127418437823}},
		},
		{
			name: "v2", version: V2,
			in:   "usage_usec 71866373\nuser_usec 51219834\nsystem_usec 20646538\nnr_periods 2410\nnr_throttled 2322\nthrottled_usec 127418437\n",
			want: result{Stat: CPUStat{Periods: 2410, ThrottledPeriods: 2322, ThrottledTime: 127418437 * time.Microsecond}, Usage: 71866373 * time.Microsecond},
		},
		{
			// The root cgroup and groups without the cpu controller have usage only.
			name: "v2 without bandwidth", version: V2,
			in:   "usage_usec 10\nuser_usec 6\nsystem_usec 4\n",
			want: result{Usage: 10 * time.Microsecond},
		},
		{name: "v1 truncated", version: V1, in: "nr_periods 1\n", wantErr: "missing"},
		{name: "v1 garbage", version: V1, in: "nr_periods one\n", wantErr: "malformed line"},
		{name: "no value", version: V2, in: "usage_usec\n", wantErr: "malformed line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, u, err := parseCPUStat([]byte(tt.in), tt.version)
			checkParse(t, result{s, u}, err, tt.want, tt.wantErr)
		})
	}
}

func TestParseMemoryStat(t *testing.T) {
	tests := []struct {
		name    string
		version Version
		in      string
		want    MemoryStat
		wantErr string
	}{
		{
			name: "v1 takes the hierarchical totals", version: V1,
			in: "cache 1\nrss 2\nshmem 3\ninactive_anon 4\nactive_anon 5\ninactive_file 6\nactive_file 7\nunevictable 8\n" +
				"total_cache 10\ntotal_rss 20\ntotal_shmem 30\ntotal_inactive_anon 40\ntotal_active_anon 50\n" +
				"total_inactive_file 60\ntotal_active_file 70\ntotal_unevictable 80\n",
			want: MemoryStat{Cache: 10, Shmem: 30, InactiveAnon: 40, ActiveAnon: 50, InactiveFile: 60, ActiveFile: 70, Unevictable: 80},
		},
		{
			name: "v2", version: V2,
			in:   "anon 90\nfile 10\nkernel 5\nshmem 3\ninactive_anon 40\nactive_anon 50\ninactive_file 6\nactive_file 4\nunevictable 1\n",
			want: MemoryStat{Cache: 10, Shmem: 3, InactiveAnon: 40, ActiveAnon: 50, InactiveFile: 6, ActiveFile: 4, Unevictable: 1},
		},
		{name: "v1 without totals", version: V1, in: "cache 1\nrss 2\ninactive_anon 4\nactive_anon 5\ninactive_file 6\nactive_file 7\nunevictable 8\n", wantErr: "missing fields"},
		{name: "garbage in a used field", version: V2, in: "file lots\n", wantErr: "malformed line"},
		{name: "no line with a value", version: V2, in: "anon\n", wantErr: "malformed line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMemoryStat([]byte(tt.in), tt.version)
			checkParse(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func wrap[T any](parse func(b []byte) (T, error)) func(string) (any, error) {
	return func(s string) (any, error) { return parse([]byte(s)) }
}

func checkParse(t *testing.T, got any, err error, want any, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("want an error containing %q, got %v", wantErr, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
