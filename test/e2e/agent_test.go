package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// burnerLoad is what the burner pod of these tests burns, in cores.
const burnerLoad = 0.3

// gleaner-agent, deployed from the manifests as a DaemonSet on the real node, measures it from /proc and the real
// cgroups: its NodeMetric reports a pod burning 0.3 cores at about that (the node's usage above it), and from that
// report gleaner-manager publishes batch resources on the node, which a batch pod then runs on.
func TestAgentMeasuresTheRealNode(t *testing.T) {
	e := suite.Env(t)
	burner := e.RunPod(testutil.Pod("burner").PriorityClass("gleaner-prod").Label(slov1alpha1.LabelQoSClass, "LS").
		Image(BurnerImage, fmt.Sprintf("--load=%.1f", burnerLoad)).Requests("cpu", "500m", "memory", "32Mi").Obj())

	// The local cluster's config averages over 30 s and reports every 10 s (config/local/slo-controller-config.yaml):
	// the pod's average nears its load once the window holds mostly its burning (a pod younger than half the window
	// is not reported at all).
	e.Eventually(4*time.Minute, func(ctx context.Context) (bool, string) {
		nm := &slov1alpha1.NodeMetric{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: localcluster.NodeName}, nm); err != nil {
			return false, err.Error()
		}
		if nm.Status.NodeMetric == nil || nm.Status.UpdateTime == nil {
			return false, "the NodeMetric has no status yet"
		}
		var pod *slov1alpha1.PodUsage
		for i := range nm.Status.PodUsages {
			if nm.Status.PodUsages[i].UID == string(burner.UID) {
				pod = &nm.Status.PodUsages[i]
			}
		}
		if pod == nil {
			return false, fmt.Sprintf("the NodeMetric of %s lists %d pods, not the burner yet", nm.Status.UpdateTime, len(nm.Status.PodUsages))
		}
		cpu := float64(pod.CPUMillis) / 1000
		node := nm.Status.NodeMetric.NodeUsage.Cpu().AsApproximateFloat64()
		msg := fmt.Sprintf("burner %.3f cores (priority %q, prod when empty), node %.3f, system %v", cpu, pod.Priority, node, nm.Status.NodeMetric.SystemUsage)
		// The burner spins by the wall clock, so on a busy 2-core machine it gets less than its load, never more:
		// the bounds are loose below and tight above. The agent's accuracy against the kernel's own counters is
		// TestRealKernelPodUsage's (within 10%).
		ok := cpu > burnerLoad*0.5 && cpu < burnerLoad*1.15 && node >= cpu &&
			pod.Priority == "" && pod.MemoryBytes > 0 && nm.Status.NodeMetric.SystemUsage.Cpu().Sign() > 0
		return ok, msg
	})

	// The manager's batch plugin turns the report into batch-cpu and batch-memory on the node.
	e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) {
		node, err := e.Clientset.CoreV1().Nodes().Get(ctx, localcluster.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c, okC := node.Status.Allocatable[slov1alpha1.BatchCPU]
		m, okM := node.Status.Allocatable[slov1alpha1.BatchMemory]
		var exp slov1alpha1.NodeResourceExplanation
		explained := e.Client.Get(ctx, client.ObjectKey{Name: localcluster.NodeName}, &exp) == nil && len(exp.Status.Resources) > 0
		return okC && okM && m.Value() > 0 && explained && node.Annotations[slov1alpha1.LegacyAnnotationResourceExplanation] == "",
			fmt.Sprintf("allocatable batch-cpu %s, batch-memory %s, NodeResourceExplanation written: %t (the node carries no explanation annotation)", c.String(), m.String(), explained)
	})

	// A batch pod that asks for a share of them is admitted by the scheduler and the kubelet, and runs. The burner
	// has been measured; removing it and the safety margin leaves batch-cpu for the pod even on a busy node.
	e.DeletePod(burner)
	const ask = 100 // millicores of batch-cpu
	_ = e.MakeRoomForBatch(ask)
	batch := testutil.Pod("batch").PriorityClass("gleaner-batch").Label(slov1alpha1.LabelQoSClass, "BE").Image(PauseImage).Obj()
	batchResources := corev1.ResourceList{
		slov1alpha1.BatchCPU: *resource.NewQuantity(ask, resource.DecimalSI), slov1alpha1.BatchMemory: resource.MustParse("64Mi"),
	}
	batch.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: batchResources, Limits: batchResources}
	e.RunPod(batch)
}
