package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/internal/localcluster"
	"github.com/gleaner-sh/gleaner/pkg/agent/runtimehook"
	"github.com/gleaner-sh/gleaner/test/colocation"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// The colocation benchmark's workload. The service answers each request with 2 ms of CPU work; at 100 requests a
// second it uses about a fifth of a core, well under its request of one. The batch mix (batchMix) tries to use every
// CPU of the node, as batch work does when nothing stops it.
const (
	// LSServiceImage is the latency-sensitive service (test/workloads/lsservice).
	LSServiceImage = "gleaner.local/lsservice:dev"

	benchRate       = 100
	benchWork       = "2ms"
	benchServiceApp = "bench-service"
	benchBatchApp   = "bench-batch"
	// benchWindow is the width of the windows the timeline's p99 is taken over.
	benchWindow = 5 * time.Second
	// benchSettle is how long a phase's workload runs before it is measured: the batch pods' start, the first
	// samples of a new agent.
	benchSettle = 10 * time.Second
)

// The phases of the benchmark. unprotected: the batch pods run with Gleaner publishing batch resources but its node
// protection off by configuration (the runtime hook off, CPU idle for best-effort off); protected: Gleaner as
// installed.
const (
	phaseUnprotected = "unprotected"
	phaseProtected   = "protected"
	// phaseSpike follows phaseProtected with the same batch pods and the service's load at twice the rate.
	phaseSpike = "spike"
	// phaseMemory runs once, protected with memory eviction on (memoryPhase): a second service pod grows while the
	// phase is measured, past the node's threshold, so that the batch pods' memory must go.
	phaseMemory = "memory growth"
)

// BenchmarkColocation measures the promise on the real local node: the service's latency from an open-loop load
// generator outside its cgroup, alone and beside batch pods with and without Gleaner's protection, alternated over
// rounds, with the node's CPU use by class. It writes colocation.json, colocation.svg and colocation.md to
// $GLEANER_BENCH_OUT (default: a temporary directory, printed). make bench-colocation runs it once;
// GLEANER_BENCH_PHASE (a duration, default 45s) and GLEANER_BENCH_ROUNDS (default 3) size it, GLEANER_BENCH_MIX
// picks part of the batch mix (benchMixOf), GLEANER_BENCH_THRESHOLD protects with other thresholds
// (benchProtection).
func BenchmarkColocation(b *testing.B) {
	e := suite.Env(b)
	for b.Loop() {
		benchColocation(b, e)
	}
}

func benchColocation(b *testing.B, e *Env) {
	phaseLen, rounds := benchSize(b)
	out := os.Getenv("GLEANER_BENCH_OUT")
	if out == "" {
		out = b.TempDir()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		b.Fatal(err)
	}
	waitForHookMode(e, runtimehook.ModeNRI)

	ns := e.Namespace()
	svc := startBenchService(e, ns)
	url := "http://" + svc.Status.PodIP + ":8080/"
	gen := colocation.Generator{URL: url, Rate: benchRate, Client: &http.Client{Timeout: 2 * time.Second}}
	if _, err := gen.Run(e.Ctx, 5*time.Second); err != nil { // warm the service and the connection pool
		b.Fatal(err)
	}

	published := e.MakeRoomForBatch(benchMinBatchMilli)
	profile := applySampleProfile(e)
	batchNS := e.Namespace()
	e.Kubectl("label", "namespace", batchNS, profileLabel+"=batch")
	waitForProfile(e, batchNS, profile.Spec.PriorityClassName)
	cpus := benchCPUs(b)
	// Two thirds of what the node publishes, over the burners of the mix: room for the published value to move.
	mix := benchMixOf(b, batchMix(cpus))
	sizeMix(mix, published*2/3)
	b.Logf("node publishes %dm of batch-cpu; the batch pods ask (as cpu, through the ColocationProfile): %s", published, describeMix(mix))

	r := &benchRun{e: e, b: b, gen: gen, report: colocation.Report{CPUs: cpus, Rate: benchRate},
		reader: colocation.Reader{ProcStat: "/proc/stat", Classes: []colocation.Class{
			{Name: "service", Usage: filepath.Join("/sys/fs/cgroup/cpuacct/kubepods/burstable", "pod"+string(svc.UID), "cpuacct.usage"),
				Stat: filepath.Join("/sys/fs/cgroup/cpu/kubepods/burstable", "pod"+string(svc.UID), "cpu.stat")},
			{Name: "batch", Usage: "/sys/fs/cgroup/cpuacct/kubepods/besteffort/cpuacct.usage", Stat: besteffortCPU + "/cpu.stat"},
		}}}
	protection := benchProtection(e)
	writeSLOKeys(e, protection.on, true)
	protected := true
	batch := func() func() { return runBatch(e, batchNS, mix) }
	for round := 1; round <= rounds; round++ {
		r.phase(benchPhase{name: colocation.AlonePhase, round: round}, phaseLen)
		order := []bool{protected, !protected} // alternate, so that each switch of the protection serves two phases
		for _, on := range order {
			if on != protected {
				setProtection(e, on, protection)
				protected = on
			}
			if !on {
				r.phase(benchPhase{name: phaseUnprotected, round: round, batch: batch}, phaseLen)
				continue
			}
			stop := batch()
			r.phase(benchPhase{name: phaseProtected, round: round}, phaseLen)
			r.phase(benchPhase{name: phaseSpike, round: round, load: 2}, phaseLen)
			stop()
		}
	}
	if !protected {
		setProtection(e, true, protection)
	}
	r.memoryPhase(ns, batchNS, mix, phaseLen)
	r.finish(out)
}

// The memory-growth phase: a batch pod holding benchBatchMemory beside the mix, and a second service pod that
// grows to benchServiceGrowth, a step a second, once the phase is measured; the node's memory eviction threshold
// is benchMemoryHeadroom above what the node uses with the batch pods running, so that the growth crosses it and
// the batch pod's memory must go for the service's to fit.
const (
	benchBatchMemory    = "2Gi"
	benchHolderLimit    = "2112Mi" // benchBatchMemory and 64 MiB for the program
	benchServiceGrowth  = "2Gi"
	benchGrowthStep     = "128Mi"
	benchMemoryHeadroom = 1 << 30
)

// memoryPhase runs phaseMemory: memory eviction on (memoryEvictConfig), the batch mix and a batch memory holder,
// and the service's growth during the measurement. slo-controller-config's thresholds are put back as the
// protected phases had them afterwards.
func (r *benchRun) memoryPhase(ns, batchNS string, mix []batchWork, d time.Duration) {
	e := r.e
	e.t.Helper()
	holder := batchWork{name: "bench-holder", image: EaterImage, args: []string{"--size=" + benchBatchMemory}, milli: benchDiskMilli,
		memory: benchHolderLimit}
	stop := runBatch(e, batchNS, append(slices.Clone(mix), holder))
	defer stop()
	time.Sleep(3 * time.Second) // the holder's pages touched, the agent's memory samples fresh
	threshold, total := memoryEvictThreshold(e, benchMemoryHeadroom)
	before := r.thresholds()
	writeSLOKeys(e, map[string]string{resourceThresholdKey: memoryEvictConfig(threshold)}, true)
	defer writeSLOKeys(e, map[string]string{resourceThresholdKey: before}, true)
	r.b.Logf("memory phase: eviction threshold %d %% of %d MiB, %d MiB above the node's use with the batch pods", threshold, total>>20, benchMemoryHeadroom>>20)
	// Created, not waited for: it runs beside the load generator, off the benchmark's goroutine.
	grow := func() func() {
		pod := testutil.Pod("bench-grower").Namespace(ns).PriorityClass("gleaner-prod").Label(slov1alpha1.LabelQoSClass, "LS").
			Image(EaterImage, "--size="+benchServiceGrowth, "--step="+benchGrowthStep).Requests("cpu", "100m", "memory", "64Mi").Obj()
		pod.UID, pod.Status = "", corev1.PodStatus{}
		if _, err := e.Clientset.CoreV1().Pods(ns).Create(e.Ctx, pod, metav1.CreateOptions{}); err != nil {
			r.b.Errorf("creating the growing service pod: %v", err)
		}
		return func() {
			_ = e.Clientset.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		}
	}
	r.phase(benchPhase{name: phaseMemory, round: 1, during: grow}, d)
}

// thresholds is slo-controller-config's resource-threshold-config now.
func (r *benchRun) thresholds() string {
	cm, err := r.e.Clientset.CoreV1().ConfigMaps(GleanerNamespace).Get(r.e.Ctx, SLOConfigName, metav1.GetOptions{})
	if err != nil {
		r.b.Fatal(err)
	}
	return cm.Data[resourceThresholdKey]
}

// benchSize reads GLEANER_BENCH_PHASE and GLEANER_BENCH_ROUNDS.
func benchSize(b *testing.B) (time.Duration, int) {
	phase, rounds := 45*time.Second, 3
	if s := os.Getenv("GLEANER_BENCH_PHASE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 2*benchWindow {
			b.Fatalf("GLEANER_BENCH_PHASE=%q: want a duration of at least %s", s, 2*benchWindow)
		}
		phase = d
	}
	if s := os.Getenv("GLEANER_BENCH_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("GLEANER_BENCH_ROUNDS=%q: want a positive number", s)
		}
		rounds = n
	}
	return phase, rounds
}

// benchCPUs is the node's CPU count as /proc/stat lists it.
func benchCPUs(b *testing.B) int {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "cpu") && !strings.HasPrefix(line, "cpu ") {
			n++
		}
	}
	return n
}

// startBenchService runs the service: a prod pod asking for a core, whose load comes from the benchmark only.
func startBenchService(e *Env, ns string) *corev1.Pod {
	pod := testutil.Pod(benchServiceApp).Label("app", benchServiceApp).Label("gleaner.sh/qos-class", "LS").
		PriorityClass("gleaner-prod").Container("service").
		Image(LSServiceImage, "--listen=:8080", "--qps=0", "--report=0", "--work="+benchWork).
		Requests("cpu", "1", "memory", "128Mi").Limits("cpu", "2", "memory", "256Mi").Obj()
	return e.RunPodIn(ns, pod)
}

// waitForProfile waits until a pod created in ns gets the profile's priority class: the manager's cache learns of
// the profile and the namespace's label within moments, and a dry-run pod shows when it has.
func waitForProfile(e *Env, ns, priorityClass string) {
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		probe := testutil.Pod("probe").Namespace(ns).Container("c").Requests("cpu", "10m").Obj()
		probe.UID, probe.Status = "", corev1.PodStatus{}
		got, err := e.Clientset.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err.Error()
		}
		return got.Spec.PriorityClassName == priorityClass, fmt.Sprintf("a dry-run pod got priority class %q", got.Spec.PriorityClassName)
	})
}

// batchWork is one Deployment of the benchmark's batch mix.
type batchWork struct {
	name   string
	image  string
	args   []string
	milli  int64
	memory string
	// scratch mounts an emptyDir on the node's disk at /data.
	scratch bool
}

// batchMix is the batch work of one phase for a node of cpus CPUs: a CPU burner and a cache and memory-bandwidth
// thrasher that each try to use every CPU (their requests are set by sizeMix), and a disk writer.
func batchMix(cpus int) []batchWork {
	load := fmt.Sprintf("--load=%d", cpus)
	return []batchWork{
		{name: "bench-burner", image: BurnerImage, args: []string{load, "--report=0"}, memory: "64Mi"},
		{name: "bench-thrasher", image: BurnerImage, args: []string{load, "--report=0", "--thrash=64Mi"},
			memory: fmt.Sprintf("%dMi", 64*cpus+64)},
		{name: "bench-diskwriter", image: DiskWriterImage, args: []string{"--dir=/data", "--rate=32Mi", "--size=256Mi"},
			milli: benchDiskMilli, memory: "64Mi", scratch: true},
	}
}

// benchMixOf is the works GLEANER_BENCH_MIX names (a comma-separated list of bench-burner, bench-thrasher and
// bench-diskwriter, to tell their interference apart), or all of them.
func benchMixOf(b *testing.B, all []batchWork) []batchWork {
	names := os.Getenv("GLEANER_BENCH_MIX")
	if names == "" {
		return all
	}
	var mix []batchWork
	for _, n := range strings.Split(names, ",") {
		i := slices.IndexFunc(all, func(w batchWork) bool { return w.name == strings.TrimSpace(n) })
		if i < 0 {
			b.Fatalf("GLEANER_BENCH_MIX=%q: %q is not one of bench-burner, bench-thrasher, bench-diskwriter", names, n)
		}
		mix = append(mix, all[i])
	}
	return mix
}

// benchMinBatchMilli is the least batch-cpu the benchmark starts with: the node publishes what its measured usage
// leaves, and a node whose own programs use most of it has nothing to show.
const benchMinBatchMilli = 300

// sizeMix shares milli millicores among the works without a request of their own (the burners), after those with
// one; a burner gets at least 50m.
func sizeMix(ws []batchWork, milli int64) {
	var burners int64
	for _, w := range ws {
		if w.milli == 0 {
			burners++
		} else {
			milli -= w.milli
		}
	}
	for i := range ws {
		if ws[i].milli == 0 {
			ws[i].milli = max(50, milli/burners)
		}
	}
}

func describeMix(ws []batchWork) string {
	var n []string
	for _, w := range ws {
		n = append(n, fmt.Sprintf("%s %dm", w.name, w.milli))
	}
	return strings.Join(n, ", ")
}

// benchDiskMilli is the disk writer's CPU request.
const benchDiskMilli = 50

// runBatch deploys the batch work as a user would, plain Deployments in the profiled namespace, and waits until
// their pods run; the returned func deletes them and waits until they and their pods are gone.
func runBatch(e *Env, ns string, works []batchWork) func() {
	e.t.Helper()
	for _, w := range works {
		cpu := fmt.Sprintf("%dm", w.milli)
		tmpl := testutil.Pod("").Label("app", benchBatchApp).Label("work", w.name).Container("work").Image(w.image, w.args...).
			Requests("cpu", cpu, "memory", w.memory).Limits("cpu", cpu, "memory", w.memory).Obj()
		spec := corev1.PodSpec{Containers: tmpl.Spec.Containers, TerminationGracePeriodSeconds: ptr.To[int64](0)}
		if w.scratch {
			spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(int32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"work": w.name}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: spec},
			},
		}
		if _, err := e.Clientset.AppsV1().Deployments(ns).Create(e.Ctx, dep, metav1.CreateOptions{}); err != nil {
			e.t.Fatalf("creating the batch Deployment %s: %v", w.name, err)
		}
	}
	batchPods := func(ctx context.Context) ([]corev1.Pod, error) {
		pods, err := e.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + benchBatchApp})
		if err != nil {
			return nil, err
		}
		return pods.Items, nil
	}
	e.Eventually(3*time.Minute, func(ctx context.Context) (bool, string) {
		pods, err := batchPods(ctx)
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == len(works), fmt.Sprintf("%d of %d batch pods running: %v", running, len(works), podPhases(pods))
	})
	return func() {
		for _, w := range works {
			if err := e.Clientset.AppsV1().Deployments(ns).Delete(e.Ctx, w.name, metav1.DeleteOptions{
				PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
				e.t.Fatalf("deleting the batch Deployment %s: %v", w.name, err)
			}
		}
		// The Deployments too: foreground deletion keeps each until its pods are gone, and the next phase makes
		// them again under the same names.
		e.Eventually(2*time.Minute, func(ctx context.Context) (bool, string) {
			pods, err := batchPods(ctx)
			if err != nil {
				return false, err.Error()
			}
			deps, err := e.Clientset.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			return len(pods) == 0 && len(deps.Items) == 0, fmt.Sprintf("%d batch pods and %d Deployments left", len(pods), len(deps.Items))
		})
	}
}

// The keys of slo-controller-config that configure the QoS classes' cgroup features and the node's thresholds (CPU
// suppression, memory eviction).
const (
	resourceQOSKey       = "resource-qos-config"
	resourceThresholdKey = "resource-threshold-config"
)

// protectionConfig is what slo-controller-config holds in each kind of phase, by key ("" for no such key).
type protectionConfig struct {
	on, off map[string]string
}

// benchProtection reads the installed values of the two keys. Protected phases run with them, or with
// GLEANER_BENCH_THRESHOLD as resource-threshold-config (to measure CPU suppression, off by default); unprotected
// phases run with class BE's cpuQOS off and the installed thresholds. When the benchmark ends both keys are put back.
func benchProtection(e *Env) protectionConfig {
	e.t.Helper()
	cm, err := e.Clientset.CoreV1().ConfigMaps(GleanerNamespace).Get(e.Ctx, SLOConfigName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	installed := map[string]string{resourceQOSKey: cm.Data[resourceQOSKey], resourceThresholdKey: cm.Data[resourceThresholdKey]}
	e.t.Cleanup(func() { writeSLOKeys(e, installed, false) }) // the test's context has ended: nothing to wait with
	cfg := protectionConfig{on: maps.Clone(installed), off: maps.Clone(installed)}
	if t := os.Getenv("GLEANER_BENCH_THRESHOLD"); t != "" {
		cfg.on[resourceThresholdKey] = t
	}
	cfg.off[resourceQOSKey] = `{"clusterStrategy":{"beClass":{"cpuQOS":{"enable":false,"groupIdentity":0}}}}`
	return cfg
}

// writeSLOKeys sets keys of slo-controller-config ("" deletes one) and, with wait, waits until the manager has
// written the node's NodeSLO from them (its resourceVersion moves), when they changed anything.
func writeSLOKeys(e *Env, keys map[string]string, wait bool) {
	e.t.Helper()
	ctx := context.Background()
	fail := e.t.Fatalf // at cleanup (no wait), one failure must not stop the rest
	if !wait {
		fail = e.t.Errorf
	}
	cm, err := e.Clientset.CoreV1().ConfigMaps(GleanerNamespace).Get(ctx, SLOConfigName, metav1.GetOptions{})
	if err != nil {
		fail("reading %s: %v", SLOConfigName, err)
		return
	}
	changed := false
	for k, v := range keys {
		if cm.Data[k] == v {
			continue
		}
		changed = true
		if v == "" {
			delete(cm.Data, k)
		} else {
			cm.Data[k] = v
		}
	}
	if !changed {
		return
	}
	slo := &slov1alpha1.NodeSLO{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: localcluster.NodeName}, slo); err != nil {
		fail("reading NodeSLO %s: %v", localcluster.NodeName, err)
		return
	}
	if _, err := e.Clientset.CoreV1().ConfigMaps(GleanerNamespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		fail("changing %s: %v", SLOConfigName, err)
		return
	}
	if !wait {
		return
	}
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		now := &slov1alpha1.NodeSLO{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: localcluster.NodeName}, now); err != nil {
			return false, err.Error()
		}
		return now.ResourceVersion != slo.ResourceVersion, "the NodeSLO was not written again"
	})
}

// setProtection turns Gleaner's node protection off or back on, by configuration: the agent's --runtime-hook (off,
// or as installed) and slo-controller-config's keys (cfg). It waits until the agent runs with the hook's new mode and
// the besteffort QoS cgroup's cpu.idle says the kernel has class BE's cpuQOS.
func setProtection(e *Env, on bool, cfg protectionConfig) {
	e.t.Helper()
	const off = "--runtime-hook=off"
	ds, err := e.Clientset.AppsV1().DaemonSets(GleanerNamespace).Get(e.Ctx, "gleaner-agent", metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	c := &ds.Spec.Template.Spec.Containers[0]
	c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return a == off })
	if !on {
		c.Args = append(c.Args, off) // the last --runtime-hook wins
	}
	if _, err := e.Clientset.AppsV1().DaemonSets(GleanerNamespace).Update(e.Ctx, ds, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("changing the agent's --runtime-hook: %v", err)
	}
	e.Kubectl("-n", GleanerNamespace, "rollout", "status", "daemonset/gleaner-agent", "--timeout=3m")
	mode, idle, keys := runtimehook.ModeNRI, "1", cfg.on
	if !on {
		mode, idle, keys = runtimehook.ModeOff, "0", cfg.off
	}
	writeSLOKeys(e, keys, true)
	waitForHookMode(e, mode)
	e.Eventually(2*time.Minute, func(context.Context) (bool, string) {
		b, err := os.ReadFile(besteffortCPU + "/cpu.idle")
		if err != nil {
			return false, err.Error()
		}
		got := strings.TrimSpace(string(b))
		return got == idle, fmt.Sprintf("besteffort cpu.idle %s, want %s", got, idle)
	})
}

// benchRun collects a run's phases and timeline.
type benchRun struct {
	e       *Env
	b       *testing.B
	gen     colocation.Generator
	reader  colocation.Reader
	report  colocation.Report
	samples []colocation.Sample
}

// benchPhase is one phase's workload.
type benchPhase struct {
	name  string
	round int
	// load is the service's rate as a multiple of benchRate (0: 1).
	load float64
	// batch starts the batch work before the phase settles and returns its stop (nil: no batch work of its own).
	batch func() func()
	// during starts beside the load generator when the measurement starts and returns its stop (nil: nothing).
	during func() func()
}

// phase runs one phase: start its batch work, let it settle, measure for d (starting what runs during it), stop
// both.
func (r *benchRun) phase(ph benchPhase, d time.Duration) {
	r.b.Helper()
	name, round := ph.name, ph.round
	if ph.batch != nil {
		stop := ph.batch()
		defer stop()
	}
	time.Sleep(benchSettle)
	gen := r.gen
	if ph.load > 0 {
		gen.Rate *= ph.load
	}
	before := agentActions(r.e)
	ctx, cancel := context.WithCancel(r.e.Ctx)
	var wg sync.WaitGroup
	var points []colocation.Point
	first, err := r.reader.Read()
	if err != nil {
		r.b.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		points = r.timeline(ctx, first)
	}()
	var stopDuring func()
	if ph.during != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stopDuring = ph.during()
		}()
	}
	samples, err := gen.Run(r.e.Ctx, d)
	cancel()
	wg.Wait()
	if stopDuring != nil {
		defer stopDuring()
	}
	if err != nil {
		r.b.Fatal(err)
	}
	last, err := r.reader.Read()
	if err != nil {
		r.b.Fatal(err)
	}
	use := colocation.Between(first, last)
	p := colocation.Phase{Name: name, Round: round, Start: first.At, End: last.At, Latency: colocation.Summarize(samples),
		CPU: use, BatchCoresDone: use.Classes["batch"] * float64(r.report.CPUs), Actions: diffActions(before, agentActions(r.e))}
	r.b.Logf("%s (round %d): p50 %.2fms p99 %.2fms p99.9 %.2fms, %d errors; node %.0f%%, batch %.0f%%, service %.1f%%",
		name, round, p.Latency.P50, p.Latency.P99, p.Latency.P999, p.Latency.Errors, 100*use.Node, 100*use.Classes["batch"], 100*use.Classes["service"])
	r.report.Phases = append(r.report.Phases, p)
	r.report.Points = append(r.report.Points, points...)
	r.samples = append(r.samples, samples...)
}

// timeline reads the CPU counters and the batch class's limit every second until ctx ends.
func (r *benchRun) timeline(ctx context.Context, prev colocation.Snapshot) []colocation.Point {
	var points []colocation.Point
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return points
		case <-t.C:
		}
		s, err := r.reader.Read()
		if err != nil {
			continue // a pod's cgroup between two reads: the next second's read covers it
		}
		points = append(points, colocation.Point{At: s.At, CPU: colocation.Between(prev, s), BatchQuota: besteffortQuota()})
		prev = s
	}
}

// besteffortQuota is the besteffort QoS cgroup's CFS limit in cores, 0 when it has none.
func besteffortQuota() float64 {
	read := func(f string) float64 {
		b, err := os.ReadFile(filepath.Join(besteffortCPU, f))
		if err != nil {
			return 0
		}
		v, _ := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		return v
	}
	q, p := read("cpu.cfs_quota_us"), read("cpu.cfs_period_us")
	if q <= 0 || p <= 0 {
		return 0
	}
	return q / p
}

// agentActions are the agent's counters of what it did: evictions, cgroup writes, runtime-hook adjustments.
func agentActions(e *Env) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(agentMetrics(e), "\n") {
		for _, name := range []string{"gleaner_agent_evictions_total", "gleaner_agent_executor_writes_total", "gleaner_agent_runtime_hook_nri_requests_total"} {
			if !strings.HasPrefix(line, name) {
				continue
			}
			fields := strings.Fields(line)
			if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
				out[name] += v
			}
		}
	}
	return out
}

func diffActions(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[strings.TrimPrefix(k, "gleaner_agent_")] = d
		}
	}
	return out
}

// finish puts the p99 of the window before each point on the timeline, summarises and writes the report.
func (r *benchRun) finish(dir string) {
	rep := &r.report
	for i := range rep.Points {
		at := rep.Points[i].At
		var in []colocation.Sample
		for _, s := range r.samples {
			if s.Due.After(at.Add(-benchWindow)) && !s.Due.After(at) {
				in = append(in, s)
			}
		}
		rep.Points[i].P99 = colocation.Summarize(in).P99
	}
	rep.Summarise("service", "batch")
	files := map[string]func(*os.File) error{
		"colocation.json": func(f *os.File) error { return rep.WriteJSON(f) },
		"colocation.svg":  func(f *os.File) error { return rep.WriteSVG(f, "service", "batch") },
		"colocation.md":   func(f *os.File) error { return rep.WriteTable(f) },
	}
	for name, write := range files {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			r.b.Fatal(err)
		}
		if err := write(f); err != nil {
			r.b.Fatalf("writing %s: %v", name, err)
		}
		if err := f.Close(); err != nil {
			r.b.Fatal(err)
		}
	}
	var table strings.Builder
	_ = rep.WriteTable(&table)
	r.b.Logf("colocation benchmark, %d CPUs, %d requests/s; written to %s:\n%s", rep.CPUs, benchRate, dir, table.String())
}
