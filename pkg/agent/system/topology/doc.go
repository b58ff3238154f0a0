// Package topology reads the node's CPU topology and NUMA layout from a /sys tree: which CPUs are online, the core
// and socket of each (through github.com/prometheus/procfs/sysfs), and each NUMA node's CPUs and memory. It reads
// sysfs directly rather than running lscpu, so it works in a minimal container and against fixture trees.
package topology
