package e2e

import (
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gleaner-sh/gleaner/internal/localcluster"
)

// The node is the real machine: Ready, untainted, running the versions the tooling builds, with the machine's
// CPUs.
func TestNodeIsReady(t *testing.T) {
	e := suite.Env(t)
	node, err := e.Clientset.CoreV1().Nodes().Get(e.Ctx, localcluster.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		t.Errorf("node %s is not Ready: %+v", node.Name, node.Status.Conditions)
	}
	if len(node.Spec.Taints) != 0 {
		t.Errorf("node %s has taints %+v, want none", node.Name, node.Spec.Taints)
	}
	info := node.Status.NodeInfo
	if info.KubeletVersion != "v1.36.3" || info.ContainerRuntimeVersion != "containerd://2.4.2" {
		t.Errorf("kubelet %s, runtime %s; want v1.36.3 and containerd://2.4.2", info.KubeletVersion, info.ContainerRuntimeVersion)
	}
	if got := node.Status.Capacity.Cpu().Value(); got != int64(runtime.NumCPU()) {
		t.Errorf("node CPU capacity %d, want this machine's %d", got, runtime.NumCPU())
	}
}
