// Package cpuburst is the QoS manager's CPU burst plugin (the NodeSLO's cpuBurstStrategy). For service containers
// with a CPU limit (the running containers of pods of priority class prod that are not best-effort, except those
// pinned to exclusive CPUs) and their pods' cgroups it sets
//
//   - the CFS burst, cpu.cfs_burst_us (v1) or cpu.max.burst (v2): cpuBurstPercent of the limit's quota, at most the
//     quota itself (the kernel refuses more), so that a container that idled may run above its limit for a moment
//     without being throttled (policies cpuBurstOnly and auto);
//   - quota burst: a throttled container's cpu.cfs_quota_us (cpu.max) raised by a fifth a run, up to
//     cfsQuotaBurstPercent of the limit, while the share pool (the CPUs no container holds exclusively) is busy below
//     sharePoolThresholdPercent; lowered again step by step when the pool is busier or the container no longer
//     needs it, and at once when a burst has lasted cfsQuotaBurstPeriodSeconds (policies cfsQuotaBurstOnly and auto).
//
// A pod's gleaner.sh/cpu-burst annotation sets its own percents or narrows the policy. With the policy off, or a
// pod opted out, the burst goes back to 0 and a raised quota to the kubelet's. The plugin writes a quota only to
// raise it or give a raise back, and holds it only while raised: the kubelet's quota, in-place resizes included,
// is the kubelet's. Every write goes through the resource executor. docs/qos.md explains the knobs.
package cpuburst
