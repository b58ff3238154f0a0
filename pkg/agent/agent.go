package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/collector"
	"github.com/gleaner-sh/gleaner/pkg/agent/events"
	"github.com/gleaner-sh/gleaner/pkg/agent/evictor"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/kubeletpolicy"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/prediction"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins"
	"github.com/gleaner-sh/gleaner/pkg/agent/reporter"
	"github.com/gleaner-sh/gleaner/pkg/agent/runtimehook"
	"github.com/gleaner-sh/gleaner/pkg/agent/slostatus"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/proc"
	"github.com/gleaner-sh/gleaner/pkg/agent/topologyreporter"
	"github.com/gleaner-sh/gleaner/pkg/serving"
	"github.com/gleaner-sh/gleaner/pkg/version"
)

// Agent is gleaner-agent with its modules built, ready to Run.
type Agent struct {
	// States is the node's state.
	States *statesinformer.Informer
	// Cache holds the measurements.
	Cache *metriccache.MemoryCache
	// Collectors measure.
	Collectors *collector.Runner
	// Reporter writes the NodeMetric status.
	Reporter *reporter.Reporter
	// Topology publishes the node's NodeResourceTopology; nil with --report-topology=false.
	Topology *topologyreporter.Reporter
	// Prediction predicts what the prod pods will not use; nil with --prediction=false.
	Prediction *prediction.Server
	// Executor writes cgroup values.
	Executor *executor.Executor
	// Evictor evicts best-effort pods.
	Evictor *evictor.Evictor
	// QoS runs the QoS plugins.
	QoS *qosmanager.Manager
	// SLOStatus writes the NodeSLO's status: what the QoS plugins and the runtime hook apply.
	SLOStatus *slostatus.Writer
	// RuntimeHook gives batch and mid pods their cgroup limits (NRI plugin and reconciler).
	RuntimeHook *runtimehook.Hook
	// Metrics are the agent's Prometheus metrics.
	Metrics *metrics.Metrics
	// Host is what the agent found out about the host.
	Host Host

	opts      *Options
	runnables []Runnable
	ready     atomic.Bool
	// uninstall tells an uninstall from a restart when the agent stops; nil when it cannot (no namespace).
	uninstall uninstallCheck
}

// Host is the cgroup setup the agent detected.
type Host struct {
	// CgroupVersion is the mounted cgroup version.
	CgroupVersion cgroup.Version
	// Layout is where the kubelet puts pods.
	Layout cgroup.Layout
}

// Run starts gleaner-agent against the cluster the options point at and blocks until ctx ends.
func Run(ctx context.Context, opts *Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	cfg, err := opts.RESTConfig()
	if err != nil {
		return err
	}
	if err := checkNode(ctx, cfg, opts.NodeName, opts.ConnectTimeout); err != nil {
		return err
	}
	a, err := New(cfg, opts, clock.RealClock{})
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("gleaner-agent starting", "version", version.Get().String(), "node", opts.NodeName, "apiServer", cfg.Host,
		"cgroup", a.Host.CgroupVersion.String(), "driver", a.Host.Layout.Driver, "collectors", a.Collectors.Names(), "qosPlugins", a.QoS.Names(),
		"podSource", opts.PodSource, "runtimeHook", opts.RuntimeHook.Mode, "nriSocket", opts.RuntimeHook.NRISocket, "metrics", opts.MetricsAddr, "metricsSecure", opts.Serving.SecureMetrics, "health", opts.HealthAddr)
	return a.Run(ctx)
}

// newScheme knows the kinds the agent reads and writes: the core group, policy/v1 (evictions) and slo.gleaner.sh. (Not the whole
// client-go scheme: the agent's binary and memory stay smaller without the other API groups.)
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding the core kinds to the scheme: %w", err)
	}
	// The Eviction API's kind: the evictor posts policy/v1 Evictions.
	if err := policyv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding policy/v1 to the scheme: %w", err)
	}
	if err := slov1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding %s to the scheme: %w", slov1alpha1.GroupVersion, err)
	}
	return s, nil
}

// checkNode reads the agent's Node once with a short timeout, so that a wrong or missing cluster, a node name
// that does not exist or missing permissions are one clear error at start-up instead of a retry loop.
func checkNode(ctx context.Context, cfg *rest.Config, node string, timeout time.Duration) error {
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	c := rest.CopyConfig(cfg)
	c.Timeout = timeout
	cl, err := client.New(c, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("cannot reach the Kubernetes API server at %s (check --kubeconfig and the cluster): %w", cfg.Host, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = cl.Get(ctx, client.ObjectKey{Name: node}, &corev1.Node{})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("node %q does not exist (check --node-name or $NODE_NAME): %w", node, err)
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return fmt.Errorf("reading node %q: the agent's credentials are not allowed to (check the gleaner-agent RBAC): %w", node, err)
	}
	return fmt.Errorf("cannot reach the Kubernetes API server at %s (check --kubeconfig and the cluster): %w", cfg.Host, err)
}

// RESTConfig loads the client configuration the options point at.
func (o *Options) RESTConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig (--kubeconfig %q, $KUBECONFIG, ~/.kube/config or in-cluster): %w", o.Kubeconfig, err)
	}
	cfg.UserAgent = "gleaner-agent/" + o.NodeName
	return cfg, nil
}

// DetectHost finds the cgroup version under opts.CgroupRoot and, unless set, the kubelet's cgroup driver.
func DetectHost(opts *Options) (Host, error) {
	v, err := cgroup.DetectVersion(opts.CgroupRoot)
	if err != nil {
		return Host{}, err
	}
	driver := cgroup.Driver(opts.CgroupDriver)
	if opts.CgroupDriver == "auto" {
		if driver, err = cgroup.DetectDriver(opts.CgroupRoot, v, opts.CgroupParent); err != nil {
			return Host{}, err
		}
	}
	return Host{CgroupVersion: v, Layout: cgroup.Layout{Driver: driver, Parent: opts.CgroupParent}}, nil
}

// runtimeLowersOOMScores is runtimehook.RuntimeCanLowerOOMScores of the host's /proc at procRoot, said in the log
// when it is not so; unknown is no.
func runtimeLowersOOMScores(procRoot string) bool {
	lowers, err := runtimehook.RuntimeCanLowerOOMScores(procRoot)
	switch {
	case err != nil:
		klog.Background().Info("negative oom_score_adj values go to containers through the runtime hook's reconciler only", "err", err.Error())
	case !lowers:
		klog.Background().Info("the host's init has no CAP_SYS_RESOURCE in its bounding set, so the runtime cannot start a container below oom_score_adj 0: negative values go to containers through the runtime hook's reconciler only")
	}
	return lowers
}

// New builds the agent's modules for the cluster at cfg; opts must be valid. clk drives every module.
func New(cfg *rest.Config, opts *Options, clk clock.WithTicker) (*Agent, error) {
	host, err := DetectHost(opts)
	if err != nil {
		return nil, err
	}
	procFS, err := proc.New(opts.ProcRoot)
	if err != nil {
		return nil, err
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating the API client: %w", err)
	}
	var kubelet *statesinformer.KubeletPods
	if opts.PodSource == PodSourceKubelet {
		if kubelet, err = statesinformer.NewKubeletPods(opts.Kubelet, cfg, clk); err != nil {
			return nil, err
		}
	}
	states, err := statesinformer.New(cfg, scheme, opts.NodeName, kubelet)
	if err != nil {
		return nil, err
	}
	cache, err := metriccache.New(opts.Cache, clk)
	if err != nil {
		return nil, err
	}
	m := metrics.New()
	m.RegisterCacheSize(func() (int, int64) { s := cache.Stats(); return s.Series, s.Bytes })
	runner, err := collector.NewRunner(collector.Deps{
		Proc: procFS, SysRoot: opts.SysRoot, Cgroups: cgroup.NewFS(opts.CgroupRoot, host.CgroupVersion).KeepOpen(opts.CgroupKeepOpenFiles),
		CgroupVersion: host.CgroupVersion, Layout: host.Layout, States: states, Cache: cache, Metrics: m, Devices: opts.Devices,
	}, clk, collector.Registry(), opts.Collectors, opts.CollectorIntervals)
	if err != nil {
		return nil, err
	}
	// The executor's own FS: writes must reach the kernel's files, not a kept-open read handle.
	cgroups := cgroup.NewFS(opts.CgroupRoot, host.CgroupVersion)
	execOpts := opts.Executor
	hostFS := system.NewHostFS("/").Mount("proc", opts.ProcRoot).Mount("proc/sys", opts.SysctlRoot).Mount("sys", opts.SysRoot)
	execOpts.Host = hostFS
	exec, err := executor.New(cgroups, clk, m.Registry, execOpts)
	if err != nil {
		return nil, err
	}
	evictOpts := opts.Eviction
	evictOpts.NodeName = opts.NodeName
	eventWriter := events.New(c, clk, opts.NodeName)
	ev, err := evictor.New(c, exec, eventWriter, clk, m.Registry, evictOpts)
	if err != nil {
		return nil, err
	}
	// The evictor remembers pods it evicted until they are gone.
	states.RegisterCallback(statesinformer.KindPods, "evictor-forget-ended-pods", func(statesinformer.Kind) {
		ev.Prune(func(uid types.UID) bool { return states.GetPod(uid) != nil })
	})
	rep := reporter.New(c, states, cache, clk, m, opts.NodeName, opts.Report)
	qos, err := qosmanager.NewManager(qosmanager.Deps{
		States: states, Cache: cache, Executor: exec, Cgroups: cgroups, Layout: host.Layout, Proc: procFS, Host: hostFS,
		SysRoot: opts.SysRoot, NetDevice: opts.NetQOSDevice, StateDir: opts.StateDir, Clock: clk, Evictor: ev, Events: eventWriter, Pressure: rep,
		Registerer: m.Registry,
	}, clk, plugins.Registry(), opts.QoSPlugins, opts.QoSPluginIntervals)
	if err != nil {
		return nil, err
	}
	hook, err := runtimehook.New(runtimehook.Deps{
		States: states, Executor: exec, Cgroups: cgroups, Layout: host.Layout, CgroupVersion: host.CgroupVersion, Clock: clk,
		Events: eventWriter, RuntimeLowersOOMScores: runtimeLowersOOMScores(opts.ProcRoot),
	}, opts.RuntimeHook, m.Registry)
	if err != nil {
		return nil, err
	}
	sloStatus, err := slostatus.New(c, states, qos, hook.Status, clk, m.Registry, opts.NodeName)
	if err != nil {
		return nil, err
	}
	a := &Agent{
		States: states, Cache: cache, Collectors: runner, Metrics: m, Host: host, opts: opts, Executor: exec, Evictor: ev, QoS: qos,
		RuntimeHook: hook, Reporter: rep, SLOStatus: sloStatus,
	}
	if opts.Topology.Enabled {
		topo := opts.Topology
		topo.PodResourcesSocket = kubeletpolicy.Socket(opts.Devices.KubeletRootDir)
		a.Topology = topologyreporter.New(c, states, opts.ProcRoot, opts.SysRoot, clk, m, opts.NodeName, topo)
	}
	if opts.PredictionEnabled {
		if a.Prediction, err = prediction.NewServer(states, cache, clk, opts.predictionOptions()); err != nil {
			return nil, err
		}
		a.Reporter.WithPredictor(a.Prediction)
	}
	metricsServer, err := a.metricsServer(cfg, clk, exec, hook)
	if err != nil {
		return nil, err
	}
	a.runnables = a.modules(metricsServer, cache, states, exec, hook, runner, eventWriter, qos)
	if a.uninstall, err = newUninstallCheck(cfg, opts.Uninstall); err != nil {
		return nil, err
	}
	return a, nil
}

// metricsServer serves /metrics, /debug/executor and /debug/runtimehook; nil with --metrics-bind-address=0. With
// --metrics-secure (the default) it speaks TLS and lets in only clients the API server at cfg authenticates and
// authorizes for get on the path, so the pods and cgroups these pages name are not open to every pod that can
// reach the node.
func (a *Agent) metricsServer(cfg *rest.Config, clk clock.PassiveClock, exec *executor.Executor, hook *runtimehook.Hook) (*httpServer, error) {
	opts := a.opts
	if opts.MetricsAddr == "0" {
		return nil, nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(a.Metrics.Registry, promhttp.HandlerOpts{Registry: a.Metrics.Registry}))
	mux.Handle("/debug/executor", exec.AuditHandler())
	mux.Handle("/debug/runtimehook", hook.Status.Handler())
	var handler http.Handler = mux
	if opts.Serving.SecureMetrics {
		var err error
		if handler, err = serving.Protect(cfg, clk, klog.Background().WithName("metrics-server"), mux); err != nil {
			return nil, err
		}
	}
	listen := func(ctx context.Context, addr string) (net.Listener, error) {
		return opts.Serving.Listener(ctx, klog.FromContext(ctx), addr)
	}
	return &httpServer{name: "metrics-server", addr: opts.MetricsAddr, shutdown: opts.ShutdownTimeout, handler: handler, listen: listen}, nil
}

// modules lists the agent's Runnables in the order they start, the order docs/agent.md describes (Start-up order;
// TestStartOrderIsDocumented).
func (a *Agent) modules(metrics *httpServer, cache *metriccache.MemoryCache, states *statesinformer.Informer, exec *executor.Executor,
	hook *runtimehook.Hook, runner *collector.Runner, eventWriter *events.Writer, qos *qosmanager.Manager) []Runnable {
	var rs []Runnable
	opts := a.opts
	if metrics != nil {
		rs = append(rs, metrics)
	}
	if opts.HealthAddr != "0" {
		rs = append(rs, &httpServer{name: "health-server", addr: opts.HealthAddr, shutdown: opts.ShutdownTimeout, handler: a.healthHandler()})
	}
	// The executor and the event writer start before the QoS plugins that use them; the runtime hook right after the
	// executor, so that the NRI plugin connects before the collectors' first round is waited for.
	rs = append(rs, cache, states, exec)
	if hook.NRI != nil {
		rs = append(rs, hook.NRI)
	}
	if hook.Reconciler != nil {
		rs = append(rs, hook.Reconciler)
	}
	rs = append(rs, runner, eventWriter, qos, a.SLOStatus)
	if a.Prediction != nil {
		rs = append(rs, a.Prediction)
	}
	rs = append(rs, a.Reporter)
	if a.Topology != nil {
		rs = append(rs, a.Topology)
	}
	return rs
}

// Run runs the modules in order until ctx ends (see the package documentation); then, when Gleaner is being
// uninstalled (the agent's DaemonSet is gone), it gives the node back what the QoS plugins wrote.
func (a *Agent) Run(ctx context.Context) error {
	log := klog.FromContext(ctx)
	if u := a.opts.Uninstall; u.Restore && a.uninstall == nil {
		log.Info("WARNING: the agent cannot tell an uninstall from a restart without --daemonset and --namespace ($POD_NAMESPACE): an uninstall will leave the node as the QoS plugins wrote it")
	}
	err := runAll(ctx, a.runnables, a.opts.ShutdownTimeout, func() {
		a.ready.Store(true)
		log.Info("gleaner-agent ready")
	})
	a.ready.Store(false)
	if ctx.Err() != nil {
		err = errors.Join(err, a.restoreOnUninstall(ctx, a.uninstall))
	}
	if err != nil {
		return fmt.Errorf("gleaner-agent on node %q: %w", a.opts.NodeName, err)
	}
	return nil
}

// healthHandler serves /healthz (the process answers) and /readyz (every module has started and synced).
func (a *Agent) healthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !a.ready.Load() {
			http.Error(w, errNotReady.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	return mux
}

var errNotReady = errors.New("the states informer or the collectors have not synced yet")
