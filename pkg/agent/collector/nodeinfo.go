package collector

import (
	"context"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/topology"
)

// NodeInfoName is the name of the node information collector.
const NodeInfoName = "nodeinfo"

// nodeInfo reads the node's CPU topology and NUMA nodes from /sys into the metric cache's static information
// (metriccache.InfoNodeTopology, a *topology.Topology).
type nodeInfo struct {
	d Deps
}

// NewNodeInfo returns the node information collector.
func NewNodeInfo(d Deps) Collector { return &nodeInfo{d: d} }

func (n *nodeInfo) Collect(ctx context.Context) error {
	t, err := topology.Read(n.d.SysRoot)
	if err != nil {
		return err
	}
	n.d.Cache.SetInfo(metriccache.InfoNodeTopology, t)
	return nil
}
