package gpu

import (
	"errors"
	"fmt"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// Library is the part of NVML the agent uses. Device indexes are NVML's, 0..DeviceCount-1. Implementations need
// not be safe for concurrent use: the GPU collector calls them from one goroutine.
type Library interface {
	// Init loads and initialises the driver's library. An error wrapping ErrNoDriver (and so
	// system.ErrUnsupported) says there is no GPU driver, or no NVML in this build; the caller may try again later.
	// Every other method may be called only after a successful Init.
	Init() error
	// DeviceCount is the number of GPUs the driver sees.
	DeviceCount() (int, error)
	// Device describes GPU i and its current memory and utilisation. A GPU that fell off the bus is an error
	// wrapping ErrLost.
	Device(i int) (Device, error)
	// Processes lists the processes with a context on GPU i (compute and graphics) and the GPU memory each uses.
	// A process in both lists is listed once.
	Processes(i int) ([]Process, error)
	// ProcessUtilization lists the SM utilisation of processes on GPU i in the samples newer than since (a
	// timestamp in microseconds the previous call returned in a sample; 0 for all the driver keeps). A GPU that
	// cannot tell is an error wrapping ErrNotSupported.
	ProcessUtilization(i int, since uint64) ([]ProcessSample, error)
}

// Device is one GPU.
type Device struct {
	// Index is NVML's index of the GPU.
	Index int
	// UUID is the GPU's UUID ("GPU-8f6b...").
	UUID string
	// Model is its product name ("NVIDIA H100 80GB HBM3").
	Model string
	// MemoryTotal and MemoryUsed are its memory in bytes.
	MemoryTotal, MemoryUsed uint64
	// Utilization is the share of the last sample period (1/6 s to 1 s, by product) in which a kernel ran, 0..1.
	Utilization float64
}

// Process is a process using a GPU.
type Process struct {
	// PID is its id in the host's pid namespace.
	PID int
	// Memory is the GPU memory it uses, bytes; 0 where the driver cannot tell (Windows WDDM, some vGPUs).
	Memory uint64
}

// ProcessSample is one utilisation sample of a process on a GPU.
type ProcessSample struct {
	// PID is its id in the host's pid namespace.
	PID int
	// SM is the share of the GPU's streaming multiprocessors it used, 0..1.
	SM float64
	// Timestamp is when the sample was taken, microseconds; pass the newest to the next call.
	Timestamp uint64
}

// ErrNoDriver says there is no NVIDIA driver (libnvidia-ml.so.1 cannot be loaded, or the kernel module is not
// loaded), or this build has no NVML. It wraps system.ErrUnsupported.
var ErrNoDriver = fmt.Errorf("no NVIDIA GPU driver: %w", system.ErrUnsupported)

// ErrLost says a GPU fell off the bus or stopped answering (NVML_ERROR_GPU_IS_LOST); it needs a reset or a reboot.
var ErrLost = errors.New("the GPU is lost")

// ErrNotSupported says a GPU does not support a query (NVML_ERROR_NOT_SUPPORTED), such as process utilisation on
// older products.
var ErrNotSupported = errors.New("not supported by this GPU")
