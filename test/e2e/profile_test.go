package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/runtimehook"
	"github.com/gleaner-sh/gleaner/pkg/cli"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// profileLabel is the namespace label config/samples/colocation-profile.yaml selects.
const profileLabel = "gleaner.sh/colocation-profile"

// The Deployment's container asks for 100m of cpu and 64 MiB of memory: little, so that the node publishes that
// much batch-cpu even while the machine is busy (the test waits for it).
const (
	profileMilli  = 100
	profileMemory = 64 << 20
)

var profileWant = cgroupValues{Shares: expectedShares(profileMilli), Quota: expectedQuota(profileMilli), Period: cfsPeriod, MemoryLimit: profileMemory}

// A job owner labels the namespace and deploys a plain Deployment (cpu and memory, no priority class): with the
// sample ColocationProfile applied, its pod is created as a batch pod — batch-cpu and batch-memory in its spec, the
// batch priority class and QoS label — and runs with the batch cgroup values on the node, from its container's
// first instruction.
func TestColocationProfileRunsADeploymentAsBatch(t *testing.T) {
	e := suite.Env(t)
	waitForHookMode(e, runtimehook.ModeNRI)
	e.MakeRoomForBatch(profileMilli)

	profile := applySampleProfile(e)
	ns := e.Namespace()
	e.Kubectl("label", "namespace", ns, profileLabel+"=batch")
	waitForProfile(e, ns, profile.Spec.PriorityClassName)

	milli, memory := fmt.Sprintf("%dm", profileMilli), fmt.Sprint(profileMemory)
	tmpl := testutil.Pod("").Label("app", "profiled").Container("report").Image(CgroupReportImage).
		Requests("cpu", milli, "memory", memory).Limits("cpu", milli, "memory", memory).Obj()
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "profiled", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "profiled"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels},
				Spec:       corev1.PodSpec{Containers: tmpl.Spec.Containers, TerminationGracePeriodSeconds: ptr.To[int64](0)},
			},
		},
	}
	NonRoot(&dep.Spec.Template.Spec)
	if _, err := e.Clientset.AppsV1().Deployments(ns).Create(e.Ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Deployment: %v", err)
	}
	pod := runningPod(e, ns, "app=profiled")

	want := corev1.ResourceList{
		slov1alpha1.BatchCPU:    *resource.NewQuantity(profileMilli, resource.DecimalSI),
		slov1alpha1.BatchMemory: *resource.NewQuantity(profileMemory, resource.DecimalSI),
	}
	quantities := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	c := pod.Spec.Containers[0]
	if diff := cmp.Diff(want, c.Resources.Requests, quantities); diff != "" {
		t.Errorf("the running pod's requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, c.Resources.Limits, quantities); diff != "" {
		t.Errorf("the running pod's limits (-want +got):\n%s", diff)
	}
	if pod.Spec.PriorityClassName != "gleaner-batch" || ptr.Deref(pod.Spec.Priority, 0) != 5000 {
		t.Errorf("priority class %q, priority %v; want gleaner-batch, 5000", pod.Spec.PriorityClassName, ptr.Deref(pod.Spec.Priority, -1))
	}
	if pod.Labels[slov1alpha1.LabelQoSClass] != "BE" || pod.Labels[profileLabel] != "batch" {
		t.Errorf("labels %v, want %s=BE and %s=batch", pod.Labels, slov1alpha1.LabelQoSClass, profileLabel)
	}
	if c := slov1alpha1.ClassOf(pod); c.Priority != slov1alpha1.PriorityBatch || c.QoS != slov1alpha1.QoSBE || c.KubeQoS != corev1.PodQOSBestEffort {
		t.Errorf("the pod is %s/%s (Kubernetes %s), want batch/BE (BestEffort)", c.Priority, c.QoS, c.KubeQoS)
	}

	// On the node: the batch values, in the container from its first instruction and on the pod and container
	// cgroups, as for a pod written with batch resources by hand (TestRuntimeHookSetsBatchLimitsAtCreation).
	if diff := cmp.Diff(profileWant, firstReport(e, pod)); diff != "" {
		t.Errorf("the container's cgroup at its first instruction (-want +got):\n%s", diff)
	}
	podDir := filepath.Join("kubepods", "besteffort", "pod"+string(pod.UID))
	if diff := cmp.Diff(profileWant, readCgroup(t, podDir)); diff != "" {
		t.Errorf("pod cgroup %s (-want +got):\n%s", podDir, diff)
	}
	if diff := cmp.Diff(profileWant, readCgroup(t, filepath.Join(podDir, containerID(t, pod)))); diff != "" {
		t.Errorf("container cgroup (-want +got):\n%s", diff)
	}

	// And `kubectl glean top` shows it: the pod as a batch pod with its batch-cpu, the node with that much batch-cpu
	// requested, both measured by a current NodeMetric.
	gleanOnPath(e)
	e.Eventually(4*time.Minute, func(ctx context.Context) (bool, string) { return topShowsProfiledPod(ctx, e, pod) })
}

// topShowsProfiledPod says whether `kubectl glean top pods` shows pod as a batch BE pod requesting profileMilli of
// batch-cpu, measured, and `kubectl glean top nodes` its node with at least that much batch-cpu requested.
func topShowsProfiledPod(ctx context.Context, e *Env, pod *corev1.Pod) (bool, string) {
	out, err := e.Cluster.Kubectl(ctx, "glean", "top", "pods", "-n", pod.Namespace, "-o", "json")
	if err != nil {
		return false, err.Error()
	}
	var pods cli.TopPodsReport
	if err := json.Unmarshal([]byte(out), &pods); err != nil || len(pods.Pods) != 1 {
		return false, fmt.Sprintf("kubectl glean top pods -o json: %v\n%s", err, out)
	}
	p := pods.Pods[0]
	if p.Name != pod.Name || p.Priority != slov1alpha1.PriorityBatch || p.QoS != slov1alpha1.QoSBE ||
		p.CPU.Requests != profileMilli || p.Metric.State != cli.MetricCurrent || !positive(p.Memory.Used) {
		return false, "kubectl glean top pods -o json:\n" + out
	}
	out, err = e.Cluster.Kubectl(ctx, "glean", "top", "nodes", pod.Spec.NodeName, "-o", "json")
	if err != nil {
		return false, err.Error()
	}
	var nodes cli.TopNodesReport
	if err := json.Unmarshal([]byte(out), &nodes); err != nil || len(nodes.Nodes) != 1 {
		return false, fmt.Sprintf("kubectl glean top nodes -o json: %v\n%s", err, out)
	}
	n := nodes.Nodes[0]
	return n.Metric.State == cli.MetricCurrent && n.Batch.CPU.Capacity != nil && n.Batch.CPU.Requests >= profileMilli,
		"kubectl glean top nodes -o json:\n" + out
}

// applySampleProfile creates config/samples/colocation-profile.yaml as shipped, until the test ends.
func applySampleProfile(e *Env) *configv1alpha1.ColocationProfile {
	e.t.Helper()
	profile := &configv1alpha1.ColocationProfile{}
	b, err := os.ReadFile(filepath.Join(e.Suite.RepoRoot, "config", "samples", "colocation-profile.yaml"))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, profile); err != nil {
		e.t.Fatalf("parsing the sample profile: %v", err)
	}
	if err := e.Client.Create(e.Ctx, profile); err != nil {
		e.t.Fatalf("creating the sample profile: %v", err)
	}
	e.t.Cleanup(func() { _ = e.Client.Delete(context.Background(), profile) })
	return profile
}

// runningPod waits until a pod of ns matching selector runs, and returns it.
func runningPod(e *Env, ns, selector string) *corev1.Pod {
	e.t.Helper()
	var pod *corev1.Pod
	e.Eventually(3*time.Minute, func(ctx context.Context) (bool, string) {
		pods, err := e.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		for i := range pods.Items {
			if pods.Items[i].Status.Phase == corev1.PodRunning {
				pod = &pods.Items[i]
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d pods, none running: %+v", len(pods.Items), podPhases(pods.Items))
	})
	return pod
}

func podPhases(pods []corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, p := range pods {
		msg := string(p.Status.Phase)
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				msg += ": " + c.Message
			}
		}
		out[p.Name] = msg
	}
	return out
}
