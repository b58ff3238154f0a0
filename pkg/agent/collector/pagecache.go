package collector

import (
	"context"
	"errors"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
)

// PageCacheName is the name of the page cache collector.
const PageCacheName = "pagecache"

// pageCache samples the node's page cache (Cached of /proc/meminfo) and each pod's (cache/file of memory.stat),
// the memory the other collectors leave out of usage.
type pageCache struct {
	d Deps
}

// NewPageCache returns the page cache collector.
func NewPageCache(d Deps) Collector { return &pageCache{d: d} }

func (p *pageCache) Collect(ctx context.Context) error {
	now := p.d.Clock.Now()
	pods := p.d.States.GetAllPods()
	samples := make([]metriccache.Sample, 0, len(pods)+1)
	m, nodeErr := p.d.Proc.MemInfo()
	if nodeErr == nil {
		samples = append(samples, metriccache.Sample{Key: metriccache.NodeKey(metriccache.NodePageCache), Value: float64(m.Cached)})
	}
	fail := failures{what: "reading pod memory.stat"}
	for _, pm := range pods {
		st, err := p.d.Cgroups.MemoryStat(p.d.Layout.PodDir(pm.Pod))
		if err != nil {
			fail.add(pm.Key(), err)
			continue
		}
		samples = append(samples, metriccache.Sample{Key: metriccache.PodKey(metriccache.PodPageCache, string(pm.Pod.UID)), Value: float64(st.Cache)})
	}
	p.d.Cache.Append(now, samples...)
	return errors.Join(nodeErr, fail.err(len(pods)))
}
