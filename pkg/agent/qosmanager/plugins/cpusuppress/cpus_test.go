package cpusuppress

import (
	"testing"

	"k8s.io/utils/cpuset"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/topology"
)

// smt is one socket of 4 cores with 2 hyperthreads each, numbered as Linux numbers them on x86: core k holds
// CPUs k and k+4.
func smt() *topology.Topology {
	t := &topology.Topology{}
	for id := range 8 {
		t.CPUs = append(t.CPUs, topology.CPU{ID: id, Core: id % 4})
	}
	return t
}

func TestChooseCPUs(t *testing.T) {
	all := cpuset.New(0, 1, 2, 3, 4, 5, 6, 7)
	tests := []struct {
		name      string
		top       *topology.Topology
		universe  cpuset.CPUSet
		exclusive cpuset.CPUSet
		n         int
		want      string
	}{
		{name: "two CPUs: the top core's hyperthreads", top: smt(), universe: all, n: 2, want: "3,7"},
		{name: "three CPUs: whole cores, so four", top: smt(), universe: all, n: 3, want: "2-3,6-7"},
		{name: "one CPU asked: the minimum, two", top: smt(), universe: all, n: 1, want: "3,7"},
		{name: "an exclusive CPU's core is passed over", top: smt(), universe: all, exclusive: cpuset.New(3), n: 2, want: "2,6"},
		{name: "partly exclusive cores come after whole ones", top: smt(), universe: all, exclusive: cpuset.New(3), n: 7, want: "0-2,4-7"},
		{name: "exclusive CPUs are never used beyond the minimum", top: smt(), universe: all, exclusive: cpuset.New(3), n: 8, want: "0-2,4-7"},
		{name: "fewer than two free: exclusive ones reach two, siblings first", top: smt(), universe: all, exclusive: cpuset.New(0, 1, 2, 3, 4, 5, 6), n: 2, want: "3,7"},
		{name: "nothing free: the two highest", top: smt(), universe: all, exclusive: all, n: 4, want: "3,7"},
		{name: "a core half outside the kubepods cpuset is not whole", top: smt(), universe: cpuset.New(0, 1, 2, 3, 4, 5), n: 2, want: "1,5"},
		{name: "no topology: each CPU a core", universe: cpuset.New(0, 1, 2, 3), n: 2, want: "2-3"},
		{name: "a node of one CPU", universe: cpuset.New(0), n: 2, want: "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chooseCPUs(tt.top, tt.universe, tt.exclusive, max(tt.n, minCPUSetCPUs), minCPUSetCPUs)
			if want, _ := cpuset.Parse(tt.want); !got.Equals(want) {
				t.Errorf("chooseCPUs = %s, want %s", got, tt.want)
			}
		})
	}
}
