package collector

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// PodThrottledName is the name of the pod throttling collector.
const PodThrottledName = "podthrottled"

// podThrottled samples the share of CFS periods in which each pod hit its CPU quota, from the pod cgroup's
// cpu.stat. Low means the pod had the CPU it wanted.
type podThrottled struct {
	d    Deps
	dirs *podDirs
	prev map[types.UID]cgroup.CPUStat
}

// NewPodThrottled returns the pod throttling collector.
func NewPodThrottled(d Deps) Collector {
	return &podThrottled{d: d, dirs: newPodDirs(d.Layout), prev: map[types.UID]cgroup.CPUStat{}}
}

func (p *podThrottled) Collect(ctx context.Context, round *Round) error {
	pods := round.Pods()
	next := make(map[types.UID]cgroup.CPUStat, len(pods))
	samples := make([]metriccache.Sample, 0, len(pods))
	fail := failures{what: "reading pod cpu.stat"}
	for _, m := range pods {
		st, err := p.d.Cgroups.CPUStat(p.dirs.pod(m))
		if err != nil {
			fail.add(m.Key(), err)
			continue
		}
		next[m.Pod.UID] = st
		if prev, ok := p.prev[m.Pod.UID]; ok {
			samples = append(samples, metriccache.Sample{Key: metriccache.PodKey(metriccache.PodCPUThrottledRatio, string(m.Pod.UID)), Value: st.ThrottledRatio(prev)})
		}
	}
	p.prev = next
	p.dirs.retain()
	round.Append(samples...)
	return fail.err(len(pods))
}
