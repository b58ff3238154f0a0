// Package system is gleaner-agent's access to the host: everything it reads from /proc, /sys and the cgroup
// filesystem goes through one of its sub-packages, each rooted at a directory the caller passes in (the host's
// paths in production, a fixture tree under testdata/ or t.TempDir() in tests). Nothing here keeps a path in a
// package-level variable.
//
//   - proc: node CPU time, memory and pressure stall information from /proc.
//   - topology: CPUs, cores, sockets and NUMA nodes with their memory, from /sys.
//   - cgroup: the cgroup version and the kubelet's cgroup driver, the directories the kubelet creates for QoS
//     classes, pods and containers, a reader/writer over the cgroup files the agent uses (the same API on
//     cgroup v1 and v2), the kubelet's formulas for cgroup values, and killing a cgroup's processes.
//   - storage: block devices and their major:minor from /sys/block, and the file system behind a directory.
//   - perf: CPU event counters (cycles, instructions) of a cgroup through perf_event_open.
//   - gpu: the part of NVML the agent uses (built with the nvml tag; a stub otherwise).
//   - resctrl: the resource control file system (cache ways, memory bandwidth) and the schemata of a class;
//     resctrl/resctrltest holds fixture hosts for its tests.
//
// This package itself holds what they share: ErrUnsupported, bounded reads (ReadFile, LimitReader, ErrTooLarge),
// the line and field loops of the kernel-file parsers (Lines, NextField), the pressure-file parser (ParsePressure),
// kidled's scan period (KidledScanPeriod), the one atomic write of the agent's own files on the node, the QoS
// plugins' state files and the prediction checkpoints (WriteFileAtomic: temporary file, fsync, rename, fsync of the
// directory), and HostFS, which reads and writes /proc/sys and /sys/fs/resctrl under a root.
package system
