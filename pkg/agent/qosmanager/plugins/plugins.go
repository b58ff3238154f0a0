// Package plugins lists gleaner-agent's QoS manager plugins, one package each.
package plugins

import (
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
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
// here. Every plugin is on by default: each does nothing until the node's NodeSLO turns its strategy on. Each
// has a condition in the NodeSLO's status while it does something.
func Registry() []qosmanager.Factory {
	return []qosmanager.Factory{
		{Name: cpusuppress.Name, Interval: cpusuppress.DefaultInterval, Default: true, New: cpusuppress.New, Condition: slov1alpha1.NodeSLOCPUSuppress},
		{Name: memoryevict.Name, Interval: memoryevict.DefaultInterval, Default: true, New: memoryevict.New, Condition: slov1alpha1.NodeSLOMemoryEviction},
		{Name: cpuevict.Name, Interval: cpuevict.DefaultInterval, Default: true, New: cpuevict.New, Condition: slov1alpha1.NodeSLOCPUEviction},
		{Name: pressureevict.Name, Interval: pressureevict.DefaultInterval, Default: true, New: pressureevict.New, Condition: slov1alpha1.NodeSLOPressureEviction},
		{Name: allocatableevict.Name, Interval: allocatableevict.DefaultInterval, Default: true, New: allocatableevict.New, Condition: slov1alpha1.NodeSLOAllocatableEviction},
		{Name: cpuburst.Name, Interval: cpuburst.DefaultInterval, Default: true, New: cpuburst.New, Condition: slov1alpha1.NodeSLOCPUBurst},
		{Name: resctrl.Name, Interval: resctrl.DefaultInterval, Default: true, New: resctrl.New, Condition: slov1alpha1.NodeSLOResctrl},
		{Name: sysreconcile.Name, Interval: sysreconcile.DefaultInterval, Default: true, New: sysreconcile.New, Condition: slov1alpha1.NodeSLOSystem},
		{Name: cgreconcile.Name, Interval: cgreconcile.DefaultInterval, Default: true, New: cgreconcile.New, Condition: slov1alpha1.NodeSLOMemoryQOS},
		{Name: cpuqos.Name, Interval: cpuqos.DefaultInterval, Default: true, New: cpuqos.New, Condition: slov1alpha1.NodeSLOCPUIdle},
		{Name: blkio.Name, Interval: blkio.DefaultInterval, Default: true, New: blkio.New, Condition: slov1alpha1.NodeSLOBlkIO},
		{Name: netqos.Name, Interval: netqos.DefaultInterval, Default: true, New: netqos.New, Condition: slov1alpha1.NodeSLONetworkQOS},
	}
}
