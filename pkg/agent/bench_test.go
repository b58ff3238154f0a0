package agent

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// BenchmarkAgentHeap10SimulatedMinutes runs the whole agent in this process (states informer on a real API server
// holding 200 running pods of two containers each, every default collector, the metric cache, the reporter
// writing NodeMetric status every 60 s) for 10 simulated minutes on a simulated host, in lockstep with a fake
// clock, and reports heap-MiB (live heap after a GC), the metric cache's series and bytes, and this process's
// rss-MiB next to base-rss-MiB (the same process before the agent started: the test harness and its API client).
// BenchmarkAgentProcessRSS measures the agent's own process. GLEANER_BENCH_DURATION shortens the run.
//
//	go test -run '^$' -bench BenchmarkAgentHeap10SimulatedMinutes -benchtime=1x ./pkg/agent/
func BenchmarkAgentHeap10SimulatedMinutes(b *testing.B) {
	seconds := 600
	if d, err := time.ParseDuration(os.Getenv("GLEANER_BENCH_DURATION")); err == nil {
		seconds = int(d.Seconds())
	}
	for b.Loop() {
		benchHeap(b, 200, seconds)
	}
}

func benchHeap(b *testing.B, pods, seconds int) {
	e := env.Start(b)
	ctx := context.Background()
	node, host := benchNode(b, e, pods)
	base := rssMiB(b)

	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	o := NewOptions()
	o.NodeName, o.ProcRoot, o.SysRoot, o.CgroupRoot = node, host.ProcRoot(), host.SysRoot(), host.CgroupRoot()
	o.SysctlRoot, o.StateDir = filepath.Join(host.ProcRoot(), "sys"), b.TempDir()
	o.MetricsAddr, o.HealthAddr = "0", freeAddr(b)
	a, done := startAgent(b, e.Config, o, clk)
	for range seconds {
		stepSecond(b, done, a, host, clk)
	}
	nm := &slov1alpha1.NodeMetric{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: node}, nm); seconds >= 300 && (err != nil || len(nm.Status.PodUsages) != pods) {
		b.Fatalf("after %d s the NodeMetric lists %d pods (%v), want %d", seconds, len(nm.Status.PodUsages), err, pods)
	}
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	stats := a.Cache.Stats()
	b.ReportMetric(rssMiB(b), "rss-MiB")
	b.ReportMetric(base, "base-rss-MiB")
	b.ReportMetric(float64(m.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(stats.Series), "cache-series")
	b.ReportMetric(float64(stats.Bytes)/(1<<20), "cache-MiB")
}

// benchNode creates a node with a NodeSLO (one host application; CPU suppression by quota and memory and CPU
// eviction on, so the QoS plugins do their work every round), a NodeMetric with the default policy, and pods running
// pods of two containers each through the API server, and a simulated host running them. GLEANER_BENCH_QOS=off
// leaves the QoS strategies off, as before they existed.
func benchNode(b *testing.B, e *testenv.Env, pods int) (string, *hostsim.Host) {
	ctx := context.Background()
	node := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	host, err := hostsim.New(b.TempDir(), hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs, CPUs: 32, MemTotal: 256 << 30})
	if err != nil {
		b.Fatal(err)
	}
	app := slov1alpha1.HostApplicationSpec{Name: "nginx", QoS: slov1alpha1.QoSLS}
	spec := slov1alpha1.NodeSLOSpec{HostApplications: []slov1alpha1.HostApplicationSpec{app}}
	if os.Getenv("GLEANER_BENCH_QOS") != "off" {
		// Thresholds the simulated node never crosses: the plugins measure and decide every run, nothing is evicted.
		spec.ResourceUsedThresholdWithBE = &slov1alpha1.ResourceThresholdStrategy{
			Enable: ptr.To(true), CPUSuppressPolicy: slov1alpha1.CPUSuppressCFSQuota, CPUSuppressThresholdPercent: ptr.To[int64](65),
			MemoryEvictThresholdPercent: ptr.To[int64](90), CPUEvictBESatisfactionLowerPercent: ptr.To[int64](10),
			CPUEvictBESatisfactionUpperPercent: ptr.To[int64](20),
		}
	}
	create(b, e.Client,
		testutil.Node(node).Obj(),
		&slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: spec},
		&slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: node}},
	)
	if err := host.AddHostApp(app.Name, path.Join(host.Layout().Parent, "host-latency-sensitive", app.Name), hostsim.Usage{CPU: 0.5, Memory: 1 << 30}); err != nil {
		b.Fatal(err)
	}
	for i := range pods {
		name := fmt.Sprintf("p%03d-%s", i, node)
		p := testutil.Pod(name).Node(node).Label(slov1alpha1.LabelQoSClass, "LS").
			Container("app").Requests("cpu", "500m", "memory", "512Mi").Container("sidecar").Requests("cpu", "50m").Obj()
		create(b, e.Client, p)
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{
			{Name: "app", ContainerID: "containerd://app" + name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			{Name: "sidecar", ContainerID: "containerd://side" + name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		}
		if err := e.Client.Status().Update(ctx, p); err != nil {
			b.Fatal(err)
		}
		if err := host.AddPod(p, hostsim.Usage{CPU: 0.1, Memory: 200 << 20, PageCache: 50 << 20, Throttled: 0.05}); err != nil {
			b.Fatal(err)
		}
	}
	return node, host
}

// rssMiB is the process's resident memory (VmRSS) after a GC.
func rssMiB(b *testing.B) float64 {
	runtime.GC()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// BenchmarkAgentProcessRSS builds and starts the gleaner-agent binary against a real API server holding 200
// running pods of two containers each (NodeMetric with the default policy: 300 s window, report every 60 s) and a
// simulated host whose counters advance in real time, lets it collect for 10 minutes (GLEANER_BENCH_DURATION
// overrides, e.g. 1m for a quick look), and reports the agent process's rss-MiB (VmRSS at the end), hwm-MiB (its
// peak), anon-MiB and file-MiB (the anonymous and file-backed parts of rss: heap versus the binary's pages) and
// cpu-percent (its average CPU, of one core, over the run). It then stops the agent with SIGTERM, which
// must exit cleanly. The binary runs with the DaemonSet's environment (GOGC=25).
//
//	go test -run '^$' -bench BenchmarkAgentProcessRSS -benchtime=1x -timeout 20m ./pkg/agent/
func BenchmarkAgentProcessRSS(b *testing.B) {
	duration := 10 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("GLEANER_BENCH_DURATION")); err == nil {
		duration = d
	}
	for b.Loop() {
		benchProcess(b, 200, duration)
	}
}

func benchProcess(b *testing.B, pods int, duration time.Duration) {
	e := env.Start(b)
	dir := b.TempDir()
	bin := filepath.Join(dir, "gleaner-agent")
	// Built as the image is: static, without cgo (no libc mapped into the process).
	build := exec.Command("go", "build", "-o", bin, "github.com/gleaner-sh/gleaner/cmd/gleaner-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building gleaner-agent: %v\n%s", err, out)
	}
	node, host := benchNode(b, e, pods)
	health, metricsAddr := freeAddr(b), freeAddr(b)
	log, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = log.Close() }()
	cmd := exec.Command(bin, "--kubeconfig", e.Kubeconfig, "--node-name", node,
		"--proc-root", host.ProcRoot(), "--sys-root", host.SysRoot(), "--cgroup-root", host.CgroupRoot(),
		"--sysctl-root", filepath.Join(host.ProcRoot(), "sys"), "--state-dir", filepath.Join(dir, "state"),
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", health,
		// The runtime hook as deployed, retrying a socket that is not there: never the node's real containerd.
		"--nri-socket", filepath.Join(dir, "nri.sock"))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), daemonSetEnv(b)...)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill() }()

	ctx, stop := context.WithCancel(context.Background())
	simDone := make(chan struct{})
	go func() {
		defer close(simDone)
		last := time.Now()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if err := host.Advance(now.Sub(last)); err != nil {
					b.Errorf("advancing the simulated host: %v", err)
					return
				}
				last = now
			}
		}
	}()
	defer func() { stop(); <-simDone }()

	waitHTTP(b, exited, "http://"+health+"/readyz", "ok")
	cpuStart, start := procCPU(b, cmd.Process.Pid), time.Now()
	time.Sleep(duration)
	cpu := procCPU(b, cmd.Process.Pid) - cpuStart
	elapsed := time.Since(start)
	rss, hwm, anon, file := procMemMiB(b, cmd.Process.Pid)

	nm := &slov1alpha1.NodeMetric{}
	if err := e.Client.Get(context.Background(), client.ObjectKey{Name: node}, nm); err != nil {
		b.Fatal(err)
	}
	if duration >= 5*time.Minute && len(nm.Status.PodUsages) != pods {
		b.Errorf("after %s the NodeMetric lists %d pods, want %d", duration, len(nm.Status.PodUsages), pods)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			b.Errorf("the agent did not exit cleanly on SIGTERM: %v (log: %s)", err, log.Name())
		}
	case <-time.After(30 * time.Second):
		b.Error("the agent did not stop within 30s of SIGTERM")
	}
	b.ReportMetric(rss, "rss-MiB")
	b.ReportMetric(hwm, "hwm-MiB")
	b.ReportMetric(anon, "anon-MiB")
	b.ReportMetric(file, "file-MiB")
	b.ReportMetric(100*cpu.Seconds()/elapsed.Seconds(), "cpu-percent")
	b.ReportMetric(float64(len(nm.Status.PodUsages)), "pods-reported")
}

// procMemMiB returns VmRSS, VmHWM, RssAnon and RssFile of a process.
func procMemMiB(b *testing.B, pid int) (rss, hwm, anon, file float64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		switch k {
		case "VmRSS":
			rss = kb / 1024
		case "VmHWM":
			hwm = kb / 1024
		case "RssAnon":
			anon = kb / 1024
		case "RssFile":
			file = kb / 1024
		}
	}
	return rss, hwm, anon, file
}

// procCPU is a process's user + system CPU time, from /proc/<pid>/stat (in clock ticks of 1/100 s).
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name (which may hold spaces) start after the last ')'.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
