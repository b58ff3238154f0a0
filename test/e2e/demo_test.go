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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The demo of `make run` (config/demo): the latency-sensitive service runs and measures its own latency; the
// batch pods reach the real scheduler, which places them by kubernetes.io/batch-cpu and batch-memory.
//
// Until Gleaner publishes batch resources on the node (the batch plugin of the node-resource controller) the
// scheduler finds none and the batch pods stay Pending for exactly that reason; when it lands, this test changes
// to expect them Running.
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

	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		events, err := e.Clientset.CoreV1().Events("gleaner-demo").List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedScheduling"})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range events.Items {
			if strings.HasPrefix(ev.InvolvedObject.Name, "batch-burner-") && strings.Contains(ev.Message, "Insufficient kubernetes.io/batch-cpu") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no FailedScheduling event for batch-cpu among %d", len(events.Items))
	})
	batch, err := e.Clientset.CoreV1().Pods("gleaner-demo").List(e.Ctx, metav1.ListOptions{LabelSelector: "app=batch-burner"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range batch.Items {
		if p.Status.Phase != corev1.PodPending || p.Spec.NodeName != "" {
			t.Errorf("batch pod %s is %s on %q; with no batch resources on the node it must stay Pending", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
	}
}
