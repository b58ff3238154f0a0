package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// TestAmplifiedPodsSurviveAKubeletRestart: with cpu amplified 2x (resource-amplification-config), a pod that fits
// only the amplified allocatable runs, and keeps running through a restart of the kubelet, which admits the node's
// pods again at its start: its pod source waits for the Node, which the node webhook keeps amplified in the
// kubelet's own status writes. The webhook's removal of the ratio then gives the kubelet's allocatable back
// (docs/qos.md, "Amplification and the kubelet"; with gleaner-manager down at the restart the kubelet's values would
// stand, which this test does not arrange).
//
// The restart is also the kubelet's start beside CPU idle (on by default for class BE): the kubelet exits at start
// when it cannot write the besteffort QoS cgroup's cpu.shares, which the kernel refuses while that cgroup is idle.
// The agent takes idle off while the kubelet starts (docs/qos.md, "The kubelet's start"); the kubelet is restarted
// as its service manager would (a kubelet that exits is started again 10 s later), and the test checks that one
// runs in the end and that the besteffort cgroup is idle again once it has settled.
func TestAmplifiedPodsSurviveAKubeletRestart(t *testing.T) {
	e := suite.Env(t)
	// Class BE's default CPU idle, once the kubelet of a cluster just started has run for the agent's settle time.
	beIdleFile := filepath.Join(cgroupDir(t, "cpu", "kubepods/besteffort"), "cpu.idle")
	waitForFile(e, beIdleFile, "1")
	node, err := e.Clientset.CoreV1().Nodes().Get(e.Ctx, localcluster.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw := node.Status.Allocatable.Cpu().MilliValue()
	setSLOConfig(e, "resource-amplification-config", `{"enable": true, "resourceAmplificationRatio": {"cpu": 2}}`,
		func(*slov1alpha1.NodeSLOSpec) (bool, string) { return true, "" })
	waitAllocatableCPU(e, 2*raw, "amplified 2x")

	// More than the node's real free cpu, less than its amplified free cpu.
	request := raw - requestedCPU(e) + raw/2
	ns := e.Namespace()
	pod := e.RunPodIn(ns, testutil.Pod("amplified").Image(PauseImage).Requests("cpu", fmt.Sprintf("%dm", request), "memory", "16Mi").Obj())
	t.Logf("node: %dm cpu allocatable, %dm amplified; the pod requests %dm", raw, 2*raw, request)

	if err := e.Cluster.RestartKubelet(e.Ctx); err != nil {
		t.Fatal(err)
	}
	// Until the kubelet has written the Node's status again, and for a while after: the pod stays Running and is
	// never rejected (OutOfcpu), and the Node stays amplified.
	first := waitReadySince(e, time.Now())
	waitAllocatableCPU(e, 2*raw, "amplified 2x after the kubelet's restart")
	waitReadySince(e, first) // a second status write: the kubelet writes its own value back at each
	got, err := e.Clientset.CoreV1().Pods(ns).Get(e.Ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodRunning {
		t.Errorf("after the kubelet's restart the pod is %s (%s: %s), want still Running", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	waitAllocatableCPU(e, 2*raw, "amplified 2x, a kubelet status write later")
	e.DeletePod(got)
	waitForFile(e, beIdleFile, "1") // the agent's settle time (30 s) after the kubelet's last start

	// Amplification off: the manager's write that removes the ratio puts the kubelet's allocatable back.
	changeSLOConfig(e, "resource-amplification-config", "", func(*slov1alpha1.NodeSLOSpec) (bool, string) { return true, "" })
	waitAllocatableCPU(e, raw, "the kubelet's own, amplification off")
}

// waitReadySince waits for a status write of the kubelet after since (the Ready condition's heartbeat), and returns
// its time. On an amplified node the kubelet writes at each nodeStatusUpdateFrequency (10 s here): its own value
// and the stored one differ.
func waitReadySince(e *Env, since time.Time) time.Time {
	e.t.Helper()
	var at time.Time
	e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) {
		n, err := e.Clientset.CoreV1().Nodes().Get(ctx, localcluster.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && c.LastHeartbeatTime.After(since) {
				at = c.LastHeartbeatTime.Time
				return true, ""
			}
		}
		return false, fmt.Sprintf("no Ready heartbeat after %s: %+v", since.Format(time.RFC3339), n.Status.Conditions)
	})
	return at
}

// waitAllocatableCPU waits until the node's allocatable cpu is milli millicores.
func waitAllocatableCPU(e *Env, milli int64, what string) {
	e.t.Helper()
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		n, err := e.Clientset.CoreV1().Nodes().Get(ctx, localcluster.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := n.Status.Allocatable.Cpu().MilliValue()
		return got == milli, fmt.Sprintf("allocatable cpu %dm, want %dm (%s); raw %q", got, milli, what, n.Annotations[slov1alpha1.AnnotationRawAllocatable])
	})
}

// requestedCPU sums the cpu requests of the node's pods that have not ended, in millicores, as the scheduler counts
// them.
func requestedCPU(e *Env) int64 {
	e.t.Helper()
	pods, err := e.Clientset.CoreV1().Pods("").List(e.Ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + localcluster.NodeName})
	if err != nil {
		e.t.Fatal(err)
	}
	sum := resource.Quantity{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if q, ok := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})[corev1.ResourceCPU]; ok {
			sum.Add(q)
		}
	}
	return sum.MilliValue()
}
