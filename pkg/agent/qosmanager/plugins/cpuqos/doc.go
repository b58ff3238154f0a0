// Package cpuqos is the QoS manager's CPU idle plugin (resourceQOSStrategy's cpuQOS): it runs the pods of a class
// whose cpuQOS is on with groupIdentity -1 as SCHED_IDLE against their siblings, by writing cpu.idle = 1 (Linux
// 5.15 and later, cgroup v1 and v2). For class BE, on by default, that is the besteffort QoS cgroup, so that batch
// yields to the services inside the scheduler itself (a waking service task preempts an idle one at once), and the
// BE pods that live outside it (a BE-labelled pod with requests sits in the burstable QoS cgroup). Anolis OS group
// identity, which the other groupIdentity values name, does not exist upstream: they leave cpu.idle at 0. Turning
// a class off writes 0 back and releases the value. docs/qos.md explains the knob, the kernel it needs and its
// limits.
package cpuqos
