package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/runtimehook"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// A real OOM on the local node, where the kernel has to choose between a batch pod and a service. Both are
// BestEffort to the kubelet, so both live in the besteffort cgroup and the kubelet gives both 1000; the service is
// one labelled prod, with no requests (the runtime hook gives it the top of the services' band, 333). The test
// gives the besteffort cgroup a memory limit 512 MiB above its pods' anonymous memory for the test's length (the
// kubepods cgroup is not touched: the kubelet reads its limit as the node's and would evict pods and taint the
// node), the service holds 288 MiB, and the batch pod grows by 32 MiB a second until the two no longer fit, at about
// 220 MiB (later, when pods of earlier tests still leaving free theirs meanwhile). With the kubelet's values the
// kernel would kill the service, the larger; with the runtime hook's OOM order the batch pod dies: its container
// ends OOMKilled, and the service keeps running and never restarts. (A Burstable service that grows while the batch
// pod holds still is TestRealKernelOOMKillsBatchBeforeServices: a process still allocating when its neighbour dies
// can meet a second OOM before the kernel has freed the first victim's memory, and that one is not about the order.)
func TestOOMKillsBatchBeforeTheService(t *testing.T) {
	e := suite.Env(t)
	ns := e.Namespace()
	never := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Spec.TerminationGracePeriodSeconds = new(int64)
		return p
	}
	// The service's score is the runtime hook's, set when its container is created: a service created before the
	// agent's NRI plugin has connected keeps the kubelet's 1000 (on the v2 node this test runs soon after the
	// agent starts). So does one whose pod the agent's watch has not delivered by then (the hook fails open after
	// --nri-pod-wait): on a production node the reconciler lowers it within its interval, but the local node cannot
	// grant the agent CAP_SYS_RESOURCE, which lowering takes. An init container of a few seconds gives the watch
	// that time before the service's container is created, as a pod's image pull would.
	waitForHookMode(e, runtimehook.ModeNRI)
	limitBestEffort(t, 512<<20)

	before := hookRequests(e)
	svc := e.RunPodIn(ns, never(testutil.Pod("oom-service").Label(slov1alpha1.LabelPriorityClass, "prod").Label(slov1alpha1.LabelQoSClass, "LS").
		InitContainer("wait", false).Image(EaterImage, "--size=1Mi", "--hold=3s").
		Container("service").Image(EaterImage, "--size=288Mi").Obj()))
	waitHolding(e, ns, svc.Name, "288Mi")
	want := serviceOOMScore(e, svc)
	if got := processOOMScore(t, svc); got != want {
		// Which way the hook answered tells a hook that failed open (pod_unknown, error) from one that was not asked
		// (its connection lost: no CreateContainer counted) and from a value the runtime did not apply (adjusted).
		t.Fatalf("the service's process has oom_score_adj %d, want %d; the runtime hook's answers meanwhile: %v",
			got, want, hookRequests(e).since(before))
	}
	batch := e.RunPodIn(ns, never(testutil.Pod("oom-batch").PriorityClass("gleaner-batch").Label(slov1alpha1.LabelQoSClass, "BE").
		Image(EaterImage, "--size=2Gi", "--step=16Mi", "--interval=500ms").Obj()))

	e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) {
		p, err := e.Clientset.CoreV1().Pods(ns).Get(ctx, batch.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Terminated != nil {
				return true, ""
			}
		}
		return false, fmt.Sprintf("the batch pod is %s: %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	p, err := e.Clientset.CoreV1().Pods(ns).Get(e.Ctx, batch.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if term := p.Status.ContainerStatuses[0].State.Terminated; term.Reason != "OOMKilled" || term.ExitCode != 137 {
		logs, _ := e.Clientset.CoreV1().Pods(ns).GetLogs(batch.Name, &corev1.PodLogOptions{}).DoRaw(e.Ctx)
		t.Errorf("the batch container ended %s (exit %d: %s), want killed by the OOM killer (OOMKilled, 137); events: %s; log: %q",
			term.Reason, term.ExitCode, term.Message, eventReasons(e.Ctx, e, ns, batch.Name), logs)
	}
	s, err := e.Clientset.CoreV1().Pods(ns).Get(e.Ctx, svc.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs := s.Status.ContainerStatuses[0]; cs.State.Running == nil || cs.RestartCount != 0 {
		t.Errorf("the service's container: %+v, restarts %d; want it running since the start", cs.State, cs.RestartCount)
	}
}

// limitBestEffort gives the besteffort cgroup a memory limit room bytes above its pods' anonymous memory now, until
// the test ends. The kubepods cgroup is not touched: the kubelet reads its limit as the node's and would evict pods
// and taint the node.
func limitBestEffort(t *testing.T, room int64) {
	t.Helper()
	// The memory cgroup of the BestEffort pods, which the kubelet gives no memory limit of its own.
	dir := cgroupDir(t, "memory", "kubepods/besteffort")
	limitFile, anonKey := filepath.Join(dir, "memory.limit_in_bytes"), "total_rss"
	if cgroupV2(t) {
		limitFile, anonKey = filepath.Join(dir, "memory.max"), "anon"
	}
	original := strings.TrimSpace(readFile(t, limitFile))
	anon := memoryStat(t, filepath.Join(dir, "memory.stat"), anonKey)
	limit := anon + room
	if err := os.WriteFile(limitFile, []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
		t.Fatalf("setting the besteffort cgroup's memory limit to %d MiB: %v", limit>>20, err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(limitFile, []byte(original), 0); err != nil {
			t.Errorf("restoring the besteffort cgroup's memory limit to %s: %v", original, err)
		}
	})
	t.Logf("besteffort: %d MiB anonymous, limit set from %s to %d MiB", anon>>20, original, limit>>20)
}

// waitHolding waits until the eater of pod name in ns logs that it holds size.
func waitHolding(e *Env, ns, name, size string) {
	e.t.Helper()
	e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) {
		b, err := e.Clientset.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(string(b), "eater: holding "+size+"\n"), fmt.Sprintf("the log of %s: %q", name, b)
	})
}

// memoryStat is the value of key in a memory.stat file.
func memoryStat(t *testing.T, file, key string) int64 {
	t.Helper()
	for _, line := range strings.Split(readFile(t, file), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s: %s is %q", file, key, v)
			}
			return n
		}
	}
	t.Fatalf("%s has no %s", file, key)
	return 0
}

// processOOMScore is the oom_score_adj of the process of pod's first container, found through its cgroup.
func processOOMScore(t *testing.T, pod *corev1.Pod) int {
	t.Helper()
	qosDir := strings.ToLower(string(pod.Status.QOSClass))
	if pod.Status.QOSClass == corev1.PodQOSGuaranteed {
		qosDir = "" // the kubelet puts Guaranteed pods right under kubepods
	}
	dir := cgroupDir(t, "memory", filepath.Join("kubepods", qosDir, "pod"+string(pod.UID), containerID(t, pod)))
	pids := strings.Fields(readFile(t, filepath.Join(dir, "cgroup.procs")))
	if len(pids) == 0 {
		t.Fatalf("no process in %s", dir)
	}
	// The pod's process runs as the suite's user, not root: /proc/PID/oom_score_adj belongs to that user, so what
	// the agent may write there is what it may write on a production node.
	for _, line := range strings.Split(readFile(t, filepath.Join("/proc", pids[0], "status")), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" && f[1] != strconv.Itoa(PodUser) {
			t.Errorf("the process of pod %s runs as uid %s, want the suite's non-root %d", pod.Name, f[1], PodUser)
		}
	}
	v, err := strconv.Atoi(strings.TrimSpace(readFile(t, filepath.Join("/proc", pids[0], "oom_score_adj"))))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
