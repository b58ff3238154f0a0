// Package resctrl is the QoS manager's resctrl plugin (the NodeSLO's resctrlQOS, Intel RDT / AMD Platform QoS): one
// resctrl group per QoS class whose NodeSLO resourceQOSStrategy.<class>.resctrlQOS is enabled — gleaner-LSR,
// gleaner-LS and gleaner-BE under /sys/fs/resctrl — with the class's range of L3 cache ways (catRangeStartPercent,
// catRangeEndPercent) and memory bandwidth (mbaPercent) in its schemata, and every thread of the class's pods kept
// in it. Where resctrl is not mounted or the CPU cannot partition (pkg/agent/system/resctrl decides), it says so once
// and steps aside. Every write goes through the resource executor. docs/qos.md describes knobs, groups and limits.
package resctrl
