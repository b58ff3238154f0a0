package cpuburst

import (
	"fmt"
	"math"
	"time"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

// poolWindow is how old the collectors' last sample of the node's usage may be (they sample every second, each
// sample the average of its second).
const poolWindow = 3 * time.Second

// pool is the node's share pool (qosmanager.CPUPool): the CPUs of the kubepods cgroup that no container holds
// exclusively.
type pool struct {
	cpus qosmanager.CPUPool
	// size is the number of CPUs in the share pool.
	size int
	err  error
}

// load is the share pool's usage in percent of its CPUs: the node's busy CPU minus the pinned containers', from the
// collectors' last samples (at most poolWindow old). ok is false when the node's usage is not known.
type load struct {
	percent float64
	ok      bool
	why     string
}

// update reads the pinned containers again every qosmanager.CPUPoolRefresh, or when the pods that count changed.
func (v *pool) update(p *Plugin, pods []*statesinformer.PodMeta) {
	v.err = v.cpus.Update(p.d, pods)
	v.size = v.cpus.Shared().Size()
}

// pinned reports whether the container cgroup dir holds CPUs exclusively.
func (v *pool) pinned(dir string) bool {
	_, ok := v.cpus.Pinned[dir]
	return ok
}

// load measures the pool's usage now.
func (v *pool) load(p *Plugin) load {
	if v.err != nil {
		return load{why: "the share pool is not known: " + v.err.Error()}
	}
	if v.size == 0 {
		return load{percent: 100, ok: true}
	}
	now := p.d.Clock.Now()
	r, ok := p.d.Cache.Query(metriccache.NodeKey(metriccache.NodeCPUUsage), now.Add(-poolWindow), now)
	if !ok {
		return load{why: fmt.Sprintf("the node's CPU usage of the last %s is not known", poolWindow)}
	}
	used := r.Value(metriccache.Last)
	for _, k := range v.cpus.Pinned {
		if r, ok := p.d.Cache.Query(k, now.Add(-poolWindow), now); ok {
			used -= r.Value(metriccache.Last)
		}
	}
	return load{percent: math.Max(used, 0) / float64(v.size) * 100, ok: true}
}
