// Package plugins lists gleaner-agent's QoS manager plugins, one package each.
package plugins

import (
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/blkio"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/cpuevict"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/cpusuppress"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/memoryevict"
)

// Registry returns every QoS plugin, in the order they are listed in logs and flags. Adding a plugin is one line
// here. Every plugin is on by default: each does nothing until the node's NodeSLO turns its strategy on.
func Registry() []qosmanager.Factory {
	return []qosmanager.Factory{
		{Name: cpusuppress.Name, Interval: cpusuppress.DefaultInterval, Default: true, New: cpusuppress.New},
		{Name: memoryevict.Name, Interval: memoryevict.DefaultInterval, Default: true, New: memoryevict.New},
		{Name: cpuevict.Name, Interval: cpuevict.DefaultInterval, Default: true, New: cpuevict.New},
		{Name: blkio.Name, Interval: blkio.DefaultInterval, Default: true, New: blkio.New},
	}
}
