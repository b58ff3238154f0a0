//go:build nvml && cgo

package gpu

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NewNVML returns the Library on the driver's NVML, loaded with dlopen at Init.
func NewNVML() Library { return &nvmlLibrary{} }

type nvmlLibrary struct{}

// nvmlError maps an NVML return code to the package's errors, saying what was being done.
func nvmlError(what string, r nvml.Return) error {
	if r == nvml.SUCCESS {
		return nil
	}
	var sentinel error
	switch r {
	case nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED:
		sentinel = ErrNoDriver
	case nvml.ERROR_GPU_IS_LOST:
		sentinel = ErrLost
	case nvml.ERROR_NOT_SUPPORTED:
		sentinel = ErrNotSupported
	}
	if sentinel != nil {
		return fmt.Errorf("%s: %w (%s)", what, sentinel, r.Error())
	}
	return fmt.Errorf("%s: %s", what, r.Error())
}

func (l *nvmlLibrary) Init() error { return nvmlError("initialising NVML", nvml.Init()) }

func (l *nvmlLibrary) DeviceCount() (int, error) {
	n, r := nvml.DeviceGetCount()
	return n, nvmlError("counting GPUs", r)
}

func (l *nvmlLibrary) handle(i int) (nvml.Device, error) {
	d, r := nvml.DeviceGetHandleByIndex(i)
	return d, nvmlError(fmt.Sprintf("finding GPU %d", i), r)
}

func (l *nvmlLibrary) Device(i int) (Device, error) {
	h, err := l.handle(i)
	if err != nil {
		return Device{}, err
	}
	out := Device{Index: i}
	var r nvml.Return
	if out.UUID, r = h.GetUUID(); r != nvml.SUCCESS {
		return Device{}, nvmlError(fmt.Sprintf("reading the UUID of GPU %d", i), r)
	}
	if out.Model, r = h.GetName(); r != nvml.SUCCESS {
		return Device{}, nvmlError(fmt.Sprintf("reading the name of GPU %d", i), r)
	}
	mem, r := h.GetMemoryInfo()
	if r != nvml.SUCCESS {
		return Device{}, nvmlError(fmt.Sprintf("reading the memory of GPU %d", i), r)
	}
	out.MemoryTotal, out.MemoryUsed = mem.Total, mem.Used
	u, r := h.GetUtilizationRates()
	switch {
	case r == nvml.SUCCESS:
		out.Utilization = float64(u.Gpu) / 100
	case r != nvml.ERROR_NOT_SUPPORTED: // MIG mode and some vGPUs: no device-wide utilisation, left at 0
		return Device{}, nvmlError(fmt.Sprintf("reading the utilisation of GPU %d", i), r)
	}
	return out, nil
}

func (l *nvmlLibrary) Processes(i int) ([]Process, error) {
	h, err := l.handle(i)
	if err != nil {
		return nil, err
	}
	seen := map[uint32]int{}
	var out []Process
	for _, list := range []func() ([]nvml.ProcessInfo, nvml.Return){h.GetComputeRunningProcesses, h.GetGraphicsRunningProcesses} {
		procs, r := list()
		if r == nvml.ERROR_NOT_SUPPORTED {
			continue
		}
		if r != nvml.SUCCESS {
			return nil, nvmlError(fmt.Sprintf("listing the processes of GPU %d", i), r)
		}
		for _, p := range procs {
			mem := p.UsedGpuMemory
			if int64(mem) == nvml.VALUE_NOT_AVAILABLE {
				mem = 0
			}
			if j, ok := seen[p.Pid]; ok {
				out[j].Memory = max(out[j].Memory, mem)
				continue
			}
			seen[p.Pid] = len(out)
			out = append(out, Process{PID: int(p.Pid), Memory: mem})
		}
	}
	return out, nil
}

func (l *nvmlLibrary) ProcessUtilization(i int, since uint64) ([]ProcessSample, error) {
	h, err := l.handle(i)
	if err != nil {
		return nil, err
	}
	samples, r := h.GetProcessUtilization(since)
	if r == nvml.ERROR_NOT_FOUND { // no sample newer than since
		return nil, nil
	}
	if err := nvmlError(fmt.Sprintf("reading the process utilisation of GPU %d", i), r); err != nil {
		return nil, err
	}
	out := make([]ProcessSample, 0, len(samples))
	for _, s := range samples {
		out = append(out, ProcessSample{PID: int(s.Pid), SM: float64(s.SmUtil) / 100, Timestamp: s.TimeStamp})
	}
	return out, nil
}

// HasNVML reports whether this build has NVML: true.
func HasNVML() bool { return true }
