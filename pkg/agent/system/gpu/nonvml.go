//go:build !nvml || !cgo

package gpu

import "fmt"

// NewNVML returns the NVML Library. This build has none (it was built without the nvml tag or without cgo): Init
// always fails with ErrNoDriver, saying how to build with it.
func NewNVML() Library { return noNVML{} }

type noNVML struct{}

func (noNVML) Init() error {
	return fmt.Errorf("this agent was built without NVML (build with CGO_ENABLED=1 -tags nvml to report GPUs): %w", ErrNoDriver)
}

func (noNVML) DeviceCount() (int, error)                               { return 0, ErrNoDriver }
func (noNVML) Device(int) (Device, error)                              { return Device{}, ErrNoDriver }
func (noNVML) Processes(int) ([]Process, error)                        { return nil, ErrNoDriver }
func (noNVML) ProcessUtilization(int, uint64) ([]ProcessSample, error) { return nil, ErrNoDriver }

// HasNVML reports whether this build has NVML: false.
func HasNVML() bool { return false }
