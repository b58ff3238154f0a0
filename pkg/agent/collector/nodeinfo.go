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
	d    Deps
	last *topology.Topology // the CPUs' cores and sockets are read again only when the online CPUs change
}

// NewNodeInfo returns the node information collector.
func NewNodeInfo(d Deps) Collector { return &nodeInfo{d: d} }

func (n *nodeInfo) Collect(context.Context, *Round) error {
	t, err := topology.Refresh(n.d.SysRoot, n.last)
	if err != nil {
		return err
	}
	n.last = t
	n.d.Cache.SetInfo(metriccache.InfoNodeTopology, t)
	return nil
}
