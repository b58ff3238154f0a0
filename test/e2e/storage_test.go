package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// DiskWriterImage is the image of a container that writes to its --dir with O_DIRECT at its --rate
// (test/workloads/diskwriter).
const DiskWriterImage = "gleaner.local/diskwriter:dev"

// TestAgentReportsStorageAndPodDiskIO: on the real node the agent names the node's block devices and the file system
// under the kubelet's root, and a pod writing 4 MiB/s to an emptyDir on that file system shows in the pod's disk
// counter, read from its blkio cgroup, growing at about that rate. CPI is not checked here: this machine (a VM) has no hardware
// counters, and the CPI collector is off by default (docs/agent.md).
//
// On cgroup v1 a recent kernel (6.18 here) keeps the blkio.throttle statistics of a device only once some cgroup has a
// throttle limit on it (blk-throttle is set up for a disk at its first limit; before that every cgroup reads
// "Total 0"). The test arranges that the way a user would: the besteffort class's blkio QoS caps the disk far above
// anything it does, and the cap goes again at the end.
func TestAgentReportsStorageAndPodDiskIO(t *testing.T) {
	e := suite.Env(t)
	metrics := agentMetrics(e)
	if !strings.Contains(metrics, "gleaner_agent_block_device_info{") {
		t.Errorf("the agent's metrics name no block device")
	}
	source, dev := kubeletFileSystem(metrics)
	if source == "" || dev == "" {
		t.Fatalf("the agent's metrics name no file system for the kubelet's root:\n%s", grepLines(metrics, "gleaner_agent_filesystem_info"))
	}

	const capBPS = 10 << 30
	setSLOConfig(e, "resource-qos-config", fmt.Sprintf(`{"clusterStrategy": {"beClass": {
		"blkioQOS": {"enable": true, "blocks": [{"name": %q, "type": "device", "ioCfg": {"writeBPS": %d}}]}}}}`, source, int64(capBPS)),
		func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
			be := spec.ResourceQOSStrategy
			ok := be != nil && be.BEClass != nil && be.BEClass.BlkIOQOS != nil && be.BEClass.BlkIOQOS.Enable != nil &&
				*be.BEClass.BlkIOQOS.Enable
			return ok, fmt.Sprintf("NodeSLO resourceQOSStrategy %+v", be)
		})
	waitForFile(e, "/sys/fs/cgroup/blkio/kubepods/besteffort/blkio.throttle.write_bps_device", fmt.Sprintf("%s %d", dev, int64(capBPS)))

	pod := testutil.Pod("writer").PriorityClass("gleaner-prod").Label(slov1alpha1.LabelQoSClass, "LS").
		Image(DiskWriterImage, "--dir=/data", "--rate=4Mi", "--size=32Mi").Requests("cpu", "100m", "memory", "32Mi").Obj()
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	writer := e.RunPod(pod)

	// 4 MiB/s written; a busy machine may lag the writer. The rate is taken as PromQL's rate() takes it, from two
	// readings of the counter a window apart; the agent reads the cgroup every 5 s (podio), so a 30 s window is
	// within a sixth of the rate.
	const want, window = 4 << 20, 30 * time.Second
	var start float64
	var startAt time.Time
	e.Eventually(3*time.Minute, func(ctx context.Context) (bool, string) {
		total, lines := podDiskBytes(agentMetrics(e), writer.Namespace, writer.Name, "write")
		now := time.Now()
		if startAt.IsZero() || total < start {
			start, startAt = total, now
			return false, fmt.Sprintf("pod disk write counter at %.0f bytes; series: %v", total, lines)
		}
		if now.Sub(startAt) < window {
			return false, fmt.Sprintf("pod disk write counter at %.0f bytes, %s into the window; series: %v", total, now.Sub(startAt), lines)
		}
		rate := (total - start) / now.Sub(startAt).Seconds()
		start, startAt = total, now
		return rate > want/4 && rate < want*1.5, fmt.Sprintf("pod disk write rate %.0f bytes/s, want about %d; series: %v", rate, want, lines)
	})
}

// kubeletFileSystem is the source device and major:minor of the file system holding the kubelet's root, from the
// agent's gleaner_agent_filesystem_info.
func kubeletFileSystem(metrics string) (source, dev string) {
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "gleaner_agent_filesystem_info{") && strings.Contains(line, `role="kubelet"`) {
			return label(line, "source"), label(line, "major_minor")
		}
	}
	return "", ""
}

// label is the value of label name in one line of Prometheus' text format, or "".
func label(line, name string) string {
	_, rest, ok := strings.Cut(line, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// grepLines are the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// podDiskBytes sums the counter gleaner_agent_pod_disk_bytes_total of one pod and direction over its devices,
// with the series it read.
func podDiskBytes(metrics, namespace, pod, direction string) (float64, []string) {
	var sum float64
	var lines []string
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, "gleaner_agent_pod_disk_bytes_total{") ||
			!strings.Contains(line, `namespace="`+namespace+`"`) || !strings.Contains(line, `pod="`+pod+`"`) ||
			!strings.Contains(line, `direction="`+direction+`"`) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		sum += v
		lines = append(lines, line)
	}
	return sum, lines
}
