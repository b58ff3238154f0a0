package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// EaterImage is the image of a container that holds the memory its --size flag asks for (test/workloads/eater).
const EaterImage = "gleaner.local/eater:dev"

// agentMetricsURL is where config/local serves the agent's metrics on the node.
const agentMetricsURL = "http://127.0.0.1:10282/metrics"

// besteffortCPU is the besteffort QoS cgroup in the node's cpu hierarchy (cgroup v1, cgroupfs, --cgroup-root=/).
const besteffortCPU = "/sys/fs/cgroup/cpu/kubepods/besteffort"

// TestCPUSuppressFollowsTheService: with CPU suppression on (cfsQuota policy, threshold 90% of the node's 2 CPUs), a
// best-effort pod burning every CPU is held to what the services leave; when a service pod starts burning 1.6 cores,
// the best-effort quota drops at once (the reaction time is logged), and the best-effort pod's measured CPU follows
// it; when the service goes, the quota loosens again in steps.
func TestCPUSuppressFollowsTheService(t *testing.T) {
	e := suite.Env(t)
	besteffort := cgroupDir(t, "cpu", "kubepods/besteffort")
	setThresholds(e, `{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 90, "cpuSuppressPolicy": "cfsQuota", "memoryEvictThresholdPercent": 99}}`)
	ns := e.Namespace()
	be := e.RunPodIn(ns, testutil.Pod("be-burner").PriorityClass("gleaner-batch").Label(slov1alpha1.LabelQoSClass, "BE").
		Image(BurnerImage, "--load=2", "--report=0").Obj())

	// Suppression on: the besteffort quota is what the node's other work leaves of 90% of its CPUs. It moves with
	// every 200 ms sample (tighter at once, looser in steps); wait until it has stayed above 0.4 cores for a second,
	// which leaves a drop to time, and take the lowest value of that second.
	var before float64
	var above time.Time
	e.Eventually(90*time.Second, func(context.Context) (bool, string) {
		q := quotaCores(t, besteffort)
		switch {
		case q < 0.4:
			above, before = time.Time{}, 0
		case above.IsZero():
			above, before = time.Now(), q
		default:
			before = min(before, q)
		}
		return !above.IsZero() && time.Since(above) >= time.Second,
			fmt.Sprintf("besteffort quota %.3f cores (-1: none yet; it must stay above 0.4 for a second, or the node is too busy to time a reaction)", q)
	})
	t.Logf("best-effort quota with an idle service: %.2f cores", before)

	svcPod := testutil.Pod("ls-burner").PriorityClass("gleaner-prod").Label(slov1alpha1.LabelQoSClass, "LS").
		Image(BurnerImage, "--load=1.6", "--report=0").Requests("cpu", "100m", "memory", "32Mi").Obj()
	svcPod.Namespace = ns
	NonRoot(&svcPod.Spec)
	created, err := e.Clientset.CoreV1().Pods(ns).Create(e.Ctx, svcPod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Watch the service's cgroup and the besteffort quota every 10 ms: the spike is the first 50 ms in which the
	// service burns more than 0.3 cores, the reaction the first tightening of the quota by 0.15 cores or more.
	svcUsage := cpuUsage(t, filepath.Join("kubepods/burstable", "pod"+string(created.UID)))
	spike, reacted := watchReaction(e.Ctx, svcUsage, func() bool { q := quotaCores(t, besteffort); return q >= 0 && q <= before-0.15 })
	e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) {
		p, err := e.Clientset.CoreV1().Pods(ns).Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, "service pod " + string(p.Status.Phase)
	})
	var after float64
	e.Eventually(30*time.Second, func(context.Context) (bool, string) {
		after = quotaCores(t, besteffort)
		// 90% of 2 CPUs = 1.8 cores, nearly all of it (or more) taken by the service and the system.
		return after >= 0 && after <= 0.3, fmt.Sprintf("besteffort quota %.3f cores while the service burns 1.6", after)
	})
	if s, r := spike(), reacted(); !s.IsZero() && !r.IsZero() {
		t.Logf("reaction: service spike at %s, besteffort quota down to %.2f cores %s later (now %.2f cores)", s.Format("15:04:05.000"), before-0.15, r.Sub(s).Round(time.Millisecond), after)
	} else {
		t.Errorf("the reaction was not observed: spike %v, quota change %v", s, r)
	}
	// The best-effort pod's own CPU follows the quota (which may tighten further while it is measured, down to the
	// 1 ms minimum once the service and the system take the whole 90%).
	used := podCPU(t, be, 3*time.Second)
	bound := max(after, quotaCores(t, besteffort))
	if used > bound+0.15 {
		t.Errorf("the best-effort pod used %.2f cores under a quota of at most %.2f", used, bound)
	}
	t.Logf("best-effort pod used %.2f cores under a quota of at most %.2f (%.2f at the end)", used, bound, quotaCores(t, besteffort))

	if err := e.Clientset.CoreV1().Pods(ns).Delete(e.Ctx, created.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	// Loosening: by at most 10% of the node a second, to 90% less what the node's other work takes (on a busy CI
	// machine that can be most of it), so only the direction is checked.
	e.Eventually(time.Minute, func(context.Context) (bool, string) {
		q := quotaCores(t, besteffort)
		return q > after+0.05 || q < 0, fmt.Sprintf("besteffort quota %.3f cores after the service left (%.3f while it ran; loosening in steps)", q, after)
	})
	metrics := agentMetrics(e)
	for _, want := range []string{"gleaner_agent_cpusuppress_be_cpu_limit_cores", `gleaner_agent_executor_writes_total{resource="cpu.cfs_quota_us",result="written"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("the agent's metrics lack %s", want)
		}
	}
}

// TestMemoryEvictionSparesPodsUnderABudget: with memory eviction on and its threshold a little above what the node
// uses now, a service pod that takes 2.5 GiB pushes the node over it; the agent evicts the best-effort pod through
// the Eviction API, while another best-effort pod covered by a PodDisruptionBudget that allows no disruption stays.
// Events on both pods and the agent's counters show it; the reaction time from the crossing to the eviction is
// logged.
func TestMemoryEvictionSparesPodsUnderABudget(t *testing.T) {
	e := suite.Env(t)
	threshold, total := memoryEvictThreshold(e, 1<<30)
	setThresholds(e, memoryEvictConfig(threshold))
	ns := e.Namespace()
	batch := func(name string) *corev1.Pod {
		return testutil.Pod(name).PriorityClass("gleaner-batch").Label(slov1alpha1.LabelQoSClass, "BE").Label("app", name).
			Image(EaterImage, "--size=64Mi").Obj()
	}
	free := e.RunPodIn(ns, batch("unguarded"))
	guarded := e.RunPodIn(ns, batch("guarded"))
	guard(e, ns, "guarded")
	// The agent samples the pods' memory every second; eviction considers only pods with a fresh sample.
	time.Sleep(3 * time.Second)

	evicted := watchEviction(e, ns, free.Name)
	thresholdBytes := total * threshold / 100
	crossed := watchMemory(e.Ctx, thresholdBytes)
	hog := e.RunPodIn(ns, testutil.Pod("ls-eater").PriorityClass("gleaner-prod").Label(slov1alpha1.LabelQoSClass, "LS").
		Image(EaterImage, "--size=2560Mi").Requests("cpu", "100m", "memory", "64Mi").Obj())
	defer func() {
		_ = e.Clientset.CoreV1().Pods(ns).Delete(context.Background(), hog.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	}()

	e.Eventually(time.Minute, func(context.Context) (bool, string) {
		return !evicted().IsZero(), fmt.Sprintf("pod %s not evicted yet (threshold %d%% = %d MiB)", free.Name, threshold, thresholdBytes>>20)
	})
	if c := crossed(); !c.IsZero() {
		t.Logf("reaction: node memory above %d MiB at %s, eviction of %s seen %s later", thresholdBytes>>20, c.Format("15:04:05.000"), free.Name, evicted().Sub(c).Round(time.Millisecond))
	}
	e.Eventually(30*time.Second, func(ctx context.Context) (bool, string) {
		reasons := eventReasons(ctx, e, ns, free.Name)
		return strings.Contains(reasons, "Evicted"), "events on the evicted pod: " + reasons
	})
	expectGuardedStays(e, ns, guarded.Name)
	metrics := agentMetrics(e)
	for _, want := range []string{
		`gleaner_agent_evictions_total{action="evict",reason="NodeMemoryUsage",result="evicted"}`,
		`gleaner_agent_evictions_total{action="evict",reason="NodeMemoryUsage",result="refused"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("the agent's metrics lack %s", want)
		}
	}
}

// TestMemoryEvictionTakesTheMidTierLast: when the best-effort pods are not enough, memory eviction goes on to the
// mid tier, after every best-effort pod, through the Eviction API: a service grows by 2.5 GiB above the threshold,
// the batch pod goes first, then the unguarded mid pod, while the mid pod under a PodDisruptionBudget that allows
// no disruption stays.
func TestMemoryEvictionTakesTheMidTierLast(t *testing.T) {
	e := suite.Env(t)
	threshold, _ := memoryEvictThreshold(e, 1<<30)
	setThresholds(e, memoryEvictConfig(threshold))
	ns := e.Namespace()
	eater := func(name, class string) *corev1.Pod {
		return testutil.Pod(name).PriorityClass(class).Label("app", name).Image(EaterImage, "--size=64Mi").Obj()
	}
	batch := e.RunPodIn(ns, eater("batch", "gleaner-batch"))
	mid := e.RunPodIn(ns, eater("mid", "gleaner-mid"))
	guarded := e.RunPodIn(ns, eater("mid-guarded", "gleaner-mid"))
	guard(e, ns, guarded.Name)
	// The agent samples the pods' memory every second; eviction considers only pods with a fresh sample, and
	// touches the mid tier only while every best-effort pod has one.
	time.Sleep(3 * time.Second)

	batchGone, midGone := watchEviction(e, ns, batch.Name), watchEviction(e, ns, mid.Name)
	hog := e.RunPodIn(ns, testutil.Pod("ls-eater").PriorityClass("gleaner-prod").Label(slov1alpha1.LabelQoSClass, "LS").
		Image(EaterImage, "--size=2560Mi").Requests("cpu", "100m", "memory", "64Mi").Obj())
	defer func() {
		_ = e.Clientset.CoreV1().Pods(ns).Delete(context.Background(), hog.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	}()

	e.Eventually(2*time.Minute, func(context.Context) (bool, string) {
		return !batchGone().IsZero() && !midGone().IsZero(),
			fmt.Sprintf("evictions seen: batch %v, mid %v (threshold %d%%)", batchGone(), midGone(), threshold)
	})
	if b, m := batchGone(), midGone(); m.Before(b) {
		t.Errorf("the mid pod was evicted at %s, before the batch pod (%s)", m.Format("15:04:05.000"), b.Format("15:04:05.000"))
	}
	expectGuardedStays(e, ns, guarded.Name)
}

// setThresholds sets resource-threshold-config in slo-controller-config and waits until the node's NodeSLO carries
// it; the test's end puts the key back as it was.
func setThresholds(e *Env, value string) {
	e.t.Helper()
	var want struct {
		ClusterStrategy slov1alpha1.ResourceThresholdStrategy `json:"clusterStrategy"`
	}
	if err := json.Unmarshal([]byte(value), &want); err != nil {
		e.t.Fatal(err)
	}
	setSLOConfig(e, "resource-threshold-config", value, func(spec *slov1alpha1.NodeSLOSpec) (bool, string) {
		got := spec.ResourceUsedThresholdWithBE
		ok := got != nil && got.Enable != nil && *got.Enable == *want.ClusterStrategy.Enable &&
			got.MemoryEvictThresholdPercent != nil && *got.MemoryEvictThresholdPercent == *want.ClusterStrategy.MemoryEvictThresholdPercent
		return ok, fmt.Sprintf("NodeSLO threshold strategy %+v", got)
	})
}

// setSLOConfig sets key of the slo-controller-config ConfigMap to value ("" deletes it) until the test ends, and
// waits until the node's NodeSLO shows it (applied). The cleanup puts back what was there.
func setSLOConfig(e *Env, key, value string, applied func(*slov1alpha1.NodeSLOSpec) (bool, string)) {
	e.t.Helper()
	cm, err := e.Clientset.CoreV1().ConfigMaps(GleanerNamespace).Get(e.Ctx, "slo-controller-config", metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	old, had := cm.Data[key]
	e.t.Cleanup(func() {
		ctx := context.Background()
		cm, err := e.Clientset.CoreV1().ConfigMaps(GleanerNamespace).Get(ctx, "slo-controller-config", metav1.GetOptions{})
		if err != nil {
			e.t.Error(err)
			return
		}
		delete(cm.Data, key)
		if had {
			cm.Data[key] = old
		}
		if _, err := e.Clientset.CoreV1().ConfigMaps(GleanerNamespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			e.t.Error(err)
		}
	})
	changeSLOConfig(e, key, value, applied)
}

// changeSLOConfig is setSLOConfig without putting the key back: for a test that removes Gleaner, ConfigMap and all.
func changeSLOConfig(e *Env, key, value string, applied func(*slov1alpha1.NodeSLOSpec) (bool, string)) {
	e.t.Helper()
	cm, err := e.Clientset.CoreV1().ConfigMaps(GleanerNamespace).Get(e.Ctx, "slo-controller-config", metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if value == "" {
		delete(cm.Data, key)
	} else {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[key] = value
	}
	if _, err := e.Clientset.CoreV1().ConfigMaps(GleanerNamespace).Update(e.Ctx, cm, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		slo := &slov1alpha1.NodeSLO{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: localcluster.NodeName}, slo); err != nil {
			return false, err.Error()
		}
		return applied(&slo.Spec)
	})
}

// quotaCores reads a cgroup's CFS quota in cores, -1 when unlimited.
func quotaCores(t *testing.T, dir string) float64 {
	if cgroupV2(t) {
		quota, period, _ := strings.Cut(strings.TrimSpace(readFile(t, filepath.Join(dir, "cpu.max"))), " ")
		q := parseLimit(t, quota, unlimitedQuota)
		if q < 0 {
			return -1
		}
		return float64(q) / float64(parseLimit(t, period, 0))
	}
	q := readInt(t, filepath.Join(dir, "cpu.cfs_quota_us"))
	if q < 0 {
		return -1
	}
	return float64(q) / float64(readInt(t, filepath.Join(dir, "cpu.cfs_period_us")))
}

// podCPU measures a BestEffort pod's CPU over d, in cores, from its cgroup.
func podCPU(t *testing.T, pod *corev1.Pod, d time.Duration) float64 {
	usage := cpuUsage(t, filepath.Join("kubepods/besteffort", "pod"+string(pod.UID)))
	start, err := usage()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(d)
	end, err := usage()
	if err != nil {
		t.Fatal(err)
	}
	return float64(end-start) / float64(time.Since(t0).Nanoseconds())
}

// cpuUsage returns a reader of the CPU time, in nanoseconds, of the cgroup rel (kubepods/...): cpuacct.usage on
// cgroup v1, cpu.stat's usage_usec on v2.
func cpuUsage(t *testing.T, rel string) func() (int64, error) {
	t.Helper()
	if !cgroupV2(t) {
		file := filepath.Join("/sys/fs/cgroup/cpuacct", rel, "cpuacct.usage")
		return func() (int64, error) {
			b, err := os.ReadFile(file)
			if err != nil {
				return 0, err
			}
			return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		}
	}
	file := filepath.Join("/sys/fs/cgroup", rel, "cpu.stat")
	return func() (int64, error) {
		b, err := os.ReadFile(file)
		if err != nil {
			return 0, err
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "usage_usec "); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				return us * 1000, err
			}
		}
		return 0, fmt.Errorf("%s has no usage_usec", file)
	}
}

// watchReaction polls every 10 ms until ctx ends: spike returns the first time the cgroup whose CPU time usage
// reads burned more than 0.3 cores over 50 ms, reacted the first time after that done() held.
func watchReaction(ctx context.Context, usage func() (int64, error), done func() bool) (spike, reacted func() time.Time) {
	var mu sync.Mutex
	var s, r time.Time
	go func() {
		var window []struct {
			at    time.Time
			usage int64
		}
		for ctx.Err() == nil && r.IsZero() {
			time.Sleep(10 * time.Millisecond)
			now := time.Now()
			mu.Lock()
			if s.IsZero() {
				if u, err := usage(); err == nil {
					window = append(window, struct {
						at    time.Time
						usage int64
					}{now, u})
					for len(window) > 1 && now.Sub(window[0].at) > 50*time.Millisecond {
						first := window[0]
						if float64(u-first.usage)/float64(now.Sub(first.at).Nanoseconds()) > 0.3 {
							s = first.at
						}
						window = window[1:]
					}
				}
			} else if done() {
				r = now
			}
			mu.Unlock()
		}
	}()
	get := func(v *time.Time) func() time.Time {
		return func() time.Time { mu.Lock(); defer mu.Unlock(); return *v }
	}
	return get(&s), get(&r)
}

// watchEviction watches the pods of ns and returns when pod name was first seen marked for deletion or gone.
func watchEviction(e *Env, ns, name string) func() time.Time {
	e.t.Helper()
	w, err := e.Clientset.CoreV1().Pods(ns).Watch(e.Ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		e.t.Fatal(err)
	}
	var mu sync.Mutex
	var at time.Time
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if ok && (ev.Type == watch.Deleted || p.DeletionTimestamp != nil) {
				mu.Lock()
				at = time.Now()
				mu.Unlock()
				return
			}
		}
	}()
	return func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
}

// watchMemory polls /proc/meminfo every 10 ms and returns the first time the node used more than threshold bytes.
func watchMemory(ctx context.Context, threshold int64) func() time.Time {
	var mu sync.Mutex
	var at time.Time
	go func() {
		for ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
			if total, available, err := readMeminfo(); err == nil && total-available > threshold {
				mu.Lock()
				at = time.Now()
				mu.Unlock()
				return
			}
		}
	}()
	return func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
}

// memoryEvictThreshold is the memoryEvictThresholdPercent that lies headroom bytes above what the node uses once
// every earlier test's memory eater has exited (eatersGone), with the node's memory in bytes; the test stops where
// that is above 90 %.
func memoryEvictThreshold(e *Env, headroom int64) (threshold, total int64) {
	e.t.Helper()
	eatersGone(e)
	return memoryEvictThresholdNow(e, headroom)
}

// eatersGone waits until no memory eater (test/workloads/eater) runs on the node. A test ends by deleting its pods
// without waiting (the 2.5 GiB eater with no grace period: gone from the API at once, killed by the kubelet later),
// and an eater still alive when the next test reads the node's use raises that test's threshold by its size, so that
// the next eater may never cross it. That is the likely cause, not separated by an experiment, of the one full run
// in which TestMemoryEvictionTakesTheMidTierLast saw no eviction in 2 minutes (threshold 18 %) and passed alone.
func eatersGone(e *Env) {
	e.t.Helper()
	e.Eventually(2*time.Minute, func(context.Context) (bool, string) {
		pids, err := processesNamed("eater")
		if err != nil {
			return false, err.Error()
		}
		return len(pids) == 0, fmt.Sprintf("earlier tests' memory eaters still running: pids %v", pids)
	})
}

// processesNamed lists the processes whose command name (/proc/PID/comm) is name.
func processesNamed(name string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", d.Name(), "comm"))
		if err != nil {
			continue // exited since the listing
		}
		if strings.TrimSpace(string(comm)) == name {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// memoryEvictThresholdNow is memoryEvictThreshold without the wait: for a caller whose own eaters already run.
func memoryEvictThresholdNow(e *Env, headroom int64) (threshold, total int64) {
	e.t.Helper()
	total, available, err := readMeminfo()
	if err != nil {
		e.t.Fatal(err)
	}
	used := total - available
	threshold = int64(math.Ceil(float64(used+headroom) / float64(total) * 100))
	if threshold > 90 {
		e.t.Fatalf("this machine uses %d of %d MiB already: no room for %d MiB above it", used>>20, total>>20, headroom>>20)
	}
	return threshold, total
}

// memoryEvictConfig is resource-threshold-config with memory eviction at threshold percent (lower mark 1 below),
// and CPU suppression, which the strategy's switch turns on with it, at 100 %: best-effort pods get what the
// services leave.
func memoryEvictConfig(threshold int64) string {
	return fmt.Sprintf(`{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 100, "cpuSuppressPolicy": "cfsQuota", "memoryEvictThresholdPercent": %d, "memoryEvictLowerPercent": %d}}`,
		threshold, threshold-1)
}

// expectGuardedStays checks that the pod name in ns, under a PodDisruptionBudget that allows no disruption, was
// asked for (an EvictionRefused event) and still runs.
func expectGuardedStays(e *Env, ns, name string) {
	e.t.Helper()
	e.Eventually(30*time.Second, func(ctx context.Context) (bool, string) {
		reasons := eventReasons(ctx, e, ns, name)
		return strings.Contains(reasons, "EvictionRefused"), "events on the guarded pod " + name + ": " + reasons
	})
	p, err := e.Clientset.CoreV1().Pods(ns).Get(e.Ctx, name, metav1.GetOptions{})
	switch {
	case err != nil:
		e.t.Errorf("pod %s, under a PodDisruptionBudget, must stay: %v", name, err)
	case p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning:
		e.t.Errorf("pod %s, under a PodDisruptionBudget, must stay: %+v", name, p.Status)
	}
}

// guard covers the pods labelled app=app in ns with a PodDisruptionBudget that allows no disruption, and waits
// until its status says so (one healthy pod, no disruption allowed).
func guard(e *Env, ns, app string) {
	e.t.Helper()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guard-" + app, Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &intstr.IntOrString{Type: intstr.Int, IntVal: 1},
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}
	if err := e.Client.Create(e.Ctx, pdb); err != nil {
		e.t.Fatal(err)
	}
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		got := &policyv1.PodDisruptionBudget{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(pdb), got); err != nil {
			return false, err.Error()
		}
		return got.Status.ObservedGeneration == got.Generation && got.Status.CurrentHealthy == 1 && got.Status.DisruptionsAllowed == 0,
			fmt.Sprintf("PDB status %+v", got.Status)
	})
}

func readMeminfo() (total, available int64, err error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "MemTotal:":
			total = kb << 10
		case "MemAvailable:":
			available = kb << 10
		}
	}
	if total == 0 || available == 0 {
		return 0, 0, fmt.Errorf("/proc/meminfo lacks MemTotal or MemAvailable")
	}
	return total, available, s.Err()
}

// eventReasons lists the reasons of the events on pod name in ns.
func eventReasons(ctx context.Context, e *Env, ns, name string) string {
	list, err := e.Clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return err.Error()
	}
	var reasons []string
	for _, ev := range list.Items {
		reasons = append(reasons, ev.Reason)
	}
	return strings.Join(reasons, ",")
}

// agentMetrics reads the agent's /metrics on the node, trying again for a minute: on the emulated cgroup v2 node an
// agent busy with a memory-pressure episode has answered a single scrape after its client's timeout.
func agentMetrics(e *Env) string {
	e.t.Helper()
	var body string
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		b, err := get(ctx, agentMetricsURL)
		if err != nil {
			return false, err.Error()
		}
		body = b
		return true, ""
	})
	return body
}
