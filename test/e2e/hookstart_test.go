package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/runtimehook"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// TestBatchPodsStartWhileSuppressionMoves: with CPU suppression on (cfsQuota, a low threshold) and the
// runtime hook's NRI plugin connected, batch pods started while the besteffort quota tightens and loosens all start
// on the first try. Before, runc wrote the container's quota fitted to the besteffort quota at CreateContainer, and
// when suppression lowered it before the kubelet started the container the kernel refused it (RunContainerError,
// "cpu.cfs_quota_us: invalid argument"), and the pod started on the kubelet's retry seconds later. A service burner
// comes and goes every two seconds, so suppression moves the whole time; the besteffort quota is sampled to show it
// did. No pod may have a Failed event or a restart.
func TestBatchPodsStartWhileSuppressionMoves(t *testing.T) {
	e := suite.Env(t)
	waitForHookMode(e, runtimehook.ModeNRI)
	const waves, perWave, milli = 8, 6, 50 // 48 pods; at most 300 millicores of batch-cpu at once, which a 2-CPU node publishes while the service burns
	e.MakeRoomForBatch(perWave * milli)
	setThresholds(e, `{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 40, "cpuSuppressPolicy": "cfsQuota", "memoryEvictThresholdPercent": 99}}`)
	ns := e.Namespace()

	ctx, stop := context.WithCancel(e.Ctx)
	defer stop()
	var wg sync.WaitGroup
	var svc serviceToggle
	var quotas quotaSamples
	wg.Add(2)
	go func() { defer wg.Done(); svc.run(ctx, e, ns) }()
	go func() { defer wg.Done(); quotas.run(ctx) }()

	withQuota := 0
	for w := range waves {
		start := time.Now()
		pods := make([]*corev1.Pod, 0, perWave)
		for i := range perWave {
			pod := batchReportPod(fmt.Sprintf("start-%d-%d", w, i), milli, 32<<20)
			pod.Namespace = ns
			NonRoot(&pod.Spec)
			created, err := e.Clientset.CoreV1().Pods(ns).Create(e.Ctx, pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating %s: %v", pod.Name, err)
			}
			pods = append(pods, created)
		}
		for _, pod := range pods {
			if v := firstReport(e, pod); v.Quota > 0 {
				withQuota++
			}
			got, err := e.Clientset.CoreV1().Pods(ns).Get(e.Ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, cs := range got.Status.ContainerStatuses {
				if cs.RestartCount > 0 {
					t.Errorf("pod %s: container %s restarted %d times (last: %+v)", pod.Name, cs.Name, cs.RestartCount, cs.LastTerminationState)
				}
			}
		}
		started := time.Since(start)
		e.DeletePod(pods...)
		t.Logf("wave %d: %d pods reported their cgroups %s after their creation, and were gone %s later", w, perWave,
			started.Round(100*time.Millisecond), (time.Since(start) - started).Round(100*time.Millisecond))
	}
	stop()
	wg.Wait()

	expectNoFailedStarts(e, ns, "start-")
	if len(svc.errs) > 0 {
		t.Errorf("the service burner could not be created: %v", svc.errs)
	}
	seen := quotas.values()
	t.Logf("%d batch pods started; %d had their quota at their first instruction; the besteffort quota took %d values: %v",
		waves*perWave, withQuota, len(seen), seen)
	if len(seen) < 3 {
		t.Errorf("the besteffort quota took only the values %v while the pods started: suppression did not move, so the test proved nothing", seen)
	}
}

// expectNoFailedStarts fails the test for every Failed event (RunContainerError, a refused quota) of a pod in ns
// whose name starts with prefix.
func expectNoFailedStarts(e *Env, ns, prefix string) {
	e.t.Helper()
	events, err := e.Clientset.CoreV1().Events(ns).List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, ev := range events.Items {
		if ev.InvolvedObject.Kind == "Pod" && strings.HasPrefix(ev.InvolvedObject.Name, prefix) &&
			(ev.Reason == "Failed" || strings.Contains(ev.Message, "RunContainerError") || strings.Contains(ev.Message, "cfs_quota_us")) {
			e.t.Errorf("pod %s: %s event: %s", ev.InvolvedObject.Name, ev.Reason, ev.Message)
		}
	}
}

// serviceToggle runs a service burner (1.2 cores) for two seconds, then none for two, until ctx ends; errs are the
// creations that failed. Read errs after run returned.
type serviceToggle struct{ errs []string }

func (s *serviceToggle) run(ctx context.Context, e *Env, ns string) {
	for i := 0; ctx.Err() == nil; i++ {
		svc := testutil.Pod(fmt.Sprintf("svc-%d", i)).PriorityClass("gleaner-prod").Label(slov1alpha1.LabelQoSClass, "LS").
			Image(BurnerImage, "--load=1.2", "--report=0").Requests("cpu", "100m", "memory", "32Mi").Obj()
		svc.Namespace = ns
		svc.Spec.TerminationGracePeriodSeconds = new(int64)
		NonRoot(&svc.Spec)
		if _, err := e.Clientset.CoreV1().Pods(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
			s.errs = append(s.errs, err.Error())
		}
		sleepCtx(ctx, 2*time.Second)
		_ = e.Clientset.CoreV1().Pods(ns).Delete(context.Background(), svc.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		sleepCtx(ctx, 2*time.Second)
	}
}

// quotaSamples are the besteffort cgroup's cpu.cfs_quota_us values, read every 50 ms until ctx ends.
type quotaSamples struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (q *quotaSamples) run(ctx context.Context) {
	for ctx.Err() == nil {
		if b, err := os.ReadFile(filepath.Join(besteffortCPU, "cpu.cfs_quota_us")); err == nil {
			q.mu.Lock()
			if q.seen == nil {
				q.seen = map[string]bool{}
			}
			q.seen[strings.TrimSpace(string(b))] = true
			q.mu.Unlock()
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
}

// values are the distinct values seen, in numeric order.
func (q *quotaSamples) values() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]string, 0, len(q.seen))
	for v := range q.seen {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return atoi(out[i]) < atoi(out[j]) })
	return out
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func atoi(s string) int64 {
	v, _ := strconv.ParseInt(s, 10, 64)
	return v
}
