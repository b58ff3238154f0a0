package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/collector"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/runtimehook"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/version"
	"github.com/gleaner-sh/gleaner/test/hostsim"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, env, scopedEnv)) }

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr []string
	}{
		{name: "defaults with a node name", mutate: func(*Options) {}},
		{name: "no node name", mutate: func(o *Options) { o.NodeName = "" }, wantErr: []string{"--node-name"}},
		{name: "bad driver", mutate: func(o *Options) { o.CgroupDriver = "runc" }, wantErr: []string{"--cgroup-driver"}},
		{name: "unknown collector", mutate: func(o *Options) { o.Collectors = []string{"*", "-fpga"} }, wantErr: []string{`--collectors: unknown name "fpga"`}},
		{name: "bad interval", mutate: func(o *Options) { o.CollectorIntervals = map[string]time.Duration{"psi": 0} }, wantErr: []string{"psi must be positive"}},
		{name: "bad pod source", mutate: func(o *Options) { o.PodSource = "etcd" }, wantErr: []string{"--pod-source"}},
		{name: "no time for the uninstall", mutate: func(o *Options) { o.Uninstall.Timeout = 0 }, wantErr: []string{"--uninstall-timeout must be positive"}},
		{name: "no sysctl root or state dir", mutate: func(o *Options) { o.SysctlRoot, o.StateDir = "", "" }, wantErr: []string{"--sysctl-root", "--state-dir"}},
		{name: "kubelet without url", mutate: func(o *Options) { o.PodSource, o.Kubelet.URL = PodSourceKubelet, "" }, wantErr: []string{"--kubelet-url"}},
		{name: "plain HTTP metrics only on loopback", mutate: func(o *Options) { o.Serving.SecureMetrics = false }, wantErr: []string{"--metrics-secure=false"}},
		{name: "plain HTTP metrics on 127.0.0.1", mutate: func(o *Options) { o.Serving.SecureMetrics, o.MetricsAddr = false, "127.0.0.1:10282" }},
		// Training must read samples, not the coarse ring's averages: an interval the fine rings cannot hold is refused.
		{
			name: "training interval longer than the pod ring", mutate: func(o *Options) { o.Prediction.TrainingInterval = 10 * time.Minute },
			wantErr: []string{"--prediction-training-interval 10m0s is longer than the 5m0s", "--metric-cache-pod-slots to at least 600"},
		},
		{
			name: "pod ring shorter than a training round", mutate: func(o *Options) { o.Cache.PodSlots = 59 },
			wantErr: []string{"--metric-cache-pod-slots 59 x --metric-cache-step 1s", "at least 60"},
		},
		{
			name: "node ring shorter than a training round", mutate: func(o *Options) { o.Cache.Step, o.Cache.NodeSlots = 2*time.Second, 20 },
			wantErr: []string{"--metric-cache-node-slots 20 x --metric-cache-step 2s", "at least 30"},
		},
		{name: "a ring that holds exactly one round", mutate: func(o *Options) { o.Cache.PodSlots = 60 }},
		{name: "prediction off trains nothing", mutate: func(o *Options) { o.PredictionEnabled, o.Cache.PodSlots = false, 10 }},
		{
			name: "every bad option at once",
			mutate: func(o *Options) {
				o.ProcRoot, o.MetricsAddr, o.Cache.Step, o.Report.MinCoverage, o.ShutdownTimeout = "", "9316", 0, 2, 0
			},
			wantErr: []string{"--proc-root", "--metrics-bind-address", "metric cache step", "--report-min-coverage", "--shutdown-timeout"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			o.NodeName = "n1"
			tt.mutate(o)
			err := o.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			for _, w := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v does not mention %q", err, w)
				}
			}
		})
	}
}

func TestCollectorIntervalsFlag(t *testing.T) {
	o := NewOptions()
	fs := newFlagSet(o)
	if err := fs.Parse([]string{"--collector-intervals=psi=10s,podresource=2s", "--collector-intervals", "nodeinfo=5m"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"psi": 10 * time.Second, "podresource": 2 * time.Second, "nodeinfo": 5 * time.Minute}
	if fmt.Sprint(o.CollectorIntervals) != fmt.Sprint(want) {
		t.Errorf("intervals = %v, want %v", o.CollectorIntervals, want)
	}
	if err := newFlagSet(NewOptions()).Parse([]string{"--collector-intervals=psi"}); err == nil {
		t.Error("a pair without a duration was accepted")
	}
	if err := newFlagSet(NewOptions()).Parse([]string{"--collector-intervals=psi=fast"}); err == nil {
		t.Error("a bad duration was accepted")
	}
}

// TestRenamedFlags: the positive and quantity spellings set what the old ones did, and the old ones keep working for a
// release, deprecated (hidden from --help, a warning when used).
func TestRenamedFlags(t *testing.T) {
	tests := []struct {
		args       []string
		prediction bool
		maxBytes   int64
	}{
		{nil, true, 64 << 20},
		{[]string{"--prediction=false", "--prediction-checkpoint-max-size=32Mi"}, false, 32 << 20},
		{[]string{"--prediction-checkpoint-max-size=1G"}, true, 1_000_000_000},
		{[]string{"--prediction-checkpoint-max-size=4096"}, true, 4096},
		{[]string{"--prediction-off"}, false, 64 << 20},
		{[]string{"--prediction-off=false"}, true, 64 << 20},
		{[]string{"--prediction-off=true", "--prediction-checkpoint-max-bytes=33554432"}, false, 32 << 20},
	}
	for _, tt := range tests {
		o := NewOptions()
		if err := newFlagSet(o).Parse(tt.args); err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		if o.PredictionEnabled != tt.prediction || o.Prediction.CheckpointMaxBytes != tt.maxBytes {
			t.Errorf("%v: prediction %v, checkpoint bound %d; want %v, %d", tt.args, o.PredictionEnabled, o.Prediction.CheckpointMaxBytes, tt.prediction, tt.maxBytes)
		}
	}
	fs := newFlagSet(NewOptions())
	for _, old := range []string{"prediction-off", "prediction-checkpoint-max-bytes"} {
		if f := fs.Lookup(old); f == nil || f.Deprecated == "" || !f.Hidden {
			t.Errorf("--%s: %+v; want it kept, deprecated and hidden", old, f)
		}
	}
	if got := fs.Lookup("prediction-checkpoint-max-size").DefValue; got != "64Mi" {
		t.Errorf("--prediction-checkpoint-max-size's default reads %q, want 64Mi", got)
	}
	for _, bad := range []string{"--prediction-checkpoint-max-size=lots", "--prediction-checkpoint-max-size=-1Mi", "--prediction-off=maybe"} {
		if err := newFlagSet(NewOptions()).Parse([]string{bad}); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

// TestRunFailsClearly: a wrong cluster or a host without what the agent needs is one clear error at start-up.
func TestRunFailsClearly(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	o := NewOptions()
	o.NodeName, o.Kubeconfig, o.ConnectTimeout = "n1", kubeconfig, 2*time.Second
	if err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "cannot reach the Kubernetes API server") {
		t.Errorf("unreachable API server: %v", err)
	}
	o.Kubeconfig = filepath.Join(t.TempDir(), "missing")
	if err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "loading the kubeconfig") {
		t.Errorf("missing kubeconfig: %v", err)
	}
	if err := Run(context.Background(), NewOptions()); err == nil || !strings.Contains(err.Error(), "--node-name") {
		t.Errorf("no node name: %v", err)
	}

	// A host without a kubelet's cgroups, or without cgroups at all.
	h, err := hostsim.New(t.TempDir(), hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs})
	if err != nil {
		t.Fatal(err)
	}
	o = NewOptions()
	o.NodeName, o.CgroupRoot, o.CgroupParent = "n1", h.CgroupRoot(), "elsewhere"
	if _, err := DetectHost(o); err == nil || !strings.Contains(err.Error(), "neither kubepods.slice nor kubepods") {
		t.Errorf("no kubepods: %v", err)
	}
	o.CgroupRoot = t.TempDir()
	if _, err := DetectHost(o); err == nil || !strings.Contains(err.Error(), "detecting the cgroup version") {
		t.Errorf("no cgroups: %v", err)
	}
	o.CgroupRoot, o.CgroupParent, o.CgroupDriver = h.CgroupRoot(), "", "systemd"
	if got, err := DetectHost(o); err != nil || got.Layout.Driver != cgroup.Systemd {
		t.Errorf("an explicit driver is taken as given: %+v, %v", got, err)
	}
}

// The pods of TestAgentWritesNodeMetric and what the simulated host makes them use.
var simulated = []struct {
	pod      *corev1.Pod
	usage    hostsim.Usage
	priority slov1alpha1.PriorityClass
	qos      slov1alpha1.QoSClass
}{
	{
		testutil.Pod("web").PriorityClass("gleaner-prod").Label(slov1alpha1.LabelQoSClass, "LS").
			Container("app").Requests("cpu", "1", "memory", "1Gi").Obj(),
		hostsim.Usage{CPU: 0.8, Memory: 600 << 20, PageCache: 100 << 20}, slov1alpha1.PriorityProd, slov1alpha1.QoSLS,
	},
	{
		testutil.Pod("batch").PriorityClass("gleaner-batch").Label(slov1alpha1.LabelQoSClass, "BE").
			Container("job").Requests(string(slov1alpha1.BatchCPU), "1000").Limits(string(slov1alpha1.BatchCPU), "1000").Obj(),
		hostsim.Usage{CPU: 0.5, Memory: 300 << 20, Throttled: 0.2}, slov1alpha1.PriorityBatch, slov1alpha1.QoSBE,
	},
	{
		// No priority and no labels: Guaranteed, so LSR and prod (slov1alpha1.ClassOf).
		testutil.Pod("db").Container("db").Requests("cpu", "500m", "memory", "512Mi").Limits("cpu", "500m", "memory", "512Mi").Obj(),
		hostsim.Usage{CPU: 0.25, Memory: 400 << 20}, slov1alpha1.PriorityProd, slov1alpha1.QoSLSR,
	},
}

// TestAgentWritesNodeMetric runs the whole agent against a real API server and a simulated host, on a fake clock
// that moves in lockstep with the host's counters (so every reading is exact however loaded the machine is), and
// checks that the NodeMetric status it writes is what the batch plugin reads: nodeMetric.nodeUsage,
// nodeMetric.systemUsage, podsMetric[] with namespace/name/uid/priority/qos and usage, hostApplicationMetric and
// updateTime, present, consistent and well-formed.
func TestAgentWritesNodeMetric(t *testing.T) {
	e := env.Start(t)
	const nodeName = "agent-node"
	host, app, uids := simulatedHost(t, e, nodeName)
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))

	o := NewOptions()
	o.Kubeconfig, o.NodeName = e.Kubeconfig, nodeName
	o.ProcRoot, o.SysRoot, o.CgroupRoot = host.ProcRoot(), host.SysRoot(), host.CgroupRoot()
	o.SysctlRoot, o.StateDir = filepath.Join(host.ProcRoot(), "sys"), t.TempDir() // never this machine's sysctls
	// Plain HTTP on loopback, as on the local cluster (TestRunServesAndStops scrapes over HTTPS).
	o.MetricsAddr, o.HealthAddr, o.Serving.SecureMetrics = freeAddr(t), freeAddr(t), false
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	a, done := startAgent(t, e.Config, o, clk)

	nm := reportAfter(t, e, done, a, host, clk, nodeName)
	expectBatchPluginAccepts(t, nm, app, uids)

	waitHTTP(t, done, "http://"+o.MetricsAddr+"/metrics", `gleaner_agent_collector_runs_total{collector="podresource",result="success"}`)
	waitHTTP(t, done, "http://"+o.MetricsAddr+"/metrics", `gleaner_agent_pod_cpu_usage_seconds_total{namespace="default",pod="web-agent-node"} `)
	// Deprecated, kept one release: the last sample's cores.
	waitHTTP(t, done, "http://"+o.MetricsAddr+"/metrics", `gleaner_agent_pod_cpu_usage_cores{namespace="default",pod="web-agent-node"} 0.8`)
	waitHTTP(t, done, "http://"+o.MetricsAddr+"/metrics", `gleaner_agent_nodemetric_reports_total{result="written"}`)
	waitHTTP(t, done, "http://"+o.MetricsAddr+"/metrics", "gleaner_agent_metric_cache_bytes")
	build := version.Get()
	waitHTTP(t, done, "http://"+o.MetricsAddr+"/metrics",
		fmt.Sprintf("gleaner_build_info{commit=%q,goversion=%q,version=%q} 1", build.Commit, build.GoVersion, build.Version))
}

// startAgent builds the agent for cfg and o on clk, runs it until the test ends (it must then stop without an
// error) and waits until it is ready. done receives Run's result.
func startAgent(tb testing.TB, cfg *rest.Config, o *Options, clk clock.WithTicker) (a *Agent, done <-chan error) {
	tb.Helper()
	if o.RuntimeHook.NRISocket == runtimehook.DefaultNRISocket {
		// Never the node's real runtime: a test agent must not become a plugin of a containerd that runs pods.
		o.RuntimeHook.NRISocket = filepath.Join(tb.TempDir(), "nri.sock")
	}
	a, err := New(cfg, o, clk)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// Run's error is sent once and the channel closed, so whoever reads it first (a wait that sees the agent
	// exit early, or the cleanup) gets it, and later reads do not block.
	result := make(chan error, 1)
	go func() { result <- a.Run(ctx); close(result) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-result; err != nil {
			tb.Errorf("agent stopped with an error: %v", err)
		}
	})
	waitHTTP(tb, result, "http://"+o.HealthAddr+"/readyz", "ok")
	return a, result
}

// stepSecond moves the simulated host's counters by a second, then the clock, and waits until every 1 s collector
// has read them.
func stepSecond(t testing.TB, done <-chan error, a *Agent, host *hostsim.Host, clk *clocktesting.FakeClock) {
	t.Helper()
	var everySecond []string
	for _, f := range collector.Registry() {
		if f.Interval == time.Second {
			everySecond = append(everySecond, f.Name)
		}
	}
	runs := func(name string) (n float64) {
		for _, r := range []string{metrics.ResultSuccess, metrics.ResultError, metrics.ResultUnsupported} {
			n += promtestutil.ToFloat64(a.Metrics.CollectorRuns.WithLabelValues(name, r))
		}
		return n
	}
	before := map[string]float64{}
	for _, n := range everySecond {
		before[n] = runs(n)
	}
	if err := host.Advance(time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		ran := true
		for _, n := range everySecond {
			ran = ran && runs(n) > before[n]
		}
		if ran {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("agent exited during a collection round: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("a collection round did not finish within 30s")
		}
	}
}

// reportAfter steps 12 simulated seconds (the 6 s aggregate duration and the 8 s window covered), then keeps
// stepping until the reporter has written a complete status stamped with the current second. (A step that comes
// while the reporter is still writing the previous report passes before its timer is armed again, so a second
// can go by without a report.)
func reportAfter(t *testing.T, e *testenv.Env, done <-chan error, a *Agent, host *hostsim.Host, clk *clocktesting.FakeClock, node string) *slov1alpha1.NodeMetric {
	t.Helper()
	for range 12 {
		stepSecond(t, done, a, host, clk)
	}
	nm := &slov1alpha1.NodeMetric{}
	var err error
	for range 20 {
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if err = e.Client.Get(context.Background(), client.ObjectKey{Name: node}, nm); err == nil {
				if err = complete(nm.Status, clk.Now()); err == nil {
					return nm
				}
			}
		}
		stepSecond(t, done, a, host, clk)
	}
	t.Fatalf("no complete NodeMetric status after 32 simulated seconds: %v", err)
	return nil
}

// complete says what a status written at now still lacks.
func complete(st slov1alpha1.NodeMetricStatus, now time.Time) error {
	switch {
	case st.UpdateTime == nil || st.NodeMetric == nil || !st.UpdateTime.Time.Equal(now):
		return fmt.Errorf("no status of this second yet")
	case len(st.PodUsages) != len(simulated) || len(st.HostApplicationMetric) != 1 || st.NodeMetric.SystemUsage == nil:
		return fmt.Errorf("incomplete status: %d pods, %d host apps, system %v", len(st.PodUsages), len(st.HostApplicationMetric), st.NodeMetric.SystemUsage)
	case len(st.NodeMetric.AggregatedNodeUsages) != 2:
		return fmt.Errorf("aggregated windows %d, want 2", len(st.NodeMetric.AggregatedNodeUsages))
	}
	return nil
}

// TestRunServesAndStops runs the agent the way the binary does (real clock, from Options): it gets ready, serves
// its probes and metrics, connects its runtime hook to a runtime's NRI socket (the NRI project's runtime side) and
// says so, and stops cleanly on cancel.
func TestRunServesAndStops(t *testing.T) {
	e := env.Start(t)
	host, _, _ := simulatedHost(t, e, "run-node")
	o := NewOptions()
	o.Kubeconfig, o.NodeName = e.Kubeconfig, "run-node"
	o.ProcRoot, o.SysRoot, o.CgroupRoot = host.ProcRoot(), host.SysRoot(), host.CgroupRoot()
	o.SysctlRoot, o.StateDir = filepath.Join(host.ProcRoot(), "sys"), t.TempDir() // never this machine's sysctls
	o.MetricsAddr, o.HealthAddr = freeAddr(t), freeAddr(t)
	o.RuntimeHook.NRISocket = startNRIRuntime(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()

	waitHTTP(t, done, "http://"+o.HealthAddr+"/readyz", "ok")
	waitHTTP(t, done, "http://"+o.HealthAddr+"/healthz", "ok")
	// Metrics over HTTPS (the default): /metrics for a scraper bound to gleaner-metrics-reader, the debug pages
	// only for one also bound to gleaner-agent-debug-reader.
	scraper := boundToken(t, e, "prometheus", "gleaner-metrics-reader")
	debugger := boundToken(t, e, "debugger", "gleaner-metrics-reader", "gleaner-agent-debug-reader")
	metricsURL := "https://" + o.MetricsAddr
	waitScrape(t, done, metricsURL+"/metrics", scraper, `gleaner_agent_collector_runs_total{collector="nodeinfo",result="success"} 1`)
	waitScrape(t, done, metricsURL+"/metrics", scraper, `gleaner_agent_runtime_hook_mode{mode="nri"} 1`)
	waitScrape(t, done, metricsURL+"/debug/runtimehook", debugger, `"mode": "nri"`)
	for _, c := range []struct {
		path, token string
		want        int
	}{{"/metrics", "", http.StatusUnauthorized}, {"/debug/runtimehook", scraper, http.StatusForbidden}, {"/debug/executor", scraper, http.StatusForbidden}} {
		if status := scrapeStatus(t, metricsURL+c.path, c.token); status != c.want {
			t.Errorf("GET %s with token %t: %d, want %d", c.path, c.token != "", status, c.want)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("agent stopped with an error: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("agent did not stop within 15s of cancel")
	}
	if resp, err := http.Get("http://" + o.HealthAddr + "/healthz"); err == nil {
		_ = resp.Body.Close()
		t.Error("the health server still answers after shutdown")
	}
}

// simulatedHost creates, for node, the Node, priority classes, a NodeSLO with one host application, a NodeMetric
// reporting every second over 6 s, and the simulated pods (through the API server, which gives them their UIDs),
// and a simulated host running all of it.
func simulatedHost(t *testing.T, e *testenv.Env, node string) (*hostsim.Host, slov1alpha1.HostApplicationSpec, map[string]types.UID) {
	t.Helper()
	ctx := context.Background()
	host, err := hostsim.New(t.TempDir(), hostsim.Config{Version: cgroup.V1, Driver: cgroup.Cgroupfs, CPUs: 4, MemTotal: 8 << 30})
	if err != nil {
		t.Fatal(err)
	}
	app := slov1alpha1.HostApplicationSpec{Name: "nginx", Priority: slov1alpha1.PriorityProd, QoS: slov1alpha1.QoSLS}
	create(t, e.Client,
		testutil.Node(node).Capacity("cpu", "4", "memory", "8Gi").Obj(),
		&slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: slov1alpha1.NodeSLOSpec{HostApplications: []slov1alpha1.HostApplicationSpec{app}}},
		&slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: slov1alpha1.NodeMetricSpec{CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{
			AggregateDurationSeconds: ptr.To[int64](6), ReportIntervalSeconds: ptr.To[int64](1),
			NodeAggregatePolicy: &slov1alpha1.AggregatePolicy{Durations: []metav1.Duration{{Duration: 4 * time.Second}, {Duration: 8 * time.Second}}},
		}}},
	)
	for _, pc := range testutil.PriorityClasses() {
		if err := e.Client.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	uids := map[string]types.UID{}
	for _, s := range simulated {
		p := s.pod.DeepCopy()
		p.Name += "-" + node
		p.Spec.NodeName = node
		create(t, e.Client, p)
		p.Status.Phase = corev1.PodRunning
		if err := e.Client.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := host.AddPod(p, s.usage); err != nil {
			t.Fatal(err)
		}
		uids[s.pod.Name] = p.UID
	}
	if err := host.AddHostApp(app.Name, path.Join(host.Layout().Parent, "host-latency-sensitive", app.Name), hostsim.Usage{CPU: 0.3, Memory: 200 << 20}); err != nil {
		t.Fatal(err)
	}
	host.SetSystemUsage(hostsim.Usage{CPU: 0.4, Memory: 700 << 20, PageCache: 300 << 20})
	return host, app, uids
}

// expectBatchPluginAccepts checks the fields the batch plugin reads.
func expectBatchPluginAccepts(t *testing.T, nm *slov1alpha1.NodeMetric, app slov1alpha1.HostApplicationSpec, uids map[string]types.UID) {
	t.Helper()
	s := nm.Status
	cores := func(l corev1.ResourceList) float64 { return float64(l.Cpu().MilliValue()) / 1000 }
	mib := func(l corev1.ResourceList) float64 { return float64(l.Memory().Value()) / (1 << 20) }
	wellFormed := func(what string, l corev1.ResourceList) {
		if len(l) != 2 || l.Cpu().Sign() < 0 || l.Memory().Sign() < 0 || cores(l) > 4 || mib(l) > 8<<10 {
			t.Errorf("%s = %v: want cpu and memory, non-negative, within the node", what, l)
		}
	}
	node, system := s.NodeMetric.NodeUsage, s.NodeMetric.SystemUsage
	wellFormed("nodeUsage", node)
	wellFormed("systemUsage", system)
	// 0.8 + 0.5 + 0.25 pods + 0.3 nginx + 0.4 system; memory without page cache.
	near(t, "nodeUsage cpu", cores(node), 2.25, 0.001)
	near(t, "nodeUsage memory MiB", mib(node), 600+300+400+200+700, 0)

	sumCPU, sumMem := expectPods(t, s.PodUsages, uids, cores, mib)
	ha := s.HostApplicationMetric[0]
	if ha.Name != app.Name || ha.Priority != app.Priority || ha.QoS != app.QoS {
		t.Errorf("host application %+v, want %s %s %s", ha, app.Name, app.Priority, app.QoS)
	}
	wellFormed("host application", ha.Usage)
	sumCPU, sumMem = sumCPU+cores(ha.Usage), sumMem+mib(ha.Usage)

	// system = max(node - pods - host applications, 0), up to the sampling of separate series.
	near(t, "systemUsage cpu vs node - pods - apps", cores(system), math.Max(cores(node)-sumCPU, 0), 0.001)
	near(t, "systemUsage memory vs node - pods - apps (MiB)", mib(system), math.Max(mib(node)-sumMem, 0), 0)
	near(t, "systemUsage cpu", cores(system), 0.4, 0.001)

	for _, a := range s.NodeMetric.AggregatedNodeUsages {
		for _, agg := range []slov1alpha1.AggregationType{slov1alpha1.AggregationAvg, slov1alpha1.AggregationP50, slov1alpha1.AggregationP90, slov1alpha1.AggregationP95, slov1alpha1.AggregationP99} {
			wellFormed(fmt.Sprintf("aggregatedNodeUsages[%s][%s]", a.Duration.Duration, agg), a.Usage[agg])
		}
	}
}

// expectPods checks each simulated pod's entry and returns the sums of their CPU (cores) and memory (MiB).
func expectPods(t *testing.T, pods []slov1alpha1.PodUsage, uids map[string]types.UID, cores, mib func(corev1.ResourceList) float64) (sumCPU, sumMem float64) {
	t.Helper()
	for _, want := range simulated {
		var pm *slov1alpha1.PodUsage
		for j := range pods {
			if pods[j].UID == string(uids[want.pod.Name]) {
				pm = &pods[j]
			}
		}
		if pm == nil {
			t.Errorf("pod %s (uid %s) missing", want.pod.Name, uids[want.pod.Name])
			continue
		}
		wantPriority := want.priority
		if wantPriority == slov1alpha1.PriorityProd {
			wantPriority = "" // left out for prod
		}
		if pm.Priority != wantPriority {
			t.Errorf("pod %s: priority %q, want %q", want.pod.Name, pm.Priority, wantPriority)
		}
		usage := corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(pm.CPUMillis, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(pm.MemoryBytes, resource.BinarySI),
		}
		if pm.CPUMillis < 0 || pm.MemoryBytes < 0 {
			t.Errorf("pod %s: negative usage %v", want.pod.Name, usage)
		}
		near(t, "pod "+want.pod.Name+" cpu", cores(usage), want.usage.CPU, 0.001)
		near(t, "pod "+want.pod.Name+" memory MiB", mib(usage), float64(want.usage.Memory>>20), 0)
		sumCPU, sumMem = sumCPU+cores(usage), sumMem+mib(usage)
	}
	return sumCPU, sumMem
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.3f, want %.3f +- %.3f", what, got, want, tol)
	}
}

func create(t testing.TB, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), o) })
	}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// eventually retries f for 60 s, failing early if the agent exits.
func eventually(t testing.TB, done <-chan error, what string, f func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("agent exited while waiting for %s: %v", what, err)
		default:
		}
		if err = f(); err == nil {
			return
		}
	}
	t.Fatalf("%s: still failing after 60s: %v", what, err)
}

// waitHTTP polls url until it answers 200 with a body containing want.
func waitHTTP(t testing.TB, done <-chan error, url, want string) {
	t.Helper()
	eventually(t, done, url, func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			return fmt.Errorf("%d, body does not contain %q", resp.StatusCode, want)
		}
		return nil
	})
}

// waitScrape is waitHTTP with a bearer token, over HTTPS without verifying the self-signed certificate.
func waitScrape(t testing.TB, done <-chan error, url, token, want string) {
	t.Helper()
	eventually(t, done, url, func() error {
		resp, err := scrape(url, token)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			return fmt.Errorf("%d, body does not contain %q", resp.StatusCode, want)
		}
		return nil
	})
}

func scrape(url, token string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed, as in production
	return c.Do(req)
}

func scrapeStatus(t testing.TB, url, token string) int {
	t.Helper()
	resp, err := scrape(url, token)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// boundToken applies config/rbac/metrics_reader_role.yaml and returns the token of the service account
// monitoring/name, bound to each of roles.
func boundToken(t testing.TB, e *testenv.Env, name string, roles ...string) string {
	t.Helper()
	const readers = "../../config/rbac/metrics_reader_role.yaml"
	if out, err := e.Kubectl("apply", "-f", readers).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -f %s: %v\n%s", readers, err, out)
	}
	token := e.ServiceAccountToken(t, "monitoring", name, nil)
	for _, role := range roles {
		b := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "monitoring", Name: name}},
		}
		if err := e.Client.Create(context.Background(), b); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Client.Delete(context.Background(), b) })
	}
	return token
}

// startNRIRuntime starts the runtime side of NRI (the NRI project's adaptation, what containerd embeds) on a socket
// of the test's and returns the socket's path.
func startNRIRuntime(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nri") // short: a unix socket's path has a length limit t.TempDir() can exceed
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	socket := filepath.Join(dir, "nri.sock")
	sync := func(ctx context.Context, cb adaptation.SyncCB) error { _, err := cb(ctx, nil, nil); return err }
	update := func(context.Context, []*adaptation.ContainerUpdate) ([]*adaptation.ContainerUpdate, error) {
		return nil, nil
	}
	r, err := adaptation.New("containerd", "v2.4.2", sync, update, adaptation.WithSocketPath(socket),
		adaptation.WithPluginPath(filepath.Join(dir, "plugins")), adaptation.WithPluginConfigPath(filepath.Join(dir, "conf.d")))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return socket
}

func newFlagSet(o *Options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	return fs
}
