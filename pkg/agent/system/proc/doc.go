// Package proc reads node-wide figures from a /proc tree, each read bounded and each value checked: cumulative CPU
// time (/proc/stat), memory (/proc/meminfo) and pressure stall information (/proc/pressure/*). The tree's root is
// passed in; in a container /proc/stat, /proc/meminfo and /proc/pressure already show the whole host, so the agent
// reads its own /proc unless told otherwise.
package proc
