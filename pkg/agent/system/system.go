package system

import "errors"

// ErrUnsupported says the host lacks what a read or write needs: a kernel without the file (cpu.cfs_burst_us
// before 5.14, /proc/pressure without CONFIG_PSI), or a cgroup version without the concept (per-cgroup pressure on
// cgroup v1). It is wrapped with what was being done; test it with errors.Is. It does not go away by retrying, so
// callers report it once and step aside, rather than on every collection.
var ErrUnsupported = errors.New("not supported on this host")

// PSIResource is a resource the kernel keeps pressure stall information for, in /proc/pressure/<r> for the node
// and in <r>.pressure for a cgroup v2 group.
type PSIResource string

// The resources with pressure stall information.
const (
	PSICPU    PSIResource = "cpu"
	PSIMemory PSIResource = "memory"
	PSIIO     PSIResource = "io"
)

// PSIResources lists every PSIResource.
func PSIResources() []PSIResource { return []PSIResource{PSICPU, PSIMemory, PSIIO} }

// MaxMemoryBytes is the largest memory figure the agent believes of a kernel file: 4 PiB, 2^52 bytes, the largest
// physical address space of any architecture Linux runs on (x86-64 with 5-level paging, arm64 with 52-bit physical
// addresses). A larger figure is a corrupt file; one in kB near 2^64 would also wrap when turned into bytes.
const MaxMemoryBytes = 1 << 52
