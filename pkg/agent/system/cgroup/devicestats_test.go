package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

const ioServiceBytesV1 = `8:0 Read 1277952
8:0 Write 4096
8:0 Sync 1282048
8:0 Async 0
8:0 Discard 0
8:0 Total 1282048
253:1 Read 0
253:1 Write 8192
253:1 Total 8192
Total 1290240
`

const ioServicedV1 = `8:0 Read 30
8:0 Write 1
8:0 Total 31
253:1 Read 0
253:1 Write 2
253:1 Total 2
Total 33
`

const idlePageStats = `# version: 1.0
# page_scans: 92
# slab_scans: 92
# scan_period_in_seconds: 120
# buckets: 1,2,5,15,30,60,120,240
#
#   _-----=> clean/dirty
#  / _----=> swap/file
# | / _---=> evict/unevict
# || / _--=> inactive/active
# ||| / _-=> slab
# |||| /
# |||||              [1,2)          [2,5)         [5,15)        [15,30)        [30,60)       [60,120)      [120,240)     [240,+inf)
  csei                  0              0              0              0              0              0              0              0
  dsei                  0          16384              0              0              0         360448              0              0
  cfei             774144        3624960        1744896        1298432       20676608      161087488              0              0
  dfei                  0              0          16384              0          24576              0              0              0
  csui                  0              0              0              0              0              0              0              0
  dsui                  0              0              0              0              0              0              0              0
  cfui                  0              0              0              0              0              0              0              0
  dfui                  0              0              0              0              0              0              0              0
  csea             278528        3510272         389120         872448         806912       22716416              0              0
  dsea                  0          12288              0              0              0         196608              0              0
  cfea            1298432       12115968        3510272       10518528       78409728     1503793152              0              0
  dfea                  0              0              0              0              0           4096              0              0
  csua                  0              0              0              0              0              0              0              0
  dsua                  0              0              0              0              0              0              0              0
  cfua                  0              0              0              0              0              0              0              0
  dfua                  0              0              0              0              0              0              0              0
  slab               2704            832          15600          20800          70720      763819160              0              0
`

func TestParseIOStats(t *testing.T) {
	tests := []struct {
		name      string
		v         Version
		bytes     string
		serviced  string
		want      map[Device]IOStat
		wantError string
	}{
		{
			name: "v1", v: V1, bytes: ioServiceBytesV1, serviced: ioServicedV1,
			want: map[Device]IOStat{
				{8, 0}:   {ReadBytes: 1277952, WriteBytes: 4096, ReadOps: 30, WriteOps: 1},
				{253, 1}: {WriteBytes: 8192, WriteOps: 2},
			},
		},
		{name: "v1 without I/O", v: V1, bytes: "Total 0\n", serviced: "Total 0\n", want: map[Device]IOStat{}},
		{
			name: "v2", v: V2,
			bytes: "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n259:0 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0 newfield=7\n",
			want: map[Device]IOStat{
				{8, 16}:  {ReadBytes: 1459200, WriteBytes: 314773504, ReadOps: 192, WriteOps: 353},
				{259, 0}: {ReadBytes: 4096, ReadOps: 1},
			},
		},
		{name: "v1 bad device", v: V1, bytes: "8-0 Read 1\n", serviced: "", wantError: `device "8-0" is not major:minor`},
		{name: "v1 bad value", v: V1, bytes: "8:0 Read x\n", serviced: "", wantError: "invalid syntax"},
		{name: "v1 short line", v: V1, bytes: "8:0 Read\n", serviced: "", wantError: "major:minor operation value"},
		{name: "v2 not key=value", v: V2, bytes: "8:16 rbytes\n", wantError: `"rbytes" is not key=value`},
		{name: "v2 bad number", v: V2, bytes: "8:16 rbytes=-1\n", wantError: "rbytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			fs := NewFS(root, tt.v)
			if tt.v == V1 {
				writeFixture(t, root, "blkio/pod/blkio.throttle.io_service_bytes_recursive", tt.bytes)
				writeFixture(t, root, "blkio/pod/blkio.throttle.io_serviced_recursive", tt.serviced)
			} else {
				writeFixture(t, root, "pod/io.stat", tt.bytes)
			}
			got, err := fs.IOStats("pod")
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("IOStats error = %v, want one containing %q", err, tt.wantError)
				}
				if !strings.Contains(err.Error(), root) {
					t.Errorf("the error %q does not name the file", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("IOStats (-want +got):\n%s", d)
			}
		})
	}
}

func TestIOStatsOfAKernelWithoutThem(t *testing.T) {
	root := t.TempDir()
	writeFixture(t, root, "blkio/pod/blkio.weight", "100\n") // the cgroup exists, the statistics do not
	_, err := NewFS(root, V1).IOStats("pod")
	if !errors.Is(err, system.ErrUnsupported) {
		t.Errorf("IOStats of a cgroup without the file = %v, want ErrUnsupported", err)
	}
	if _, err := NewFS(root, V1).IOStats("gone"); err == nil || errors.Is(err, system.ErrUnsupported) {
		t.Errorf("IOStats of a missing cgroup = %v, want a not-exist error", err)
	}
}

func TestParseIdlePageStats(t *testing.T) {
	got, err := parseIdlePageStats([]byte(idlePageStats))
	if err != nil {
		t.Fatal(err)
	}
	if got.ScanPeriod != 2*time.Minute || len(got.Buckets) != 8 || len(got.Bytes) != 16 {
		t.Fatalf("parsed %v, %v, %d types", got.ScanPeriod, got.Buckets, len(got.Bytes))
	}
	if _, ok := got.Bytes["slab"]; ok {
		t.Error("the slab row is kept")
	}
	tests := []struct {
		minAge     int
		anon, file uint64
	}{
		// Every bucket: the sum of the s rows and of the f rows.
		{minAge: 0, anon: 16384 + 360448 + 278528 + 3510272 + 389120 + 872448 + 806912 + 22716416 + 12288 + 196608,
			file: 774144 + 3624960 + 1744896 + 1298432 + 20676608 + 161087488 + 16384 + 24576 + 1298432 + 12115968 + 3510272 + 10518528 + 78409728 + 1503793152 + 4096},
		// From the [5,15) bucket on.
		{minAge: 5, anon: 389120 + 872448 + 806912 + 22716416 + 360448 + 196608,
			file: 1744896 + 1298432 + 20676608 + 161087488 + 16384 + 24576 + 3510272 + 10518528 + 78409728 + 1503793152 + 4096},
		// Between bounds: 3 counts from the next bucket up, 5.
		{minAge: 3, anon: 389120 + 872448 + 806912 + 22716416 + 360448 + 196608,
			file: 1744896 + 1298432 + 20676608 + 161087488 + 16384 + 24576 + 3510272 + 10518528 + 78409728 + 1503793152 + 4096},
		{minAge: 241},
	}
	for _, tt := range tests {
		anon, file := got.Cold(tt.minAge)
		if anon != tt.anon || file != tt.file {
			t.Errorf("Cold(%d) = %d anon, %d file, want %d, %d", tt.minAge, anon, file, tt.anon, tt.file)
		}
	}
}

func TestParseIdlePageStatsErrors(t *testing.T) {
	header := "# version: 1.0\n# scan_period_in_seconds: 120\n# buckets: 1,2,5\n"
	for _, tt := range []struct{ name, in, wantErr string }{
		{name: "not kidled", in: "cache 1\nrss 2\n", wantErr: "table row before the buckets line"},
		{name: "empty", in: "", wantErr: "not a kidled"},
		{name: "short row", in: header + "csei 1 2\n", wantErr: "want a type and 3 values"},
		{name: "unknown type", in: header + "xxxx 1 2 3\n", wantErr: `unknown page type "xxxx"`},
		{name: "duplicate type", in: header + "csei 1 2 3\ncsei 1 2 3\n", wantErr: "twice"},
		{name: "bad value", in: header + "csei 1 -2 3\n", wantErr: "invalid syntax"},
		{name: "decreasing buckets", in: "# scan_period_in_seconds: 120\n# buckets: 5,2\n", wantErr: "not increasing"},
		{name: "too many buckets", in: "# scan_period_in_seconds: 120\n# buckets: 1,2,3,4,5,6,7,8,9\n", wantErr: "more than 8 buckets"},
		{name: "bad period", in: "# scan_period_in_seconds: soon\n# buckets: 1\n", wantErr: "scan period"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseIdlePageStats([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	s, err := parseIdlePageStats([]byte("# version: 1.0\n# scan_period_in_seconds: 1\n# buckets: no valid bucket available\n"))
	if err != nil || len(s.Buckets) != 0 {
		t.Errorf("a cgroup without buckets = %+v, %v; want no buckets, no error", s, err)
	}
	if anon, file := s.Cold(0); anon != 0 || file != 0 {
		t.Errorf("Cold of no buckets = %d, %d", anon, file)
	}
}

func TestIdlePageStatsThroughFS(t *testing.T) {
	root := t.TempDir()
	writeFixture(t, root, "memory/kubepods/memory.idle_page_stats", idlePageStats)
	writeFixture(t, root, "memory/plain/memory.stat", "cache 0\n")
	fs := NewFS(root, V1)
	if _, err := fs.IdlePageStats("kubepods"); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.IdlePageStats("plain"); !errors.Is(err, system.ErrUnsupported) {
		t.Errorf("idle page stats of an upstream kernel's cgroup = %v, want ErrUnsupported", err)
	}
}

func writeFixture(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
