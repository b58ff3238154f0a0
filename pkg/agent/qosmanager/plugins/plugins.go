// Package plugins lists gleaner-agent's QoS manager plugins, one package each.
package plugins

import (
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/allocatableevict"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/blkio"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/cgreconcile"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/cpuburst"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/cpuevict"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/cpuqos"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/cpusuppress"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/memoryevict"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/netqos"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/pressureevict"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/resctrl"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins/sysreconcile"
)

// Registry returns every QoS plugin, in the order they are listed in logs and flags. Adding a plugin is one line
// here. Every plugin is on by default: each does nothing until the node's NodeSLO turns its strategy on.
func Registry() []qosmanager.Factory {
	return []qosmanager.Factory{
		{Name: cpusuppress.Name, Interval: cpusuppress.DefaultInterval, Default: true, New: cpusuppress.New},
		{Name: memoryevict.Name, Interval: memoryevict.DefaultInterval, Default: true, New: memoryevict.New},
		{Name: cpuevict.Name, Interval: cpuevict.DefaultInterval, Default: true, New: cpuevict.New},
		{Name: pressureevict.Name, Interval: pressureevict.DefaultInterval, Default: true, New: pressureevict.New},
		{Name: allocatableevict.Name, Interval: allocatableevict.DefaultInterval, Default: true, New: allocatableevict.New},
		{Name: cpuburst.Name, Interval: cpuburst.DefaultInterval, Default: true, New: cpuburst.New},
		{Name: resctrl.Name, Interval: resctrl.DefaultInterval, Default: true, New: resctrl.New},
		{Name: sysreconcile.Name, Interval: sysreconcile.DefaultInterval, Default: true, New: sysreconcile.New},
		{Name: cgreconcile.Name, Interval: cgreconcile.DefaultInterval, Default: true, New: cgreconcile.New},
		{Name: cpuqos.Name, Interval: cpuqos.DefaultInterval, Default: true, New: cpuqos.New},
		{Name: blkio.Name, Interval: blkio.DefaultInterval, Default: true, New: blkio.New},
		{Name: netqos.Name, Interval: netqos.DefaultInterval, Default: true, New: netqos.New},
	}
}
