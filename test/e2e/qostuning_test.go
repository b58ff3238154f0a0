package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
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
	podDir := cgroupDir(t, "cpu", filepath.Join("kubepods/burstable", "pod"+string(pod.UID)))
	ctnrDir := filepath.Join(podDir, containerID(t, pod))
	quota := expectedQuota(500) // 50 ms per 100 ms
	// cgroup v2: cpu.max.burst, in the same microseconds.
	burstFile := "cpu.cfs_burst_us"
	if cgroupV2(t) {
		burstFile = "cpu.max.burst"
	}

	waitForFile(e, filepath.Join(ctnrDir, burstFile), fmt.Sprint(quota))
	waitForFile(e, filepath.Join(podDir, burstFile), fmt.Sprint(quota))

	setSLOConfig(e, "cpu-burst-config", "", func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
		s := spec.CPUBurstStrategy
		return s == nil || s.Policy == "" || s.Policy == slov1alpha1.CPUBurstNone, fmt.Sprintf("NodeSLO cpuBurstStrategy %+v", s)
	})
	waitForFile(e, filepath.Join(ctnrDir, burstFile), "0")
	waitForFile(e, filepath.Join(podDir, burstFile), "0")
	if got := quotaCores(t, ctnrDir); got != float64(quota)/cfsPeriod {
		t.Errorf("the container's quota is %.2f cores after the burst was turned off, want the kubelet's %.2f", got, float64(quota)/cfsPeriod)
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

// TestBestEffortCgroupsFollowTheConfigMap: with the defaults the besteffort QoS cgroup runs SCHED_IDLE
// (cpu.idle 1) under the services; resource-qos-config turning the beClass's blkio QoS on caps the besteffort
// cgroup and a best-effort pod's cgroup on a disk; turning both off puts the kernel's values back.
func TestBestEffortCgroupsFollowTheConfigMap(t *testing.T) {
	e := suite.Env(t)
	pod := e.RunPod(testutil.Pod("tuning-be").Container("c").Image(PauseImage).Obj()) // Kubernetes BestEffort: class BE
	const besteffort = "kubepods/besteffort"
	podDir := filepath.Join(besteffort, "pod"+string(pod.UID))
	idle := filepath.Join(cgroupDir(t, "cpu", besteffort), "cpu.idle")
	waitForFile(e, idle, "1")
	// The kernel refuses the kubelet's cpu.shares of the idle besteffort cgroup, and the kubelet's QoS update stops
	// there; the agent keeps the burstable cgroup's weight at the kubelet's value for it, also for a new service.
	e.RunPod(testutil.Pod("tuning-svc").Container("c").Image(PauseImage).Requests("cpu", "300m").Obj())
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		list, err := e.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + localcluster.NodeName})
		if err != nil {
			return false, err.Error()
		}
		var pods []*corev1.Pod
		for i := range list.Items {
			pods = append(pods, &list.Items[i])
		}
		want, file := int64(cgroup.BurstableShares(pods)), filepath.Join(cgroupDir(t, "cpu", "kubepods/burstable"), "cpu.shares")
		if cgroupV2(t) {
			want, file = expectedWeight(want), filepath.Join(filepath.Dir(file), "cpu.weight")
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return false, err.Error()
		}
		got := strings.TrimSpace(string(b))
		return got == fmt.Sprint(want), fmt.Sprintf("burstable %s %s, want the kubelet's %d", filepath.Base(file), got, want)
	})

	disk := loopDisk(e)
	const writeBPS = 10 << 20
	file, line := "blkio.throttle.write_bps_device", fmt.Sprintf("%s %d", disk.dev, writeBPS)
	if cgroupV2(t) {
		file, line = "io.max", fmt.Sprintf("%s rbps=max wbps=%d riops=max wiops=max", disk.dev, writeBPS)
	}
	setSLOConfig(e, "resource-qos-config", fmt.Sprintf(`{"clusterStrategy": {"beClass": {
		"cpuQOS": {"enable": false},
		"blkioQOS": {"enable": true, "blocks": [{"name": %q, "type": "device", "ioCfg": {"writeBPS": %d}}]}}}}`, disk.path, writeBPS),
		func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
			be := spec.ResourceQOSStrategy
			ok := be != nil && be.BEClass != nil && be.BEClass.BlkIOQOS != nil && be.BEClass.BlkIOQOS.Enable != nil &&
				*be.BEClass.BlkIOQOS.Enable
			return ok, fmt.Sprintf("NodeSLO resourceQOSStrategy %+v", be)
		})
	for _, dir := range []string{besteffort, podDir} {
		waitForFile(e, filepath.Join(cgroupDir(t, "blkio", dir), file), line)
	}
	waitForFile(e, idle, "0")

	setSLOConfig(e, "resource-qos-config", "", func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
		be := spec.ResourceQOSStrategy
		return be == nil || be.BEClass == nil, fmt.Sprintf("NodeSLO resourceQOSStrategy %+v", be)
	})
	for _, dir := range []string{besteffort, podDir} {
		waitForFile(e, filepath.Join(cgroupDir(t, "blkio", dir), file), "")
	}
	waitForFile(e, idle, "1")
}

// loopDevice is a block device made for a test.
type loopDevice struct {
	path string // /dev/loopN
	dev  string // major:minor
}

// loopDisk attaches a loop device to a small file in the test's temporary directory, detached when the test ends:
// a disk every machine has, to cap.
func loopDisk(e *Env) loopDevice {
	e.t.Helper()
	backing := filepath.Join(e.t.TempDir(), "disk.img")
	if err := os.WriteFile(backing, nil, 0o600); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Truncate(backing, 16<<20); err != nil {
		e.t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", backing).CombinedOutput()
	if err != nil {
		e.t.Fatalf("attaching a loop device (this test needs root and losetup): %v: %s", err, out)
	}
	path := strings.TrimSpace(string(out))
	e.t.Cleanup(func() {
		if out, err := exec.Command("losetup", "--detach", path).CombinedOutput(); err != nil {
			e.t.Errorf("detaching %s: %v: %s", path, err, out)
		}
	})
	dev, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(path), "dev"))
	if err != nil {
		e.t.Fatal(err)
	}
	return loopDevice{path: path, dev: strings.TrimSpace(string(dev))}
}
