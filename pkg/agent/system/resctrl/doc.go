// Package resctrl reads the kernel's resource control file system (Intel RDT, AMD Platform QoS), mounted at
// /sys/fs/resctrl: whether this host can partition the last-level cache (L3 CAT, with or without CDP) and memory
// bandwidth (MBA), the limits its info directory states, the cache domains of the root group's schemata, and the
// tasks of a group. It computes the schemata a class of pods gets from percentages (cache ways as a contiguous
// bit mask, bandwidth in the hardware's steps) and refuses values the hardware cannot take.
//
// It only reads; the agent's writes (a group's directory, its schemata, moving tasks into it) go through the
// resource executor. Every path is under an injected root, so tests run against fixture trees (see resctrltest).
package resctrl
