package collector

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// DeviceOptions configure the device and interference collectors (storage, podio, cpi, coldmemory, gpu).
type DeviceOptions struct {
	// KubeletRootDir is the kubelet's --root-dir, whose file system the storage collector reports.
	KubeletRootDir string
	// RuntimeRootDir is the container runtime's root (containerd's "root"), likewise.
	RuntimeRootDir string
	// CPIMaxContainers caps the containers the CPI collector keeps counters on: each costs two counters per CPU
	// and a read per CPU each round. Containers beyond it (by namespace, pod and container name) are left out
	// and counted in gleaner_agent_cpi_containers{state="capped"}.
	CPIMaxContainers int
	// ColdAge is how long a page must have been idle to count as cold; kidled counts ages in scan periods, so it
	// is rounded up to the next bucket bound.
	ColdAge time.Duration
	// GPUMaxDevices caps the GPUs reported (in NodeMetric and as metrics), in index order.
	GPUMaxDevices int
}

// DefaultDeviceOptions are the defaults of the agent's flags.
func DefaultDeviceOptions() DeviceOptions {
	return DeviceOptions{
		KubeletRootDir:   "/var/lib/kubelet",
		RuntimeRootDir:   "/var/lib/containerd",
		CPIMaxContainers: 256,
		ColdAge:          5 * time.Minute,
		GPUMaxDevices:    16,
	}
}

// Validate reports every invalid field.
func (o DeviceOptions) Validate() error {
	var errs []error
	for _, d := range []struct{ flag, v string }{{"--kubelet-root-dir", o.KubeletRootDir}, {"--runtime-root-dir", o.RuntimeRootDir}} {
		if !filepath.IsAbs(d.v) {
			errs = append(errs, fmt.Errorf("%s must be an absolute path, got %q", d.flag, d.v))
		}
	}
	if o.CPIMaxContainers < 1 || o.CPIMaxContainers > 4096 {
		errs = append(errs, fmt.Errorf("--cpi-max-containers must be in [1, 4096], got %d", o.CPIMaxContainers))
	}
	if o.ColdAge <= 0 {
		errs = append(errs, fmt.Errorf("--cold-memory-age must be positive, got %s", o.ColdAge))
	}
	if o.GPUMaxDevices < 1 || o.GPUMaxDevices > 64 {
		errs = append(errs, fmt.Errorf("--gpu-max-devices must be in [1, 64], got %d", o.GPUMaxDevices))
	}
	return errors.Join(errs...)
}

// stepAside reports that a host lacks what a collector reads once, as the PSI collector does on cgroup v1: the
// first round (and a round whose reason changed) returns the error, which the Runner logs and counts as
// unsupported; later rounds return nil, so a host without the feature runs clean. The collector keeps checking
// each round, and measures as soon as the feature appears.
type stepAside struct{ said string }

// once returns err if it wraps system.ErrUnsupported and was not said last; other errors always.
func (s *stepAside) once(err error) error {
	if !errors.Is(err, system.ErrUnsupported) {
		return err
	}
	if err.Error() == s.said {
		return nil
	}
	s.said = err.Error()
	return err
}

// reset forgets what was said: the feature is there now.
func (s *stepAside) reset() { s.said = "" }
