// Package cpusuppress is the QoS manager's CPU suppress plugin (the NodeSLO's resourceUsedThresholdWithBE): it keeps
// best-effort pods to the CPU the node's services leave under the NodeSLO's cpuSuppressThresholdPercent,
//
//	BE share = capacity x threshold% - non-BE pods - non-BE host applications - max(system, reserved),
//
// never below cpuSuppressMinPercent of capacity, as a CFS quota on the besteffort QoS cgroup (cpuSuppressPolicy
// cfsQuota) or as a set of whole CPUs for best-effort pods (cpuset). It samples the node's busy CPU time
// (/proc/stat) and the best-effort cgroups' usage itself on a short interval, so that a service's spike tightens
// the limit within a few hundred milliseconds; it tightens at once and loosens in steps. docs/qos.md explains the
// formula, knobs and reaction time.
package cpusuppress
