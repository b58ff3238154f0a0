// Package cpuinfo reads what CPU normalization needs to know about a node's processors (slov1alpha1.CPUBasicInfo):
// the CPU model and vendor from /proc/cpuinfo, whether hyper-threading is active and whether turbo is on from
// /sys. Every path goes through the roots it is given, so tests point them at the fixture trees under testdata/.
package cpuinfo
