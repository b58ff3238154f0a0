//go:build nvml && cgo

package gpu

import (
	"errors"
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
