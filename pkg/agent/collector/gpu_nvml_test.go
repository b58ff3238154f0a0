//go:build nvml && cgo

package collector

import (
	"os"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/hostsim"
)

// TestGPUCollectorOnTheMachinesGPUs runs the GPU collector on the machine's own NVML in the real-GPU check
// (hack/gpu-check/run.sh, which sets GLEANER_REAL_GPUS from nvidia-smi -L and holds GLEANER_GPU_HOLD_BYTES on GPU 0):
// one round reports every GPU, with its memory, and at least the held memory in use on GPU 0. Elsewhere it skips.
func TestGPUCollectorOnTheMachinesGPUs(t *testing.T) {
	want, err := strconv.Atoi(os.Getenv("GLEANER_REAL_GPUS"))
	if err != nil {
		t.Skip("GLEANER_REAL_GPUS is not set: hack/gpu-check/run.sh sets it on a GPU machine")
	}
	r := newDeviceRig(t, hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs}, DefaultDeviceOptions(), GPUName)
	if err := r.cycles(t, 1); err != nil {
		t.Fatalf("a round of the GPU collector on this machine: %v", err)
	}
	d := r.metrics.Devices
	if got := testutil.CollectAndCount(d.GPUInfo); got != want {
		t.Errorf("the collector reports %d GPUs, nvidia-smi lists %d", got, want)
	}
	for i := range want {
		idx := strconv.Itoa(i)
		total, used := testutil.ToFloat64(d.GPUMemoryTotal.WithLabelValues(idx)), testutil.ToFloat64(d.GPUMemoryUsed.WithLabelValues(idx))
		util := testutil.ToFloat64(d.GPUUtilization.WithLabelValues(idx))
		t.Logf("GPU %s: memory %.0f of %.0f bytes used, utilization %.2f", idx, used, total, util)
		if total <= 0 || used > total || util < 0 || util > 1 {
			t.Errorf("GPU %s: memory %v of %v, utilization %v", idx, used, total, util)
		}
	}
	if held, err := strconv.ParseFloat(os.Getenv("GLEANER_GPU_HOLD_BYTES"), 64); err == nil {
		if used := testutil.ToFloat64(d.GPUMemoryUsed.WithLabelValues("0")); used < held {
			t.Errorf("GPU 0: %.0f bytes used reported while %.0f are held on it", used, held)
		}
	}
}
