package allocation

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gleaner-sh/gleaner/test/testutil"
)

// benchPods are 30 pods of mixed shapes on one node, as in the node-allocation benchmark.
func benchPods() []corev1.Pod {
	var pods []corev1.Pod
	for i := range 30 {
		b := testutil.Pod(fmt.Sprintf("p%d", i)).Node("n").Container("app").Requests("cpu", fmt.Sprintf("%dm", 100+i*10), "memory", "256Mi")
		switch i % 4 {
		case 1:
			b = b.Limits("cpu", "1", "memory", "1Gi")
		case 2:
			b = b.InitContainer("init", false).Requests("cpu", "1")
		case 3:
			b = b.InitContainer("proxy", true).Requests("cpu", "50m", "memory", "64Mi")
		}
		pods = append(pods, *b.Obj())
	}
	return pods
}

// BenchmarkSummarize is one reconcile's computing: 30 pods summed and the node's summary built.
func BenchmarkSummarize(b *testing.B) {
	node := testutil.Node("n").Allocatable("cpu", "32", "memory", "128Gi", "ephemeral-storage", "500Gi", "pods", "110", "kubernetes.io/batch-cpu", "12000").Obj()
	pods := benchPods()
	b.ReportAllocs()
	for b.Loop() {
		s := Summarize(node, pods)
		_ = s.Status()
	}
}
