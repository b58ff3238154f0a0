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
// under the kubelet's root, and a pod writing 4 MiB/s to an emptyDir on the node's disk shows in the pod's disk
// rate, read from its blkio cgroup, at about that rate. CPI is not checked here: this machine (a VM) has no hardware
// counters, and the CPI collector is off by default (docs/agent.md).
func TestAgentReportsStorageAndPodDiskIO(t *testing.T) {
	e := suite.Env(t)
	pod := testutil.Pod("writer").PriorityClass("gleaner-prod").Label(slov1alpha1.LabelQoSClass, "LS").
		Image(DiskWriterImage, "--dir=/data", "--rate=4Mi", "--size=32Mi").Requests("cpu", "100m", "memory", "32Mi").Obj()
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	writer := e.RunPod(pod)

	metrics := agentMetrics(e)
	for _, want := range []string{"gleaner_agent_block_device_info{", `gleaner_agent_filesystem_info{major_minor=`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("the agent's metrics lack %s", want)
		}
	}
	if !strings.Contains(metrics, `role="kubelet"`) {
		t.Errorf("the agent's metrics name no file system for the kubelet's root")
	}

	// 4 MiB/s written; a busy machine may lag the writer, and the agent's rate is over its collection interval.
	const want = 4 << 20
	e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) {
		rate, lines := podDiskRate(agentMetrics(e), writer.Namespace, writer.Name, "write")
		return rate > want/4 && rate < want*1.5, fmt.Sprintf("pod disk write rate %.0f bytes/s, want about %d; series: %v", rate, want, lines)
	})
}

// podDiskRate sums gleaner_agent_pod_disk_bytes_per_second of one pod and direction over its devices, with the
// series it read.
func podDiskRate(metrics, namespace, pod, direction string) (float64, []string) {
	var sum float64
	var lines []string
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, "gleaner_agent_pod_disk_bytes_per_second{") ||
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
