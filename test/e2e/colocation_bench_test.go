package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// The colocation benchmark's workload. The service answers each request with fixed work (lsservice --kind=fixed:
// benchOps operations, each reading a cache line of a benchSet working set), so that a neighbour that slows the
// CPU's caches or shares its core lengthens it; at 100 requests a second it uses about a fifth of a core, well under
// its request of one. The batch mix (batchMix) tries to use every
// CPU of the node, as batch work does when nothing stops it.
const (
	// LSServiceImage is the latency-sensitive service (test/workloads/lsservice).
	LSServiceImage = "gleaner.local/lsservice:dev"

	benchRate = 100
	benchWork = "2ms"
	benchSet  = "8Mi"
	// benchOps is the service's operations per request, the same in every run: about benchWork on this project's
	// 2-vCPU VM (runs 9-11 calibrated at their start to 28,197-29,807). Calibrated in each run, the count moved with
	// whatever shared the caches at the pod's start, even timed in the thread's own CPU time (14,232 in run 12, whose
	// service then did half of the other runs' work), so two runs compared different services.
	// GLEANER_BENCH_OPS=0 calibrates to benchWork instead.
	benchOps        = 28000
	benchServiceApp = "bench-service"
	benchBatchApp   = "bench-batch"
	// benchConns is the load generator's connection pool: opened before the first phase, never dialed during one.
	benchConns = 32
	// benchTimeout bounds a request; one that runs past it counts at its latency, as an error.
	benchTimeout = time.Second
	// benchRealtime is the load generator's SCHED_RR priority (colocation.RealtimeThreads says why).
	benchRealtime = 10
	// benchWindow is the width of the windows the timeline's p99 is taken over.
	benchWindow = 5 * time.Second
	// benchSettle is how long a phase's workload runs before it is measured: the batch pods' start, the first
	// samples of a new agent.
	benchSettle = 10 * time.Second
	// benchBurnerPort is where the batch burners answer GET /work.
	benchBurnerPort = 8081
)

// BenchmarkColocation measures the promise on the real local node: the service's latency from an open-loop load
// generator that the node's batch work cannot delay, alone and beside batch pods of several sizes under several
// settings of Gleaner, in alternating rounds of random order, with the batch work done and the node's CPU use. It
// writes colocation.json, colocation.svg (the timeline), frontier.svg, frontier.md and colocation.md to
// $GLEANER_BENCH_OUT (default: a temporary directory, printed). make bench-colocation runs it once; benchConfigOf
// reads its environment variables.
func BenchmarkColocation(b *testing.B) {
	e := suite.Env(b)
	for b.Loop() {
		benchColocation(b, e)
	}
}

func benchColocation(b *testing.B, e *Env) {
	cfg := benchConfigOf(b)
	out := os.Getenv("GLEANER_BENCH_OUT")
	if out == "" {
		out = b.TempDir()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		b.Fatal(err)
	}
	b.Logf("colocation benchmark: %s", cfg)
	var tracer string
	if cfg.schedWait { // built before this process's threads go to SCHED_RR, which the compiler would inherit
		tracer = filepath.Join(b.TempDir(), "schedwait")
		build := exec.CommandContext(e.Ctx, "go", "build", "-o", tracer, "./hack/bench/schedwait")
		build.Dir = e.Suite.RepoRoot
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("building the scheduler tracer: %v\n%s", err, out)
		}
	}
	waitForHookMode(e, runtimehook.ModeNRI)

	ns := e.Namespace()
	svc := startBenchService(e, ns, cfg.service, cfg.ops)
	url := "http://" + svc.Status.PodIP + ":8080/"
	pool := colocation.NewPool(benchConns, benchTimeout)
	if err := pool.Warm(e.Ctx, url); err != nil {
		b.Fatal(err)
	}
	restore, err := colocation.RealtimeThreads(benchRealtime)
	if err != nil {
		b.Fatalf("the load generator at SCHED_RR: %v", err)
	}
	unregister := suite.OnInterrupt(func() {
		if err := restore(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: the load generator back at SCHED_OTHER: %v\n", err)
		}
	})
	defer func() {
		unregister()
		if err := restore(); err != nil {
			b.Error(err)
		}
	}()
	gen := colocation.Generator{URL: url, Rate: benchRate, Poisson: true, Client: pool.Client}
	if _, err := gen.Run(e.Ctx, 5*time.Second); err != nil { // warm the service
		b.Fatal(err)
	}

	published := e.MakeRoomForBatch(benchMinBatchMilli)
	profile := applySampleProfile(e)
	batchNS := e.Namespace()
	e.Kubectl("label", "namespace", batchNS, profileLabel+"=batch")
	waitForProfile(e, batchNS, profile.Spec.PriorityClassName)
	cpus := benchCPUs(b)
	mix := benchMixOf(b, batchMix(cpus))
	b.Logf("node publishes %dm of batch-cpu; the mix: %s", published, describeMix(mix))

	r := &benchRun{e: e, b: b, gen: gen, pool: pool, batchNS: batchNS, service: svc, seed: cfg.seed, schedWait: tracer,
		report: colocation.Report{CPUs: cpus, Rate: benchRate},
		reader: colocation.Reader{ProcStat: "/proc/stat", Classes: []colocation.Class{
			{Name: "service", Usage: filepath.Join("/sys/fs/cgroup/cpuacct/kubepods/burstable", "pod"+string(svc.UID), "cpuacct.usage"),
				Stat: filepath.Join("/sys/fs/cgroup/cpu/kubepods/burstable", "pod"+string(svc.UID), "cpu.stat")},
			{Name: "batch", Usage: "/sys/fs/cgroup/cpuacct/kubepods/besteffort/cpuacct.usage", Stat: besteffortCPU + "/cpu.stat"},
		}}}
	settings, defaults := benchSettingsOf(b, e, cfg.settings)
	sized := func(frac float64) func() func() {
		return func() func() {
			m := slices.Clone(mix)
			sizeMix(m, int64(frac*float64(batchCPUPublished(e))))
			return runBatch(e, batchNS, m)
		}
	}
	defer func() { // a failure in a split phase must not leave the node split
		if r.current != nil && r.current.split {
			r.splitCPUs(false)
		}
	}()
	if shares, ok := benchEnvInt(b, "GLEANER_BENCH_HOST_SHARES", 2, "the host's processes' cpu.shares"); ok {
		defer hostShares(b, shares)()
	}
	r.apply(settings[0])
	// The batch work's own rate: units per CPU-second of each burner, with the service idle (no requests).
	r.calibrate(sized(2.0/3), min(cfg.phase, 30*time.Second), countBurners(mix))
	rng := rand.New(rand.NewPCG(cfg.seed, 1))
	for round := 1; round <= cfg.rounds; round++ {
		// A random order of the settings, and of the sizes within each: one switch of the agent per setting, and an
		// alone phase just before each setting's phases, which pair with it (frontier).
		for _, i := range rng.Perm(len(settings)) {
			r.apply(settings[i])
			r.alonePhase(round, cfg.phase)
			for _, j := range rng.Perm(len(cfg.sizes)) {
				size := cfg.sizes[j]
				r.phase(benchPhase{name: settings[i].name + " " + size.label, setting: settings[i].name, size: size.frac, round: round,
					batch: sized(size.frac)}, cfg.phase)
			}
		}
	}
	r.apply(defaults) // the node as installed again, for the memory phase and after the benchmark
	if cfg.memory {
		r.memoryPhase(ns, batchNS, mix, cfg.phase)
	}
	r.finish(out)
}

// alonePhase measures the service alone, on all the CPUs: under a split setting the split is undone for the phase
// and made again after it. The agent's other settings change nothing without batch pods.
func (r *benchRun) alonePhase(round int, d time.Duration) {
	if r.current != nil && r.current.split {
		r.splitCPUs(false)
		defer r.splitCPUs(true)
	}
	r.phase(benchPhase{name: colocation.AlonePhase, round: round}, d)
}

// phaseMemory runs once, after the rounds, with Gleaner's defaults and memory eviction on (memoryPhase): a second
// service pod grows while the phase is measured, past the node's threshold, so that the batch pods' memory must go.
const phaseMemory = "memory growth"

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
	threshold, total := memoryEvictThresholdNow(e, benchMemoryHeadroom)
	before := r.thresholds()
	writeSLOKeys(e, map[string]string{resourceThresholdKey: memoryEvictConfig(threshold)}, true)
	defer writeSLOKeys(e, map[string]string{resourceThresholdKey: before}, true)
	r.b.Logf("memory phase: eviction threshold %d %% of %d MiB, %d MiB above the node's use with the batch pods", threshold, total>>20, benchMemoryHeadroom>>20)
	// Created, not waited for: it runs beside the load generator, off the benchmark's goroutine.
	grow := func() func() {
		pod := testutil.Pod("bench-grower").Namespace(ns).PriorityClass("gleaner-prod").Label(slov1alpha1.LabelQoSClass, "LS").
			Image(EaterImage, "--size="+benchServiceGrowth, "--step="+benchGrowthStep).Requests("cpu", "100m", "memory", "64Mi").Obj()
		pod.UID, pod.Status = "", corev1.PodStatus{}
		NonRoot(&pod.Spec)
		if _, err := e.Clientset.CoreV1().Pods(ns).Create(e.Ctx, pod, metav1.CreateOptions{}); err != nil {
			r.b.Errorf("creating the growing service pod: %v", err)
		}
		return func() {
			_ = e.Clientset.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		}
	}
	r.phase(benchPhase{name: phaseMemory, round: 1, during: grow}, d)
	p := r.report.Phases[len(r.report.Phases)-1]
	r.b.Logf("memory phase: batch pods evicted by work %v, the agent's eviction requests %.0f", p.BatchPodsGone, p.Actions[colocation.EvictionsAction])
}

// thresholds is slo-controller-config's resource-threshold-config now.
func (r *benchRun) thresholds() string {
	cm, err := r.e.Clientset.CoreV1().ConfigMaps(GleanerNamespace).Get(r.e.Ctx, SLOConfigName, metav1.GetOptions{})
	if err != nil {
		r.b.Fatal(err)
	}
	return cm.Data[resourceThresholdKey]
}

// batchCPUPublished is the batch-cpu the node publishes now, in millicores.
func batchCPUPublished(e *Env) int64 {
	node, err := e.Clientset.CoreV1().Nodes().Get(e.Ctx, localcluster.NodeName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	q := node.Status.Allocatable[slov1alpha1.BatchCPU]
	return q.Value()
}

// benchConfig is a run's size and what it compares.
type benchConfig struct {
	phase    time.Duration
	rounds   int
	settings []string
	sizes    []benchSize
	service  string
	ops      int
	seed     uint64
	memory   bool
	// schedWait traces the scheduler in every phase (hack/bench/schedwait).
	schedWait bool
}

// benchSize is a batch size: the share of the published batch-cpu the batch pods ask for, and its label.
type benchSize struct {
	label string
	frac  float64
}

func (c benchConfig) String() string {
	var sizes []string
	for _, s := range c.sizes {
		sizes = append(sizes, s.label)
	}
	return fmt.Sprintf("%s phases, %d rounds, settings %s, batch sizes %s of the published batch-cpu, service %s (%d ops, 0 calibrates), seed %d, memory phase %t, scheduler trace %t",
		c.phase, c.rounds, strings.Join(c.settings, ","), strings.Join(sizes, ","), c.service, c.ops, c.seed, c.memory, c.schedWait)
}

// benchConfigOf reads the run's environment: GLEANER_BENCH_PHASE (a duration, default 60s), GLEANER_BENCH_ROUNDS
// (default 6), GLEANER_BENCH_SETTINGS (benchSettingsOf; default unprotected,defaults,suppress), GLEANER_BENCH_SIZES
// (fractions of the published batch-cpu as a/b or decimals, default 1/3,2/3,1), GLEANER_BENCH_SERVICE (fixed or spin,
// the service's work), GLEANER_BENCH_OPS (its operations per request, default benchOps; 0 calibrates them to
// benchWork at the service's start), GLEANER_BENCH_SEED (the order and the arrivals; default from the clock, logged) and
// GLEANER_BENCH_MEMORY (0 leaves out the memory-growth phase). GLEANER_BENCH_MIX picks part of the batch mix
// (benchMixOf); GLEANER_BENCH_SCHEDWAIT=1 traces the scheduler in every phase (startSchedWait), and
// GLEANER_BENCH_HOST_SHARES=N puts the host's processes in a cpu cgroup of N shares for the run (hostShares).
func benchConfigOf(b *testing.B) benchConfig {
	c := benchConfig{phase: 60 * time.Second, rounds: 6, settings: []string{settingUnprotected, settingDefaults, settingSuppress},
		service: "fixed", ops: benchOps, seed: uint64(time.Now().UnixNano()), memory: os.Getenv("GLEANER_BENCH_MEMORY") != "0",
		schedWait: os.Getenv("GLEANER_BENCH_SCHEDWAIT") == "1"}
	if s := os.Getenv("GLEANER_BENCH_PHASE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 2*benchWindow {
			b.Fatalf("GLEANER_BENCH_PHASE=%q: want a duration of at least %s", s, 2*benchWindow)
		}
		c.phase = d
	}
	if n, ok := benchEnvInt(b, "GLEANER_BENCH_ROUNDS", 1, "a positive number"); ok {
		c.rounds = n
	}
	if s := os.Getenv("GLEANER_BENCH_SETTINGS"); s != "" {
		c.settings = strings.Split(s, ",")
	}
	sizes := "1/3,2/3,1"
	if s := os.Getenv("GLEANER_BENCH_SIZES"); s != "" {
		sizes = s
	}
	for _, label := range strings.Split(sizes, ",") {
		frac, err := parseFraction(label)
		if err != nil || frac <= 0 || frac > 1 {
			b.Fatalf("GLEANER_BENCH_SIZES=%q: %q is not a share of the published batch-cpu above 0 and at most 1 (batch pods ask for batch-cpu, which the scheduler never gives past what is published)", sizes, label)
		}
		c.sizes = append(c.sizes, benchSize{label: label, frac: frac})
	}
	if s := os.Getenv("GLEANER_BENCH_SERVICE"); s != "" {
		if s != "fixed" && s != "spin" {
			b.Fatalf("GLEANER_BENCH_SERVICE=%q: want fixed or spin", s)
		}
		c.service = s
	}
	if n, ok := benchEnvInt(b, "GLEANER_BENCH_OPS", 0, "the service's operations per request, or 0 to calibrate them"); ok {
		c.ops = n
	}
	if s := os.Getenv("GLEANER_BENCH_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			b.Fatalf("GLEANER_BENCH_SEED=%q: want a number", s)
		}
		c.seed = n
	}
	return c
}

// benchEnvInt reads the environment variable name as a whole number of at least least (want says what it is for the
// error), and whether it is set.
func benchEnvInt(b *testing.B, name string, least int, want string) (int, bool) {
	s := os.Getenv(name)
	if s == "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < least {
		b.Fatalf("%s=%q: want %s", name, s, want)
	}
	return n, true
}

// parseFraction reads "2/3" or "0.5".
func parseFraction(s string) (float64, error) {
	num, den, ok := strings.Cut(strings.TrimSpace(s), "/")
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || !ok {
		return n, err
	}
	d, err := strconv.ParseFloat(den, 64)
	if err != nil || d == 0 {
		return 0, fmt.Errorf("%q: not a fraction", s)
	}
	return n / d, nil
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

// startBenchService runs the service: a prod pod asking for a core, whose load comes from the benchmark only, doing
// work of kind (fixed, ops operations or calibrated when 0; or spin) per request.
func startBenchService(e *Env, ns, kind string, ops int) *corev1.Pod {
	pod := testutil.Pod(benchServiceApp).Label("app", benchServiceApp).Label("gleaner.sh/qos-class", "LS").
		PriorityClass("gleaner-prod").Container("service").
		Image(LSServiceImage, "--listen=:8080", "--qps=0", "--report=0", "--kind="+kind, "--work="+benchWork, "--set="+benchSet,
			fmt.Sprintf("--ops=%d", ops)).
		Requests("cpu", "1", "memory", "128Mi").Limits("cpu", "2", "memory", "256Mi").Obj()
	pod = e.RunPodIn(ns, pod)
	e.t.Logf("the service: %s", strings.TrimSpace(e.Kubectl("-n", ns, "logs", pod.Name)))
	return pod
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
// thrasher that each try to use every CPU they may run on (all of the node's, or the static split's one; their
// requests are set by sizeMix) and count their work (GET /work on benchBurnerPort), and a disk writer.
func batchMix(cpus int) []batchWork {
	load, listen := "--load=all", fmt.Sprintf("--listen=:%d", benchBurnerPort)
	return []batchWork{
		{name: "bench-burner", image: BurnerImage, args: []string{load, "--report=0", listen}, memory: "64Mi"},
		{name: "bench-thrasher", image: BurnerImage, args: []string{load, "--report=0", "--thrash=64Mi", listen},
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
		NonRoot(&dep.Spec.Template.Spec)
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

// The settings a benchmark run compares (GLEANER_BENCH_SETTINGS).
const (
	// settingUnprotected: Gleaner publishes batch resources, its node protection off by configuration: the agent's
	// runtime hook off (no CFS quota from batch-cpu), class BE's cpuQOS off (cpu.idle 0), the installed thresholds.
	settingUnprotected = "unprotected"
	// settingDefaults: Gleaner as installed.
	settingDefaults = "defaults"
	// settingSuppress: as installed, with CPU suppression on (resource-threshold-config's clusterStrategy enabled
	// with its defaults, or GLEANER_BENCH_THRESHOLD).
	settingSuppress = "suppress"
	// settingStatic is the physical reference: unprotected, and the CPUs split by hand, the besteffort QoS cgroup
	// (every batch pod) on the last CPU, the service's pod and the load generator on the others (splitCPUs).
	settingStatic = "static"
)

// benchSetting is one way Gleaner runs on the node: the agent's runtime hook as installed or off, and
// slo-controller-config's keys ("" for no such key), with the besteffort QoS cgroup's cpu.idle they lead to.
type benchSetting struct {
	name string
	hook bool
	keys map[string]string
	idle string
	// split puts the batch pods and the service on CPUs of their own (splitCPUs).
	split bool
}

// benchSettingsOf is the named settings, in order, and Gleaner's defaults. The installed keys are put back when the
// benchmark ends.
func benchSettingsOf(b *testing.B, e *Env, names []string) (named []benchSetting, defaults benchSetting) {
	e.t.Helper()
	cm, err := e.Clientset.CoreV1().ConfigMaps(GleanerNamespace).Get(e.Ctx, SLOConfigName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	installed := map[string]string{resourceQOSKey: cm.Data[resourceQOSKey], resourceThresholdKey: cm.Data[resourceThresholdKey]}
	e.t.Cleanup(func() { writeSLOKeys(e, installed, false) }) // the test's context has ended: nothing to wait with
	threshold := `{"clusterStrategy":{"enable":true}}`
	if t := os.Getenv("GLEANER_BENCH_THRESHOLD"); t != "" {
		threshold = t
	}
	unprotected := map[string]string{resourceThresholdKey: installed[resourceThresholdKey],
		resourceQOSKey: `{"clusterStrategy":{"beClass":{"cpuQOS":{"enable":false,"groupIdentity":0}}}}`}
	all := map[string]benchSetting{
		settingUnprotected: {hook: false, idle: "0", keys: unprotected},
		settingStatic:      {hook: false, idle: "0", keys: unprotected, split: true},
		settingDefaults:    {hook: true, idle: "1", keys: installed},
		settingSuppress:    {hook: true, idle: "1", keys: map[string]string{resourceQOSKey: installed[resourceQOSKey], resourceThresholdKey: threshold}},
	}
	for name, s := range all {
		s.name = name
		all[name] = s
	}
	for _, n := range names {
		s, ok := all[strings.TrimSpace(n)]
		if !ok {
			b.Fatalf("GLEANER_BENCH_SETTINGS: %q is not one of %s, %s, %s, %s", n, settingUnprotected, settingDefaults, settingSuppress, settingStatic)
		}
		named = append(named, s)
	}
	return named, all[settingDefaults]
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

// apply runs Gleaner's node side as s says, coming from the setting r.current (nil: unknown): the agent's
// --runtime-hook (off, or as installed; a change rolls the agent), slo-controller-config's keys and the split of the
// CPUs. It waits until the agent runs with the hook's mode and the besteffort QoS cgroup's cpu.idle is what s leads
// to.
func (r *benchRun) apply(s benchSetting) {
	e, current := r.e, r.current
	e.t.Helper()
	r.current = &s
	if current != nil && current.split && !s.split {
		r.splitCPUs(false)
	}
	const off = "--runtime-hook=off"
	if current == nil || current.hook != s.hook {
		ds, err := e.Clientset.AppsV1().DaemonSets(GleanerNamespace).Get(e.Ctx, "gleaner-agent", metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		c := &ds.Spec.Template.Spec.Containers[0]
		args := slices.DeleteFunc(slices.Clone(c.Args), func(a string) bool { return a == off })
		if !s.hook {
			args = append(args, off) // the last --runtime-hook wins
		}
		if !slices.Equal(args, c.Args) {
			c.Args = args
			if _, err := e.Clientset.AppsV1().DaemonSets(GleanerNamespace).Update(e.Ctx, ds, metav1.UpdateOptions{}); err != nil {
				e.t.Fatalf("changing the agent's --runtime-hook: %v", err)
			}
			e.Kubectl("-n", GleanerNamespace, "rollout", "status", "daemonset/gleaner-agent", "--timeout=3m")
		}
	}
	writeSLOKeys(e, s.keys, true)
	mode := runtimehook.ModeNRI
	if !s.hook {
		mode = runtimehook.ModeOff
	}
	waitForHookMode(e, mode)
	e.Eventually(2*time.Minute, func(context.Context) (bool, string) {
		b, err := os.ReadFile(besteffortCPU + "/cpu.idle")
		if err != nil {
			return false, err.Error()
		}
		got := strings.TrimSpace(string(b))
		return got == s.idle, fmt.Sprintf("besteffort cpu.idle %s, want %s (setting %s)", got, s.idle, s.name)
	})
	if s.split && (current == nil || !current.split) {
		r.splitCPUs(true)
	}
}

// The cpuset cgroups of the batch pods (the besteffort QoS cgroup) and of the Burstable pods (the service's).
const (
	besteffortCPUSet = "/sys/fs/cgroup/cpuset/kubepods/besteffort"
	burstableCPUSet  = "/sys/fs/cgroup/cpuset/kubepods/burstable"
)

// splitCPUs puts the besteffort QoS cgroup (and the cgroups under it) on the node's last CPU and the service's pod
// cgroup and the load generator's threads on the others, or (on false) every one of them back on all CPUs. Gleaner's
// agent leaves the cpusets alone while CPU suppression is off, which splitCPUs checks after a few seconds.
func (r *benchRun) splitCPUs(on bool) {
	r.b.Helper()
	n := r.report.CPUs
	all, others, last := fmt.Sprintf("0-%d", n-1), fmt.Sprintf("0-%d", n-2), strconv.Itoa(n-1)
	if n == 2 {
		others = "0"
	}
	service := filepath.Join(burstableCPUSet, "pod"+string(r.service.UID))
	be, svc, gen := last, others, others
	if !on {
		be, svc, gen = all, all, all
	}
	for dir, cpus := range map[string]string{besteffortCPUSet: be, service: svc} {
		if err := writeCPUSet(dir, cpus, on); err != nil {
			r.b.Fatal(err)
		}
	}
	if err := pinThreads(gen, n); err != nil {
		r.b.Fatal(err)
	}
	if !on {
		return
	}
	time.Sleep(3 * time.Second)
	for dir, cpus := range map[string]string{besteffortCPUSet: be, service: svc} {
		b, err := os.ReadFile(filepath.Join(dir, "cpuset.cpus"))
		if err != nil || strings.TrimSpace(string(b)) != cpus {
			r.b.Fatalf("%s/cpuset.cpus is %q (%v) 3 s after the split, want %s: something else writes it", dir, strings.TrimSpace(string(b)), err, cpus)
		}
	}
}

// writeCPUSet writes cpus to the cpuset.cpus of dir and every cgroup under it: on cgroup v1 a cgroup's CPUs must be
// within its parent's, so a shrink writes the deepest first and a growth the parent first.
func writeCPUSet(dir, cpus string, shrink bool) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("listing the cgroups under %s: %w", dir, err)
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(a, "/") - strings.Count(b, "/") })
	if shrink {
		slices.Reverse(dirs)
	}
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "cpuset.cpus"), []byte(cpus), 0o644); err != nil {
			return fmt.Errorf("writing %s to %s/cpuset.cpus: %w", cpus, d, err)
		}
	}
	return nil
}

// pinThreads sets the CPU affinity of every thread of this process (the load generator's) to cpus, a range "a-b" or
// one CPU, of a node of n CPUs; threads made later inherit it.
func pinThreads(cpus string, n int) error {
	var set unix.CPUSet
	lo, hi, found := strings.Cut(cpus, "-")
	a, _ := strconv.Atoi(lo)
	b := a
	if found {
		b, _ = strconv.Atoi(hi)
	}
	for c := a; c <= b && c < n; c++ {
		set.Set(c)
	}
	tids, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tids {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("pinning thread %d to CPUs %s: %w", tid, cpus, err)
		}
	}
	return nil
}

// benchRun collects a run's phases, their samples and the timeline.
type benchRun struct {
	e       *Env
	b       *testing.B
	gen     colocation.Generator
	pool    *colocation.Pool
	batchNS string
	service *corev1.Pod
	seed    uint64
	// current is the setting the node runs (apply).
	current *benchSetting
	reader  colocation.Reader
	report  colocation.Report
	// samples are each phase's requests, by index in report.Phases.
	samples [][]colocation.Sample
	// unitsPerCPU is each burner's work units per CPU-second with the batch work alone (calibrate), by work name.
	unitsPerCPU map[string]float64
	// schedWait is the scheduler tracer's binary, "" for no trace.
	schedWait string
}

// benchPhase is one phase's workload.
type benchPhase struct {
	name  string
	round int
	// setting and size say what a batch phase ran: the setting's name and the share of the published batch-cpu.
	setting string
	size    float64
	// batch starts the batch work before the phase settles and returns its stop (nil: no batch work of its own).
	batch func() func()
	// during starts beside the load generator when the measurement starts and returns its stop (nil: nothing).
	during func() func()
}

// calibrate runs the batch work for d with the service idle and records each burner's units of work per CPU-second
// it used: the rate that normalises a phase's batch work to cores of batch work as if alone.
func (r *benchRun) calibrate(batch func() func(), d time.Duration, burners int) {
	r.b.Helper()
	if r.current != nil && r.current.split { // alone means on every CPU, as for the service's alone phases
		r.splitCPUs(false)
		defer r.splitCPUs(true)
	}
	stop := batch()
	defer stop()
	time.Sleep(benchSettle)
	before := r.burnerWork()
	time.Sleep(d)
	after := r.burnerWork()
	r.unitsPerCPU = map[string]float64{}
	for name, w := range after {
		w0, ok := before[name]
		if !ok || w0.uid != w.uid || w.CPUSeconds <= w0.CPUSeconds {
			r.b.Fatalf("calibrating the batch work: %s's counters did not move (%+v, %+v)", name, w0, w)
		}
		r.unitsPerCPU[name] = float64(w.Units-w0.Units) / (w.CPUSeconds - w0.CPUSeconds)
		r.b.Logf("batch alone: %s did %.0f units per CPU-second, on %.2f cores", name, r.unitsPerCPU[name],
			(w.CPUSeconds-w0.CPUSeconds)/w.at.Sub(w0.at).Seconds())
	}
	if len(r.unitsPerCPU) != burners { // else every phase's batch work would read 0
		r.b.Fatalf("calibrating the batch work: %d of the mix's %d burners answered GET /work (the log above says why)", len(r.unitsPerCPU), burners)
	}
}

// countBurners is how many works of mix count their work (GET /work).
func countBurners(mix []batchWork) int {
	n := 0
	for _, w := range mix {
		if countsWork(w.args) {
			n++
		}
	}
	return n
}

// countsWork says whether a batch container of these arguments answers GET /work on benchBurnerPort.
func countsWork(args []string) bool {
	return slices.Contains(args, fmt.Sprintf("--listen=:%d", benchBurnerPort))
}

// burnerWork is what each running burner of the batch mix has done so far (GET /work), by work name.
func (r *benchRun) burnerWork() map[string]burnerCount {
	pods, err := r.e.Clientset.CoreV1().Pods(r.batchNS).List(r.e.Ctx, metav1.ListOptions{LabelSelector: "app=" + benchBatchApp})
	if err != nil {
		r.b.Fatal(err)
	}
	client := &http.Client{Timeout: 2 * time.Second}
	out := map[string]burnerCount{}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || p.Status.PodIP == "" ||
			!countsWork(p.Spec.Containers[0].Args) {
			continue
		}
		resp, err := client.Get(fmt.Sprintf("http://%s:%d/work", p.Status.PodIP, benchBurnerPort))
		if err != nil {
			r.b.Logf("reading %s's work: %v", p.Name, err)
			continue
		}
		c := burnerCount{uid: string(p.UID), at: time.Now()}
		err = json.NewDecoder(resp.Body).Decode(&c)
		_ = resp.Body.Close()
		if err != nil {
			r.b.Logf("reading %s's work: %v", p.Name, err)
			continue
		}
		out[p.Labels["work"]] = c
	}
	return out
}

// burnerCount is a burner's answer to GET /work, from pod uid at a moment.
type burnerCount struct {
	uid        string
	at         time.Time
	Units      uint64  `json:"units"`
	CPUSeconds float64 `json:"cpuSeconds"`
}

// batchWork is the batch work done between two burnerWork reads, in cores of batch work as if alone: each burner's
// units per second over its units per CPU-second alone. A burner replaced between the reads counts nothing.
func (r *benchRun) batchWorkDone(before, after map[string]burnerCount) float64 {
	cores := 0.0
	for name, w := range after {
		w0, ok := before[name]
		rate := r.unitsPerCPU[name]
		if !ok || w0.uid != w.uid || rate <= 0 || !w.at.After(w0.at) {
			continue
		}
		cores += float64(w.Units-w0.Units) / w.at.Sub(w0.at).Seconds() / rate
	}
	return cores
}

// phase runs one phase: start its batch work, let it settle, measure for d (starting what runs during it), stop
// both.
func (r *benchRun) phase(ph benchPhase, d time.Duration) {
	r.b.Helper()
	if ph.batch != nil {
		stop := ph.batch()
		defer stop()
	}
	time.Sleep(benchSettle)
	gen := r.gen
	gen.Seed = r.seed + uint64(len(r.report.Phases)) // arrivals of their own for every phase, repeatable from the seed
	actions, work, dials := agentActions(r.e), r.burnerWork(), r.pool.Dials()
	wait, err := colocation.RunDelay("/proc/self/task")
	if err != nil {
		r.b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(r.e.Ctx)
	var wg sync.WaitGroup
	var points []colocation.Point
	var gone map[string]int
	first, err := r.reader.Read()
	if err != nil {
		r.b.Fatal(err)
	}
	wg.Go(func() { points, gone = r.timeline(ctx, first) })
	var stopDuring func()
	if ph.during != nil {
		wg.Go(func() { stopDuring = ph.during() })
	}
	traced := r.startSchedWait(d)
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
	waitAfter, err := colocation.RunDelay("/proc/self/task")
	if err != nil {
		r.b.Fatal(err)
	}
	use := colocation.Between(first, last)
	p := colocation.Phase{Name: ph.name, Setting: ph.setting, Size: ph.size, Round: ph.round, Start: first.At, End: last.At,
		Latency: colocation.Summarize(samples), CPU: use, BatchCoresDone: use.Classes["batch"] * float64(r.report.CPUs),
		BatchWork: r.batchWorkDone(work, r.burnerWork()), Actions: diffActions(actions, agentActions(r.e)),
		Dials: r.pool.Dials() - dials, BatchPodsGone: gone, SchedWait: traced()}
	if len(samples) > 0 {
		p.GeneratorWaitMs = float64(waitAfter-wait) / float64(time.Millisecond) / float64(len(samples))
	}
	r.b.Logf("%s (round %d): p50 %.2fms p99 %.2fms p99.9 %.2fms, %d errors; node %.0f%%, batch %.0f%%, service %.1f%%; batch work %.2f cores; generator wait %.3fms a request, %d dials",
		ph.name, ph.round, p.Latency.P50, p.Latency.P99, p.Latency.P999, p.Latency.Errors, 100*use.Node, 100*use.Classes["batch"],
		100*use.Classes["service"], p.BatchWork, p.GeneratorWaitMs, p.Dials)
	r.report.Phases = append(r.report.Phases, p)
	r.report.Points = append(r.report.Points, points...)
	r.samples = append(r.samples, samples)
}

// benchHostCgroup is the cpu cgroup GLEANER_BENCH_HOST_SHARES puts the host's processes in.
const benchHostCgroup = "/sys/fs/cgroup/cpu/gleaner-bench-host"

// hostShares moves every process of the root cpu cgroup but this one (the load generator) and kernel threads (which
// stay) into benchHostCgroup at shares cpu.shares: the experiment that separates the host's processes' part of the
// service's wait (run 14 in docs/benchmarks.md) from the rest. What it returns moves them back.
func hostShares(b *testing.B, shares int) func() {
	if err := os.Mkdir(benchHostCgroup, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		b.Fatalf("making the host's cgroup: %v", err)
	}
	if err := os.WriteFile(filepath.Join(benchHostCgroup, "cpu.shares"), []byte(strconv.Itoa(shares)), 0); err != nil {
		b.Fatalf("the host's cgroup at %d shares: %v", shares, err)
	}
	moved := moveProcs(filepath.Dir(benchHostCgroup), benchHostCgroup, os.Getpid())
	b.Logf("the host's %d processes in %s at cpu.shares %d (kubepods: %s)", moved, benchHostCgroup, shares,
		readTrimmed(filepath.Join(filepath.Dir(benchHostCgroup), "kubepods", "cpu.shares")))
	return func() {
		moveProcs(benchHostCgroup, filepath.Dir(benchHostCgroup), 0)
		if err := os.Remove(benchHostCgroup); err != nil {
			b.Errorf("removing the host's cgroup (its processes back at the root): %v", err)
		}
	}
}

// moveProcs writes every process of the cgroup from into the cgroup to but skip, and counts those that moved; a
// kernel thread refuses and stays.
func moveProcs(from, to string, skip int) int {
	moved := 0
	for f := range strings.FieldsSeq(readTrimmed(filepath.Join(from, "cgroup.procs"))) {
		if pid, _ := strconv.Atoi(f); pid == skip {
			continue
		}
		if os.WriteFile(filepath.Join(to, "cgroup.procs"), []byte(f), 0) == nil {
			moved++
		}
	}
	return moved
}

// startSchedWait starts hack/bench/schedwait on the service pod's threads for d, at SCHED_OTHER (a child of this
// process's SCHED_RR threads would inherit their policy and run ahead of the service), and returns what waits for
// its answer and logs it; that returns nil without a tracer.
func (r *benchRun) startSchedWait(d time.Duration) func() *colocation.SchedWaitResult {
	if r.schedWait == "" {
		return func() *colocation.SchedWaitResult { return nil }
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command("chrt", "--other", "0", r.schedWait, "--pod-cgroup", "/kubepods/burstable/pod"+string(r.service.UID),
		"--generator-pid", strconv.Itoa(os.Getpid()), "--duration", d.String())
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		r.b.Fatalf("starting the scheduler trace: %v", err)
	}
	return func() *colocation.SchedWaitResult {
		if err := cmd.Wait(); err != nil {
			r.b.Fatalf("the scheduler trace: %v\n%s", err, errOut.String())
		}
		var res colocation.SchedWaitResult
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			r.b.Fatalf("the scheduler trace's answer %q: %v", out.String(), err)
		}
		r.b.Logf("scheduler trace: the service's %d threads waited %.0f ms for a CPU (their schedstat: %.0f), by what ran: %v; %d switches, %d events lost, the tracer %.1f %% of a core",
			res.WatchedThreads, res.TotalMs(), res.RunDelayMs, res.WaitedMs, res.Switches, res.Lost, 100*res.OwnCPUMs/res.DurationMs)
		return &res
	}
}

// timeline reads the CPU counters and the batch class's limit every second until ctx ends, and follows the batch
// pods: it returns, by work, how many of its pods went away while it ran (evicted, as nothing else deletes them).
func (r *benchRun) timeline(ctx context.Context, prev colocation.Snapshot) ([]colocation.Point, map[string]int) {
	var points []colocation.Point
	seen := map[string]string{} // pod UID -> work
	var present map[string]bool
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			gone := map[string]int{}
			for uid, work := range seen {
				if !present[uid] {
					gone[work]++
				}
			}
			return points, gone
		case <-t.C:
		}
		if pods, err := r.e.Clientset.CoreV1().Pods(r.batchNS).List(ctx, metav1.ListOptions{LabelSelector: "app=" + benchBatchApp}); err == nil {
			present = map[string]bool{}
			for _, p := range pods.Items {
				if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
					seen[string(p.UID)], present[string(p.UID)] = p.Labels["work"], true
				}
			}
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
	all := slices.Concat(r.samples...)
	for i := range rep.Points {
		at := rep.Points[i].At
		var in []colocation.Sample
		for _, s := range all {
			if s.Due.After(at.Add(-benchWindow)) && !s.Due.After(at) {
				in = append(in, s)
			}
		}
		rep.Points[i].P99 = colocation.Summarize(in).P99
	}
	rep.Summarise("service", "batch")
	frontier := r.frontier()
	files := map[string]func(*os.File) error{
		"colocation.json": func(f *os.File) error { return rep.WriteJSON(f) },
		"colocation.svg":  func(f *os.File) error { return rep.WriteSVG(f, "service", "batch") },
		"colocation.md":   func(f *os.File) error { return rep.WriteTable(f) },
		"frontier.json": func(f *os.File) error {
			enc := json.NewEncoder(f)
			enc.SetIndent("", "  ")
			return enc.Encode(frontier)
		},
		"frontier.md":  func(f *os.File) error { return frontier.WriteTable(f) },
		"frontier.svg": func(f *os.File) error { return frontier.WriteSVG(f) },
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
	var table, front strings.Builder
	_ = rep.WriteTable(&table)
	_ = frontier.WriteTable(&front)
	r.b.Logf("colocation benchmark, %d CPUs, %d requests/s; written to %s:\n%s\n%s", rep.CPUs, benchRate, dir, table.String(), front.String())
}

// frontier is the run's curves: for each setting (in the order first run), a point per batch size, each from the
// rounds' pairs of that setting's phase and the alone phase last run before it (the one just before its setting's
// phases in that round: the service alone drifts between rounds, and within one by a few minutes' distance).
func (r *benchRun) frontier() colocation.Frontier {
	boot := colocation.DefaultBootstrap()
	boot.Seed = r.seed
	f := colocation.Frontier{SLO: colocation.DefaultSLO(), Bootstrap: boot}
	alone := colocation.AlonePairs(r.report.Phases)
	var settings []string
	sizes := map[string][]float64{}
	for _, p := range r.report.Phases {
		if p.Setting != "" {
			if !slices.Contains(settings, p.Setting) {
				settings = append(settings, p.Setting)
			}
			if !slices.Contains(sizes[p.Setting], p.Size) {
				sizes[p.Setting] = append(sizes[p.Setting], p.Size)
			}
		}
	}
	for _, setting := range settings {
		c := colocation.Curve{Setting: setting}
		slices.Sort(sizes[setting])
		for _, size := range sizes[setting] {
			var rounds []colocation.Round
			for i, p := range r.report.Phases {
				a, ok := alone[i]
				if p.Setting != setting || p.Size != size || !ok {
					continue
				}
				// BatchWork is already in cores of work as if alone (per burner, batchWorkDone): a scale of one.
				rounds = append(rounds, colocation.Round{Alone: r.samples[a], Setting: r.samples[i], BatchUnitsPerSecond: p.BatchWork, NodeBusy: p.CPU.Node})
			}
			pt, err := colocation.NewCurvePoint(size, rounds, colocation.WorkScale{UnitsPerCoreSecond: 1}, boot)
			if err != nil {
				r.b.Logf("%s at %.2f of the published batch-cpu: %v", setting, size, err)
			}
			c.Points = append(c.Points, pt)
		}
		f.Curves = append(f.Curves, c)
	}
	return f
}
