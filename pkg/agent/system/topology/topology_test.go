package topology

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/cpuset"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name                 string
		want                 *Topology
		cpus, cores, sockets int
		wantErr              string
	}{
		{
			name: "numa",
			want: &Topology{
				CPUs: []CPU{
					{ID: 0, Core: 0, Socket: 0, Node: 0}, {ID: 1, Core: 1, Socket: 0, Node: 0},
					{ID: 2, Core: 0, Socket: 1, Node: 1}, {ID: 3, Core: 1, Socket: 1, Node: 1},
					{ID: 4, Core: 0, Socket: 0, Node: 0}, {ID: 5, Core: 1, Socket: 0, Node: 0},
					{ID: 6, Core: 0, Socket: 1, Node: 1},
				},
				Nodes: []NUMANode{
					{ID: 0, CPUs: cpuset.New(0, 1, 4, 5), MemTotal: 8 << 30, MemFree: 4 << 30},
					// cpu7 is offline, so it is not in node 1's set.
					{ID: 1, CPUs: cpuset.New(2, 3, 6), MemTotal: 8 << 30, MemFree: 1 << 30},
				},
			},
			cpus: 7, cores: 4, sockets: 2,
		},
		{
			name: "nonuma",
			want: &Topology{
				CPUs:  []CPU{{ID: 0, Core: 0}, {ID: 1, Core: 1}},
				Nodes: []NUMANode{{ID: 0, CPUs: cpuset.New(0, 1)}},
			},
			cpus: 2, cores: 2, sockets: 1,
		},
		{name: "badmeminfo", wantErr: "reading the memory of NUMA node 0"},
		{name: "missing", wantErr: "reading the online CPUs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read("testdata/" + tt.name)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("want error containing %q, got %v", tt.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b cpuset.CPUSet) bool { return a.Equals(b) })); diff != "" {
				t.Errorf("Read (-want +got):\n%s", diff)
			}
			if got.NumCPUs() != tt.cpus || got.NumCores() != tt.cores || got.NumSockets() != tt.sockets {
				t.Errorf("cpus/cores/sockets = %d/%d/%d, want %d/%d/%d", got.NumCPUs(), got.NumCores(), got.NumSockets(), tt.cpus, tt.cores, tt.sockets)
			}
		})
	}
}

// TestRefresh: with the same online CPUs a refresh keeps the cores and sockets it had (their files are not read:
// here they are gone) and reads the NUMA nodes' memory again; when the online CPUs change it reads everything.
func TestRefresh(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("testdata/numa")); err != nil {
		t.Fatal(err)
	}
	first, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if err := os.RemoveAll(filepath.Join(root, "devices/system/cpu", fmt.Sprintf("cpu%d", i), "topology")); err != nil {
			t.Fatal(err)
		}
	}
	meminfo := filepath.Join(root, "devices/system/node/node0/meminfo")
	if err := os.WriteFile(meminfo, []byte("Node 0 MemTotal:       8388608 kB\nNode 0 MemFree:        1048576 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := Refresh(root, first)
	if err != nil {
		t.Fatalf("refresh with unchanged online CPUs read the CPUs' topology again: %v", err)
	}
	if diff := cmp.Diff(first.CPUs, again.CPUs); diff != "" {
		t.Errorf("CPUs after refresh (-before +after):\n%s", diff)
	}
	if again.Nodes[0].MemFree != 1<<30 || first.Nodes[0].MemFree != 4<<30 {
		t.Errorf("node 0 MemFree: %d after the refresh (want 1 GiB), %d in the first reading (want it untouched)", again.Nodes[0].MemFree, first.Nodes[0].MemFree)
	}
	if err := os.WriteFile(filepath.Join(root, "devices/system/cpu/online"), []byte("0-5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Refresh(root, first); err == nil || !strings.Contains(err.Error(), "topology of CPU") {
		t.Errorf("refresh after the online CPUs changed: want it to read the CPUs' topology again (and fail), got %v", err)
	}
}

func TestParseNodeMeminfo(t *testing.T) {
	tests := []struct {
		name, in    string
		total, free uint64
		wantErr     string
	}{
		{name: "kB", in: "Node 0 MemTotal:  2048 kB\nNode 0 MemFree:  1024 kB\nNode 0 HugePages_Total:     0\n", total: 2 << 20, free: 1 << 20},
		{name: "missing free", in: "Node 0 MemTotal:  2048 kB\n", wantErr: "MemFree missing"},
		{name: "not a node file", in: "MemTotal:  2048 kB\n", wantErr: "malformed line"},
		{name: "bad number", in: "Node 0 MemTotal:  x kB\n", wantErr: "malformed line"},
		// 2^54 kB would wrap to 0 bytes; anything above 4 PiB is refused, and so is 2^64.
		{name: "2^54 kB", in: "Node 0 MemTotal:  18014398509481984 kB\nNode 0 MemFree: 0 kB\n", wantErr: "more than 4 PiB"},
		{name: "2^64", in: "Node 0 MemTotal:  18446744073709551616\nNode 0 MemFree: 0 kB\n", wantErr: "value out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			total, free, err := parseNodeMeminfo(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("want error containing %q, got %v", tt.wantErr, err)
				}
				return
			}
			if err != nil || total != tt.total || free != tt.free {
				t.Fatalf("got %d, %d, %v; want %d, %d", total, free, err, tt.total, tt.free)
			}
		})
	}
}

// TestReadThisMachine reads the real /sys: whatever the machine, it has an online CPU in some NUMA node. A read
// error is a failure, never a skip: every Linux machine the agent runs on has this tree.
func TestReadThisMachine(t *testing.T) {
	got, err := Read("/sys")
	if err != nil {
		t.Fatalf("reading this machine's topology from /sys: %v", err)
	}
	if got.NumCPUs() == 0 || len(got.Nodes) == 0 || got.NumCores() > got.NumCPUs() {
		t.Fatalf("implausible topology %+v", got)
	}
}
