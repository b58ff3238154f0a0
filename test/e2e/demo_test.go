package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
)

// The demo of `make run` (config/demo): the latency-sensitive service runs and measures its own latency; the
// batch pods reach the real scheduler, which places them by the kubernetes.io/batch-cpu and batch-memory that
// gleaner-manager publishes from gleaner-agent's measurements.
func TestDemoWorkload(t *testing.T) {
	e := suite.Env(t)
	demo := filepath.Join(e.Suite.RepoRoot, "config", "demo")
	if err := e.Cluster.Apply(e.Ctx, demo); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.Cluster.Kubectl(context.Background(), "delete", "-k", demo, "--wait=false") })
	e.Kubectl("-n", "gleaner-demo", "rollout", "status", "deployment/ls-service", "--timeout=2m")

	pods, err := e.Clientset.CoreV1().Pods("gleaner-demo").List(e.Ctx, metav1.ListOptions{LabelSelector: "app=ls-service"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("ls-service pods: %v %v", pods, err)
	}
	url := fmt.Sprintf("http://%s:8080/stats", pods.Items[0].Status.PodIP)
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		body, err := get(ctx, url)
		if err != nil {
			return false, err.Error()
		}
		var s struct {
			Count int     `json:"count"`
			P50   float64 `json:"p50Ms"`
		}
		if err := json.Unmarshal([]byte(body), &s); err != nil {
			return false, err.Error()
		}
		return s.Count >= 50 && s.P50 > 0, "stats " + body
	})

	expectBatchPodsFollowBatchCPU(e, makeRoomForBatchBurners(e))
}

const (
	// batchBurnerCPU is what each of the demo's two batch pods asks, in millicores of batch-cpu (config/demo).
	batchBurnerCPU = 500
	// minBatchBurnerCPU is the least batch-cpu the test sizes a batch pod to on a busy machine.
	minBatchBurnerCPU = 100
)

// makeRoomForBatchBurners makes sure the demo's batch pods can run, and returns the batch-cpu each asks. On a busy
// 2-core machine, with the safety margin gone, the node may still publish less than the two pods' 500m: then the
// test sizes them to half of what it publishes (both fit, with room for the node's usage to move), and says so.
func makeRoomForBatchBurners(e *Env) int64 {
	e.t.Helper()
	published := e.MakeRoomForBatch(2 * minBatchBurnerCPU)
	ask := min(batchBurnerCPU, published/2)
	if ask == batchBurnerCPU {
		return ask
	}
	e.t.Logf("the node publishes %dm of batch-cpu: the demo's batch pods ask %dm each instead of %dm", published, ask, batchBurnerCPU)
	// Down to no pod first: a rolling update would wait for the Pending pods of the old size.
	var replicas int32
	e.updateBatchBurners(func(dep *appsv1.Deployment) {
		replicas = *dep.Spec.Replicas
		dep.Spec.Replicas = ptr.To[int32](0)
	})
	e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) {
		pods, err := e.Clientset.CoreV1().Pods("gleaner-demo").List(ctx, metav1.ListOptions{LabelSelector: "app=batch-burner"})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d batch pods left", len(pods.Items))
	})
	e.updateBatchBurners(func(dep *appsv1.Deployment) {
		c := &dep.Spec.Template.Spec.Containers[0]
		q := *resource.NewQuantity(ask, resource.DecimalSI)
		c.Resources.Requests[slov1alpha1.BatchCPU], c.Resources.Limits[slov1alpha1.BatchCPU] = q, q
		c.Args = []string{fmt.Sprintf("--load=%dm", ask)}
		dep.Spec.Replicas = &replicas
	})
	return ask
}

// updateBatchBurners changes the demo's batch-burner Deployment, reading it again when the deployment controller
// wrote it in between.
func (e *Env) updateBatchBurners(change func(*appsv1.Deployment)) {
	e.t.Helper()
	deployments := e.Clientset.AppsV1().Deployments("gleaner-demo")
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep, err := deployments.Get(e.Ctx, "batch-burner", metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(dep)
		_, err = deployments.Update(e.Ctx, dep, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatalf("updating the demo's batch-burner Deployment: %v", err)
	}
}

// The scheduler places the batch pods, each asking ask millicores of batch-cpu, by the batch-cpu Gleaner publishes
// from the agent's measurements: at least one of them runs (makeRoomForBatchBurners made room), every one that fits
// runs, and a pod still Pending is one that does not fit in what is left.
func expectBatchPodsFollowBatchCPU(e *Env, ask int64) {
	e.Eventually(4*time.Minute, func(ctx context.Context) (bool, string) {
		node, err := e.Clientset.CoreV1().Nodes().Get(ctx, localcluster.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		alloc, published := node.Status.Allocatable[slov1alpha1.BatchCPU]
		if !published {
			return false, "no kubernetes.io/batch-cpu on the node yet"
		}
		onNode, err := e.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + localcluster.NodeName})
		if err != nil {
			return false, err.Error()
		}
		var used int64
		for _, p := range onNode.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				r := resourcehelper.PodRequests(&p, resourcehelper.PodResourcesOptions{})
				used += r.Name(slov1alpha1.BatchCPU, resource.DecimalSI).Value()
			}
		}
		batch, err := e.Clientset.CoreV1().Pods("gleaner-demo").List(ctx, metav1.ListOptions{LabelSelector: "app=batch-burner"})
		if err != nil {
			return false, err.Error()
		}
		var running, pending int
		for _, p := range batch.Items {
			switch {
			case p.Status.Phase == corev1.PodRunning:
				running++
			case p.Status.Phase == corev1.PodPending && p.Spec.NodeName == "":
				// Pending for the right reason: the scheduler found too little batch-cpu.
				if why := scheduledMessage(&p); !strings.Contains(why, "Insufficient "+string(slov1alpha1.BatchCPU)) {
					return false, fmt.Sprintf("batch pod %s pending: %q", p.Name, why)
				}
				pending++
			}
		}
		msg := fmt.Sprintf("batch-cpu %d published, %d requested on the node; demo batch pods: %d running, %d pending", alloc.Value(), used, running, pending)
		if used > alloc.Value() {
			return false, msg + " (more requested than published)"
		}
		return running >= 1 && running+pending == 2 && (pending == 0 || alloc.Value()-used < ask), msg
	})
}

// scheduledMessage is the message of the pod's PodScheduled condition: why the scheduler has not placed it.
func scheduledMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Message
		}
	}
	return ""
}
