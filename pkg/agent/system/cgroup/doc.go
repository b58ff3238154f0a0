// Package cgroup is gleaner-agent's access to the cgroup filesystem: which version is mounted (DetectVersion),
// which driver the kubelet uses (DetectDriver), where the kubelet puts QoS classes, pods and containers (Layout),
// and a Reader/Writer over the files the agent uses, with one API for cgroup v1 and v2 (FS). FS.Kill kills a
// cgroup's processes, the evictor's last resort while the API server cannot be reached.
//
// Paths given to Reader and Writer are cgroup paths relative to the hierarchy root, as Layout returns them
// ("kubepods/burstable/pod<uid>"): the same string on v1 and v2. On v1 FS adds the subsystem directory (cpu,
// cpuacct, cpuset, memory, blkio) that owns each file; files.go is the table of which v1 file maps to which v2 file.
//
// # Why a thin own layer and not github.com/containerd/cgroups/v3
//
// When this was decided the agent read nine values and wrote five (now about twenty and twelve), from plain files
// under a root it is given. containerd/cgroups models whole controllers: its v1 side finds hierarchies through
// /proc/self/mountinfo (a fixture tree needs a custom Hierarchy for every subsystem), its memory stats read every
// memory.* file and fail when one is missing (fixtures must carry the full kernel file set), its writers create
// missing files with mode 0 (a typo'd path on a fixture silently "works"; a kernel without cpu.cfs_burst_us looks
// supported), and its Stat returns a protobuf message the agent would translate again. Covering the agent's needs on
// both versions with it came to more code in adapters than this package then had in total (about 400 lines without
// tests; it has grown with the values to about 2,200), and its tests would exercise the library's assumptions
// instead of the kernel formats. So this package reads and writes the files directly, never creates a file, and maps
// "file missing in an existing cgroup" to system.ErrUnsupported.
package cgroup
