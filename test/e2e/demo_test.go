package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/demo"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
)

// The demo of `make run` (config/demo): the latency-sensitive service runs and measures its own latency; the
// batch pods reach the real scheduler, which places them by the kubernetes.io/batch-cpu and batch-memory that
// gleaner-manager publishes from gleaner-agent's measurements.
func TestDemoWorkload(t *testing.T) {
	e := suite.Env(t)
	manifests := filepath.Join(e.Suite.RepoRoot, "config", "demo")
	if err := e.Cluster.Apply(e.Ctx, manifests); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.Cluster.Kubectl(context.Background(), "delete", "-k", manifests, "--wait=false") })
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

	// What `make run` does next: size the batch pods from what the node publishes once the service is measured, and
	// wait until they run. On a busy 2-core machine the sample configuration's 40% safety margin may leave nothing to
	// size from, so the test makes room first (`make run` says so instead, with what would change it).
	e.MakeRoomForBatch(demo.Need(2).CPU)
	placer := demo.Placer{Client: e.Client, Node: localcluster.NodeName, Out: testWriter{t},
		PublishTimeout: 4 * time.Minute, RunTimeout: 2 * time.Minute}
	size, err := placer.Place(e.Ctx)
	if err != nil {
		t.Fatalf("placing the demo's batch pods: %v\n%s", err, e.Kubectl("glean", "explain", localcluster.NodeName))
	}
	expectBatchPodsFollowBatchCPU(e, size.CPU)
}

// testWriter writes each line to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// The scheduler places the batch pods, each asking ask millicores of batch-cpu, by the batch-cpu Gleaner publishes
// from the agent's measurements: at least one of them runs (demo.Placer sized them to fit), every one that fits
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
