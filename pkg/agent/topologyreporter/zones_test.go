package topologyreporter

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/topology"
	"github.com/gleaner-sh/gleaner/pkg/nrt"
)

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// zone builds a Node zone from capacity/allocatable/available triples of cpu and memory.
func zone(name, cpuC, cpuA, cpuV, memC, memA, memV string) nrt.Zone {
	return nrt.Zone{Name: name, Type: nrt.ZoneTypeNode, Resources: []nrt.ResourceInfo{
		{Name: "cpu", Capacity: resource.MustParse(cpuC), Allocatable: resource.MustParse(cpuA), Available: resource.MustParse(cpuV)},
		{Name: "memory", Capacity: resource.MustParse(memC), Allocatable: resource.MustParse(memA), Available: resource.MustParse(memV)},
	}}
}

var sameQuantity = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// TestZones reads the fixture hosts (testdata/one, two, four: CPU lists with ranges, gaps and offline CPUs, uneven
// memory) and checks every zone's capacity, allocatable and available against the rule of the package
// documentation, worked out by hand in the comments.
func TestZones(t *testing.T) {
	tests := []struct {
		name                            string
		host                            string
		capacity, allocatable, requests corev1.ResourceList
		want                            []nrt.Zone
	}{
		{
			// One zone holds the whole node: allocatable and available are the node's.
			name: "one zone", host: "one",
			capacity: list("cpu", "4", "memory", "8Gi"), allocatable: list("cpu", "3500m", "memory", "7Gi"),
			requests: list("cpu", "1", "memory", "2Gi"),
			want:     []nrt.Zone{zone("node-0", "4", "3500m", "2500m", "8Gi", "7Gi", "5Gi")},
		},
		{
			// node0: CPUs 0-3,8-9 (6), 12Gi; node1: CPUs 4-7,10-11 with 6-7 offline (4), 4Gi. C = 10 cores, 16Gi.
			// cpu: 6000 x 9000 / 10000 = 5400m, less 6000 x 2500 / 10000 = 1500m; 3600m less 1000m.
			// memory: 12Gi x 15/16 = 11.25Gi less 12Gi x 3/16 = 2.25Gi; 3.75Gi less 0.75Gi.
			name: "two zones", host: "two",
			capacity: list("cpu", "10", "memory", "16Gi"), allocatable: list("cpu", "9", "memory", "15Gi"),
			requests: list("cpu", "2500m", "memory", "3Gi"),
			want: []nrt.Zone{
				zone("node-0", "6", "5400m", "3900m", "12Gi", "11520Mi", "9Gi"),
				zone("node-1", "4", "3600m", "2600m", "4Gi", "3840Mi", "3Gi"),
			},
		},
		{
			// Shares are floored: 6000 x 9999 / 10000 = 5999.4 -> 5999m; 3999.6 -> 3999m. Requests above
			// allocatable count as allocatable: nothing available, never negative.
			name: "floored shares, requests above allocatable", host: "two",
			capacity: list("cpu", "10", "memory", "16Gi"), allocatable: list("cpu", "9999m", "memory", "16Gi"),
			requests: list("cpu", "12", "memory", "1Gi"),
			want: []nrt.Zone{
				zone("node-0", "6", "5999m", "0", "12Gi", "12Gi", "11520Mi"),
				zone("node-1", "4", "3999m", "0", "4Gi", "4Gi", "3840Mi"),
			},
		},
		{
			// Four zones of 4 CPUs (node2 and node3 interleaved: 8,10,12,14 and 9,11,13,15), 16, 8, 6 and 2Gi.
			// cpu: 4000 x 15/16 = 3750m, less 4000 x 3/16 = 750m. memory x 30/32 less x 5/32:
			// 15Gi - 2.5Gi, 7.5Gi - 1.25Gi, 5.625Gi - 0.9375Gi, 1.875Gi - 0.3125Gi.
			name: "four zones", host: "four",
			capacity: list("cpu", "16", "memory", "32Gi"), allocatable: list("cpu", "15", "memory", "30Gi"),
			requests: list("cpu", "3", "memory", "5Gi"),
			want: []nrt.Zone{
				zone("node-0", "4", "3750m", "3000m", "16Gi", "15Gi", "12800Mi"),
				zone("node-1", "4", "3750m", "3000m", "8Gi", "7680Mi", "6400Mi"),
				zone("node-2", "4", "3750m", "3000m", "6Gi", "5760Mi", "4800Mi"),
				zone("node-3", "4", "3750m", "3000m", "2Gi", "1920Mi", "1600Mi"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo, err := topology.Read("testdata/" + tt.host)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Zones(topo, tt.capacity, tt.allocatable, tt.requests)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, sameQuantity); diff != "" {
				t.Errorf("Zones (-want +got):\n%s", diff)
			}
		})
	}
}

// TestZonesSumToTheNode: when the zones' capacities add up to the Node's, their allocatable adds up to the Node's
// allocatable (less the rounding, under one unit per zone), whatever the split.
func TestZonesSumToTheNode(t *testing.T) {
	topo, err := topology.Read("testdata/four")
	if err != nil {
		t.Fatal(err)
	}
	capacity, allocatable := list("cpu", "16", "memory", "32Gi"), list("cpu", "14321m", "memory", "31234567891")
	zones, err := Zones(topo, capacity, allocatable, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		var sum int64
		for _, z := range zones {
			sum += amount(corev1.ResourceList{r: z.Resources[i].Allocatable}, r)
		}
		if want := amount(allocatable, r); sum > want || want-sum >= int64(len(zones)) {
			t.Errorf("%s: zones' allocatable adds up to %d, want %d less under %d of rounding", r, sum, want, len(zones))
		}
	}
}

func TestZonesErrors(t *testing.T) {
	capacity := list("cpu", "2", "memory", "2Gi")
	cpuOnly := &topology.Topology{Nodes: []topology.NUMANode{{ID: 0, CPUs: cpuset.New(0, 1)}}}
	tests := []struct {
		name     string
		topo     *topology.Topology
		capacity corev1.ResourceList
		wantErr  string
		is       error
	}{
		// What topology.Read gives on a kernel without NUMA information: node 0 with every CPU and no memory.
		{name: "no NUMA information", topo: cpuOnly, capacity: capacity, is: ErrNoNUMA},
		{name: "no online CPU", topo: &topology.Topology{Nodes: []topology.NUMANode{{ID: 0, MemTotal: 1 << 30}}}, capacity: capacity, wantErr: "no NUMA node has an online CPU"},
		{name: "node without memory capacity", topo: &topology.Topology{Nodes: []topology.NUMANode{{ID: 0, CPUs: cpuset.New(0), MemTotal: 1 << 30}}},
			capacity: list("cpu", "2"), wantErr: "status.capacity has no memory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Zones(tt.topo, tt.capacity, tt.capacity, nil)
			if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Zones: got %v, want an error containing %q (is %v)", err, tt.wantErr, tt.is)
			}
		})
	}
	// A CPU-only zone next to one with memory is a real layout, not an error: its memory is 0.
	topo := &topology.Topology{Nodes: []topology.NUMANode{{ID: 0, CPUs: cpuset.New(0), MemTotal: 2 << 30}, {ID: 1, CPUs: cpuset.New(1)}}}
	zones, err := Zones(topo, capacity, capacity, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := zones[1].Resources[1]; m.Name != "memory" || !m.Capacity.IsZero() || !m.Allocatable.IsZero() {
		t.Errorf("CPU-only zone's memory = %+v, want 0", m)
	}
}

func TestMulDiv(t *testing.T) {
	const pib4 = int64(1) << 52
	if got := mulDiv(pib4, pib4-1, pib4); got != pib4-1 {
		t.Errorf("mulDiv(4 PiB, 4 PiB - 1, 4 PiB) = %d, want %d (the product overflows int64)", got, pib4-1)
	}
	if got := mulDiv(7, 2, 3); got != 4 {
		t.Errorf("mulDiv(7, 2, 3) = %d, want 4 (floor of 4.67)", got)
	}
}
