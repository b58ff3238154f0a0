// Package blkio is the QoS manager's block I/O plugin (Koordinator's blkIOReconcile): from the NodeSLO's
// resourceQOSStrategy.beClass.blkioQOS it caps the read and write bytes and operations per second of best-effort
// pods on each configured disk, and sets their proportional I/O weight, on the besteffort QoS cgroup (the class's
// total) and on each best-effort pod's cgroup (the same numbers, for one pod). A pod of any class may narrow what
// its own cgroup gets with the annotation gleaner.sh/blkio-qos (or Koordinator's koordinator.sh/blkioQOS), never
// loosen it. Devices are named in the configuration (a disk, a device-mapper device or an LVM volume group) and
// resolved to major:minor through the node's /sys. cgroup v1 gets blkio.throttle.{read,write}_{bps,iops}_device and
// blkio.bfq.weight, v2 io.max and io.weight. docs/qos.md lists every knob and what the kernel needs for it.
package blkio
