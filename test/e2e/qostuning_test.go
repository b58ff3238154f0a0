package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// The QoS tuning plugins on the local node (docs/qos.md): each test turns a strategy on through the
// slo-controller-config ConfigMap, waits for the kernel files to carry it, turns it off again and waits for the
// kernel's own values to come back.

// TestCPUBurstFollowsTheConfigMap: a service pod with a CPU limit gets a CFS burst of its quota on its container
// and pod cgroups while cpu-burst-config asks for it, and none once the key is gone.
func TestCPUBurstFollowsTheConfigMap(t *testing.T) {
	e := suite.Env(t)
	setSLOConfig(e, "cpu-burst-config", `{"clusterStrategy": {"policy": "cpuBurstOnly", "cpuBurstPercent": 100}}`,
		func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
			s := spec.CPUBurstStrategy
			return s != nil && s.Policy == slov1alpha1.CPUBurstOnly, fmt.Sprintf("NodeSLO cpuBurstStrategy %+v", s)
		})
	pod := e.RunPod(testutil.Pod("burst-service").Container("c").Image(PauseImage).
		Requests("cpu", "100m").Limits("cpu", "500m").Obj())
	podDir := filepath.Join("/sys/fs/cgroup/cpu/kubepods/burstable", "pod"+string(pod.UID))
	ctnrDir := filepath.Join(podDir, containerID(t, pod))
	quota := expectedQuota(500) // 50 ms per 100 ms

	waitForFile(e, filepath.Join(ctnrDir, "cpu.cfs_burst_us"), fmt.Sprint(quota))
	waitForFile(e, filepath.Join(podDir, "cpu.cfs_burst_us"), fmt.Sprint(quota))

	setSLOConfig(e, "cpu-burst-config", "", func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
		s := spec.CPUBurstStrategy
		return s == nil || s.Policy == "" || s.Policy == slov1alpha1.CPUBurstNone, fmt.Sprintf("NodeSLO cpuBurstStrategy %+v", s)
	})
	waitForFile(e, filepath.Join(ctnrDir, "cpu.cfs_burst_us"), "0")
	waitForFile(e, filepath.Join(podDir, "cpu.cfs_burst_us"), "0")
	if got := readInt(t, filepath.Join(ctnrDir, "cpu.cfs_quota_us")); got != quota {
		t.Errorf("the container's quota is %d after the burst was turned off, want the kubelet's %d", got, quota)
	}
}

// waitForFile waits until the kernel file path holds want (surrounding space ignored).
func waitForFile(e *Env, path, want string) {
	e.t.Helper()
	e.Eventually(time.Minute, func(context.Context) (bool, string) {
		b, err := os.ReadFile(path)
		if err != nil {
			return false, err.Error()
		}
		got := strings.TrimSpace(string(b))
		return got == want, fmt.Sprintf("%s = %q, want %q", path, got, want)
	})
}
