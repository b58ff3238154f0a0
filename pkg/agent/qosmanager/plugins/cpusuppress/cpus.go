package cpusuppress

import (
	"cmp"
	"slices"

	"k8s.io/utils/cpuset"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/topology"
)

// core is one physical core's CPUs within the set best-effort pods may be given.
type core struct {
	cpus   []int // ascending
	lowest int
	whole  bool // every hyperthread of the core is in the universe and none is held exclusively
}

// chooseCPUs picks the CPUs of universe that best-effort pods get: at least n of them, taken in this order, each
// tier from the highest-numbered core down (services, interrupts and the kubelet's reserved CPUs usually sit on
// the lowest):
//
//  1. whole cores free of exclusive CPUs, all hyperthreads together (so the set may exceed n by a sibling);
//  2. the free CPUs of cores that are partly held exclusively (or partly outside universe);
//  3. only to reach atLeast at all, exclusive CPUs: a node whose Guaranteed pods hold all but one CPU still gives
//     best-effort pods atLeast CPUs rather than none (a cpuset cannot be empty).
//
// top groups CPUs into cores; a CPU it does not know is a core of its own. n and atLeast above universe's size give
// all of universe.
func chooseCPUs(top *topology.Topology, universe, exclusive cpuset.CPUSet, n, atLeast int) cpuset.CPUSet {
	cores := coresOf(top, universe, exclusive)
	var picked []int
	for _, c := range cores {
		if len(picked) >= n {
			break
		}
		if c.whole {
			picked = append(picked, c.cpus...)
		}
	}
	for _, c := range cores {
		for _, id := range c.cpus {
			if len(picked) >= n {
				break
			}
			if !c.whole && !exclusive.Contains(id) {
				picked = append(picked, id)
			}
		}
	}
	for _, c := range cores {
		for _, id := range slices.Backward(c.cpus) {
			if len(picked) >= atLeast {
				break
			}
			if exclusive.Contains(id) {
				picked = append(picked, id)
			}
		}
	}
	return cpuset.New(picked...)
}

// coresOf groups universe's CPUs into cores, highest lowest-CPU first.
func coresOf(top *topology.Topology, universe, exclusive cpuset.CPUSet) []core {
	type coreID struct{ socket, core int }
	siblings := map[coreID][]int{}
	of := map[int]coreID{}
	if top != nil {
		for _, c := range top.CPUs {
			id := coreID{c.Socket, c.Core}
			siblings[id] = append(siblings[id], c.ID)
			of[c.ID] = id
		}
	}
	byID := map[coreID]*core{}
	var cores []*core
	for _, id := range universe.List() {
		cid, known := of[id]
		if !known {
			cid = coreID{socket: -1, core: id} // unknown to the topology: a core of its own
		}
		c := byID[cid]
		if c == nil {
			c = &core{lowest: id, whole: true}
			if known {
				for _, s := range siblings[cid] {
					c.whole = c.whole && universe.Contains(s)
				}
			}
			byID[cid] = c
			cores = append(cores, c)
		}
		c.cpus = append(c.cpus, id)
		c.whole = c.whole && !exclusive.Contains(id)
	}
	slices.SortFunc(cores, func(a, b *core) int { return cmp.Compare(b.lowest, a.lowest) })
	out := make([]core, len(cores))
	for i, c := range cores {
		out[i] = *c
	}
	return out
}
