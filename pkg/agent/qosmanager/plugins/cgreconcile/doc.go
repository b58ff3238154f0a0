// Package cgreconcile is the QoS manager's memory QoS plugin (resourceQOSStrategy's memoryQOS, Koordinator's
// cgreconcile). On cgroup v2, for the pods of each class whose memoryQOS is on, it writes from their requests and
// limits:
//
//	memory.min       = request x minLimitPercent        (pod: the sum of its containers')
//	memory.low       = request x lowLimitPercent
//	memory.high      = limit x throttlingPercent         (left at max without a limit)
//	memory.oom.group = oomKillGroup                      (the pod's cgroup: an OOM kills the whole pod)
//
// and gives the QoS parent cgroups (kubepods, burstable, besteffort) the sum of their pods' memory.min and
// memory.low, in one batch, so that the executor writes a rising protection parents first and a falling one
// children first. A percent of 0 is the kernel's default: nothing is written, and a value written before is put
// back. Upstream cgroup v1 has none of these files: the plugin says so once and steps aside. The Anolis OS fields
// (wmarkRatio, wmarkScalePermill, wmarkMinAdj, priorityEnable, priority) are said once not to be applied.
//
// The plugin gives back only what it wrote: the files it holds are recorded in a state file under Deps.StateDir
// before they are written, and taken over from there after a restart, so that values written by someone else (the
// kubelet's MemoryQoS feature gate writes the same files) are never reset. docs/qos.md explains every knob.
package cgreconcile
