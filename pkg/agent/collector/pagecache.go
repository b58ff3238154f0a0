package collector

import (
	"context"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
)

// PageCacheName is the name of the page cache collector.
const PageCacheName = "pagecache"

// pageCache samples the node's page cache (Cached of /proc/meminfo), the memory the node usage leaves out. The
// pods' page cache comes from the pod resource collector, which reads their memory.stat anyway.
type pageCache struct {
	d Deps
}

// NewPageCache returns the page cache collector.
func NewPageCache(d Deps) Collector { return &pageCache{d: d} }

func (p *pageCache) Collect(ctx context.Context, round *Round) error {
	m, err := p.d.Proc.MemInfo()
	if err != nil {
		return err
	}
	round.Append(metriccache.Sample{Key: metriccache.NodeKey(metriccache.NodePageCache), Value: float64(m.Cached)})
	return nil
}
