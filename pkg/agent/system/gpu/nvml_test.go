//go:build nvml && cgo

package gpu

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// NVML's return codes map to the package's errors.
func TestNVMLErrors(t *testing.T) {
	tests := []struct {
		r    nvml.Return
		want error
	}{
		{nvml.ERROR_LIBRARY_NOT_FOUND, ErrNoDriver},
		{nvml.ERROR_DRIVER_NOT_LOADED, ErrNoDriver},
		{nvml.ERROR_GPU_IS_LOST, ErrLost},
		{nvml.ERROR_NOT_SUPPORTED, ErrNotSupported},
	}
	for _, tt := range tests {
		if err := nvmlError("doing", tt.r); !errors.Is(err, tt.want) {
			t.Errorf("nvmlError(%v) = %v, want %v", tt.r, err, tt.want)
		}
	}
	if !errors.Is(nvmlError("doing", nvml.ERROR_LIBRARY_NOT_FOUND), system.ErrUnsupported) {
		t.Error("a missing library is not unsupported")
	}
	if err := nvmlError("doing", nvml.ERROR_UNKNOWN); err == nil || errors.Is(err, ErrLost) {
		t.Errorf("ERROR_UNKNOWN = %v", err)
	}
	if nvmlError("doing", nvml.SUCCESS) != nil {
		t.Error("SUCCESS is an error")
	}
}

// On a machine without the driver, Init fails with ErrNoDriver rather than crashing the agent; with one (a GPU
// machine) it lists the GPUs.
func TestNVMLOnThisMachine(t *testing.T) {
	l := NewNVML()
	err := l.Init()
	if errors.Is(err, ErrNoDriver) {
		t.Logf("no driver here: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	n, err := l.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		d, err := l.Device(i)
		if err != nil {
			t.Fatal(err)
		}
		if d.UUID == "" || d.MemoryTotal == 0 || d.MemoryUsed > d.MemoryTotal || d.Utilization < 0 || d.Utilization > 1 {
			t.Errorf("GPU %d: %+v", i, d)
		}
		procs, err := l.Processes(i)
		t.Logf("GPU %d: %+v; %d processes (%v)", i, d, len(procs), err)
	}
}

// TestNVMLSeesMemoryHeldOnARealGPU runs in the real-GPU check (hack/gpu-check/run.sh), while gpuhold keeps
// GLEANER_GPU_HOLD_BYTES in use on GPU 0: NVML must report at least that much memory used there, and lists the holder
// among GPU 0's processes where this process can see the host's PIDs. Elsewhere it skips: no GPU memory is held.
func TestNVMLSeesMemoryHeldOnARealGPU(t *testing.T) {
	pidEnv, bytesEnv := os.Getenv("GLEANER_GPU_HOLD_PID"), os.Getenv("GLEANER_GPU_HOLD_BYTES")
	if pidEnv == "" {
		t.Skip("no GPU memory held here: hack/gpu-check/run.sh holds some on a GPU machine")
	}
	pid, err := strconv.Atoi(pidEnv)
	if err != nil {
		t.Fatal(err)
	}
	held, err := strconv.ParseUint(bytesEnv, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	l := NewNVML()
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	d, err := l.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	if d.MemoryUsed < held {
		t.Errorf("GPU 0 reports %d bytes used while %d are held on it: %+v", d.MemoryUsed, held, d)
	}
	procs, err := l.Processes(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.PID == pid {
			if p.Memory != 0 && p.Memory < held {
				t.Errorf("the holder (pid %d) uses %d bytes of GPU 0, want at least %d", pid, p.Memory, held)
			}
			t.Logf("GPU 0: %+v; the holder is process %+v", d, p)
			return
		}
	}
	// NVML names processes by their PID in the host's namespace; a check run in a container sees other numbers.
	t.Logf("GPU 0: %+v; the holder (pid %d here) is not among its processes %+v: this check does not run in the host's pid namespace", d, pid, procs)
}
