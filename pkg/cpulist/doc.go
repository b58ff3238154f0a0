// Package cpulist parses Linux CPU lists ("0-3,8,10-11") with a bound on the CPU numbers, for the agent (cpusets,
// sysfs topology, runtime requests) and the API (a node reservation's reservedCPUs) alike.
package cpulist
