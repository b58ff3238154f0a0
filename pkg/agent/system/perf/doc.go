// Package perf counts CPU events of a cgroup with perf_event_open(2): one event group per CPU, opened on the
// cgroup's directory (PERF_FLAG_PID_CGROUP), so the kernel counts only while a task of that cgroup runs there.
// The agent uses cycles and instructions, whose ratio (cycles per instruction, CPI) rises when a neighbour
// thrashes the caches and memory bandwidth a service shares with it, even when its CPU usage does not change.
//
// Counters need a CPU (or hypervisor) that exposes a PMU, and counting a cgroup on every CPU needs CAP_PERFMON
// (or CAP_SYS_ADMIN) whenever /proc/sys/kernel/perf_event_paranoid is above 0. Probe says which is missing.
package perf
