package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// The squeeze of TestStallEvictionActsBeforeTheUsageThreshold, in MiB: the besteffort cgroup may hold stallRoom
// above its pods' anonymous memory when the test starts; the service's working set is stallWorkingSet of page cache,
// which fits there alone, and the batch pod holds stallBatch of anonymous memory, which leaves the service's cache
// less than a third of what it reads.
const (
	stallRoom       = 352
	stallWorkingSet = 192
	stallBatch      = 288
)

// TestStallEvictionActsBeforeTheUsageThreshold: a service (lsservice, labelled prod and LS) reads a working set of
// page cache on every request, next to a batch pod, both in the besteffort cgroup, which the test limits (as
// TestOOMKillsBatchBeforeTheService does) so that the batch pod's memory squeezes the service's cache. The node's
// memory use stays gigabytes under memoryEvictThresholdPercent, so memory eviction by usage cannot act; eviction by
// pressure stall (memoryEvictPressurePercent 5, on cgroup v1 the node's stall) evicts the batch pod through the
// Eviction API, and the service's latency, which the squeeze raised, comes back.
func TestStallEvictionActsBeforeTheUsageThreshold(t *testing.T) {
	e := suite.Env(t)
	threshold, total := memoryEvictThreshold(e, 4<<30)
	setThresholds(e, fmt.Sprintf(`{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 100, "cpuSuppressPolicy": "cfsQuota", `+
		`"memoryEvictThresholdPercent": %d, "memoryEvictPressurePercent": 5, "pressureEvictWindowSeconds": 10}}`, threshold))
	ns := e.Namespace()

	limitBestEffort(t, stallRoom<<20)

	svc := testutil.Pod("stall-service").Label(slov1alpha1.LabelPriorityClass, "prod").Label(slov1alpha1.LabelQoSClass, "LS").
		Image(LSServiceImage, "--listen=:8080", "--qps=200", "--window=500", "--report=0", "--work=1ms",
			fmt.Sprintf("--data-mib=%d", stallWorkingSet), "--read-kib=8192", "--data-dir=/data").Obj()
	svc.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	svc.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	svc = e.RunPodIn(ns, svc)
	stats := func(ctx context.Context) (latencyStats, error) {
		var s latencyStats
		body, err := get(ctx, fmt.Sprintf("http://%s:8080/stats", svc.Status.PodIP))
		if err != nil {
			return s, err
		}
		return s, json.Unmarshal([]byte(body), &s)
	}
	// A full window of requests served from the page cache.
	var alone latencyStats
	e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) {
		s, err := stats(ctx)
		alone = s
		return err == nil && s.Count >= 500, fmt.Sprintf("the service's stats: %+v, %v", s, err)
	})

	batch := e.RunPodIn(ns, testutil.Pod("stall-batch").PriorityClass("gleaner-batch").Label(slov1alpha1.LabelQoSClass, "BE").
		Image(EaterImage, fmt.Sprintf("--size=%dMi", stallBatch)).Obj())
	evicted := watchEviction(e, ns, batch.Name)
	squeezed := time.Now()
	waitHolding(e, ns, batch.Name, fmt.Sprintf("%dMi", stallBatch))
	var during latencyStats
	e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) {
		if s, err := stats(ctx); err == nil {
			during = s
		}
		return !evicted().IsZero(), fmt.Sprintf("the batch pod is not evicted yet; the service's latency %+v (alone %+v); /proc/pressure/memory: %q",
			during, alone, readFile(t, "/proc/pressure/memory"))
	})
	usedTotal, available, err := readMeminfo()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the batch pod was evicted %s after it started; node memory use %.0f%%, memoryEvictThresholdPercent %d%%; /proc/pressure/memory: %q",
		evicted().Sub(squeezed).Round(time.Second), 100*float64(usedTotal-available)/float64(total), threshold, readFile(t, "/proc/pressure/memory"))
	e.Eventually(30*time.Second, func(ctx context.Context) (bool, string) {
		ev, err := e.Clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + batch.Name})
		if err != nil {
			return false, err.Error()
		}
		var msgs []string
		for _, x := range ev.Items {
			if x.Reason == "Evicted" && strings.Contains(x.Message, "ServiceStall") && strings.Contains(x.Message, "stalled on memory") {
				t.Logf("the eviction's event: %s", x.Message)
				return true, ""
			}
			msgs = append(msgs, x.Reason+": "+x.Message)
		}
		return false, fmt.Sprintf("no Evicted event for a stall on the batch pod: %q", msgs)
	})
	if m := agentMetrics(e); !strings.Contains(m, `gleaner_agent_evictions_total{action="evict",reason="ServiceStall",result="evicted"}`) {
		t.Error("the agent's metrics count no eviction for ServiceStall")
	}

	// The service's latency over a whole window after the batch pod is gone.
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		_, err := e.Clientset.CoreV1().Pods(ns).Get(ctx, batch.Name, metav1.GetOptions{})
		return err != nil, "the evicted batch pod is still there"
	})
	time.Sleep(7 * time.Second) // 500 requests at 100 a second, with room for the first reads after the squeeze
	after, err := stats(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the service's median latency: %.1f ms alone, %.1f ms squeezed, %.1f ms after the eviction (p99 %.1f, %.1f, %.1f ms)",
		alone.P50, during.P50, after.P50, alone.P99, during.P99, after.P99)
	// The median, not the p99: a whole window moved, and a shared machine's hiccup moves a p99 of 500 requests.
	if during.P50 < 1.5*after.P50 {
		t.Errorf("the squeeze raised the service's median latency only to %.1f ms from %.1f ms after it: it did not hurt the service, so the eviction proved nothing", during.P50, after.P50)
	}
	p, err := e.Clientset.CoreV1().Pods(ns).Get(e.Ctx, svc.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.DeletionTimestamp != nil || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the service must run on, untouched: %+v", p.Status)
	}
}

// latencyStats is lsservice's /stats.
type latencyStats struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50Ms"`
	P99   float64 `json:"p99Ms"`
}
