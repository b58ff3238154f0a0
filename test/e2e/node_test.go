package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/pkg/nrt"
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

// expectKubeletManagersPublished: the deployed agent, with config/default's mounts and privileges, asked the local
// kubelet for its CPU and memory managers on its pod-resources socket and published the kubelet's defaults on the
// node's NodeResourceTopology (the CRD installed before the agent started: its reporter looks for a missing CRD
// only every 10 minutes).
func expectKubeletManagersPublished(t *testing.T, e *Env) {
	t.Helper()
	want := slov1alpha1.KubeletResourceManagers{CPUManagerPolicy: "none", MemoryManagerPolicy: "None"}
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		u := nrt.New()
		if err := e.Client.Get(ctx, client.ObjectKey{Name: localcluster.NodeName}, u); err != nil {
			return false, "NodeResourceTopology: " + err.Error()
		}
		got, err := slov1alpha1.KubeletResourceManagersOf(u.GetAnnotations())
		if err != nil {
			return false, err.Error()
		}
		return got == want, fmt.Sprintf("published %+v, want %+v", got, want)
	})
}

// installTopologyCRD installs the NodeResourceTopology CRD, as a topology-aware scheduler's install would.
func installTopologyCRD(t *testing.T, e *Env) {
	t.Helper()
	crd := filepath.Join(e.Suite.RepoRoot, "test", "testenv", "crds", "noderesourcetopology.yaml")
	if _, err := e.Cluster.Kubectl(e.Ctx, "apply", "--server-side", "-f", crd); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Cluster.Kubectl(e.Ctx, "wait", "--for=condition=Established", "--timeout=60s", "-f", crd); err != nil {
		t.Fatal(err)
	}
}
