package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gleaner-sh/gleaner/pkg/agent/collector"
	"github.com/gleaner-sh/gleaner/pkg/agent/evictor"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/prediction"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager/plugins"
	"github.com/gleaner-sh/gleaner/pkg/agent/reporter"
	"github.com/gleaner-sh/gleaner/pkg/agent/runtimehook"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/topologyreporter"
	"github.com/gleaner-sh/gleaner/pkg/serving"
	"github.com/gleaner-sh/gleaner/pkg/toggle"
)

// Pod sources.
const (
	// PodSourceAPIServer watches pods on the API server with a field selector on the node name.
	PodSourceAPIServer = "apiserver"
	// PodSourceKubelet reads the kubelet's pod list.
	PodSourceKubelet = "kubelet"
)

// Options configure gleaner-agent. Fill them with AddFlags, or set them directly in tests, then call Validate.
type Options struct {
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG, ~/.kube/config, then the in-cluster config.
	Kubeconfig string
	// NodeName is the node the agent runs on; cmd/gleaner-agent defaults it to $NODE_NAME (the downward API).
	NodeName string

	// ProcRoot is the host's /proc. A container's own /proc already shows the host's stat, meminfo and pressure.
	ProcRoot string
	// SysRoot is the host's /sys, for the CPU topology and the blkio plugin's block devices.
	SysRoot string
	// NetQOSDevice is the network device whose outgoing traffic the netqos QoS plugin shapes; "" for the device of
	// the IPv4 default route. The plugin needs the host's network namespace (hostNetwork) and CAP_NET_ADMIN.
	NetQOSDevice string
	// SysctlRoot is the host's /proc/sys, where the sysreconcile QoS plugin writes vm sysctls. A container's own
	// /proc/sys is read-only, so the DaemonSet mounts the host's /proc/sys/vm writable under it.
	SysctlRoot string
	// StateDir is a directory on the node that outlives the agent's restarts (a hostPath in the DaemonSet): the
	// sysreconcile plugin records there the kernel values it replaced, cgreconcile the cgroup files it holds.
	StateDir string
	// CgroupRoot is where the host's cgroup hierarchy is mounted (a hostPath of /sys/fs/cgroup in the DaemonSet).
	CgroupRoot string
	// CgroupParent is the kubelet's --cgroup-root, relative to the hierarchy root ("" for "/").
	CgroupParent string
	// CgroupDriver is "systemd", "cgroupfs" or "auto" (from the kubepods directory).
	CgroupDriver string
	// CgroupKeepOpenFiles is how many cgroup files are kept open between reads (re-read with one pread each);
	// 0 opens every file for each read.
	CgroupKeepOpenFiles int

	// Collectors selects collectors: "*" for the defaults, "name" to add one, "-name" to leave one out.
	Collectors []string
	// CollectorIntervals overrides collectors' intervals, by name.
	CollectorIntervals map[string]time.Duration
	// Devices configure the device and interference collectors (storage, podio, cpi, coldmemory, gpu).
	Devices collector.DeviceOptions

	// Prediction configures peak prediction; its CheckpointDir is always StateDir/prediction.
	Prediction prediction.Options
	// PredictionEnabled runs peak prediction; without it the NodeMetric reports no prod reclaimable resources (no
	// mid-*).
	PredictionEnabled bool
	// QoSPlugins selects QoS manager plugins, as Collectors does collectors.
	QoSPlugins []string
	// QoSPluginIntervals overrides QoS plugins' intervals, by name.
	QoSPluginIntervals map[string]time.Duration
	// Executor configures the resource executor, the agent's one writer of cgroup values.
	Executor executor.Options
	// Eviction configures the evictor (NodeName is the agent's).
	Eviction evictor.Options
	// RuntimeHook configures the runtime hook: the NRI plugin and the reconciler that give batch and mid pods
	// their cgroup limits.
	RuntimeHook runtimehook.Options

	// PodSource is PodSourceAPIServer or PodSourceKubelet.
	PodSource string
	// Kubelet configures PodSourceKubelet.
	Kubelet statesinformer.KubeletConfig

	// Cache sizes the metric cache.
	Cache metriccache.Config
	// Report tunes the NodeMetric reporter.
	Report reporter.Options
	// Topology tunes the NodeResourceTopology reporter (docs/agent.md, NUMA topology).
	Topology topologyreporter.Options

	// MetricsAddr serves Prometheus /metrics; "0" turns it off.
	MetricsAddr string
	// Serving secures the metrics server: HTTPS with authentication and authorization, HTTP/2 off.
	Serving serving.Options
	// HealthAddr serves /healthz and /readyz; "0" turns them off.
	HealthAddr string
	// ConnectTimeout bounds the first contact with the API server.
	ConnectTimeout time.Duration
	// ShutdownTimeout bounds how long the modules may take to stop.
	ShutdownTimeout time.Duration
	// Uninstall says how the agent tells an uninstall from a restart when it stops.
	Uninstall UninstallOptions
}

// UninstallOptions say how the agent tells an uninstall when it stops: its DaemonSet gone or being deleted means that
// Gleaner is being uninstalled from the node (not updated, restarted or evicted), and the agent gives the node back
// what its QoS plugins wrote and empties its state directory (uninstall.go).
type UninstallOptions struct {
	// Restore turns that on.
	Restore bool
	// DaemonSet is the agent's DaemonSet, in Namespace (cmd/gleaner-agent defaults it to $POD_NAMESPACE). Without
	// either the agent cannot tell an uninstall, says so at start, and restores nothing.
	DaemonSet, Namespace string
	// Timeout bounds the check and the restoration, within the pod's terminationGracePeriodSeconds less
	// ShutdownTimeout.
	Timeout time.Duration
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		ProcRoot:     "/proc",
		SysRoot:      "/sys",
		SysctlRoot:   "/proc/sys",
		StateDir:     "/var/lib/gleaner-agent",
		CgroupRoot:   "/sys/fs/cgroup",
		CgroupDriver: "auto",
		// Seven files per pod at 200 pods, with room: open files cost no memory the agent pays for.
		CgroupKeepOpenFiles: 4096,
		Collectors:          []string{"*"},
		Devices:             collector.DefaultDeviceOptions(),
		QoSPlugins:          []string{"*"},
		Prediction:          prediction.DefaultOptions(),
		PredictionEnabled:   true,
		Executor:            executor.DefaultOptions(),
		Eviction:            evictor.DefaultOptions(),
		RuntimeHook:         runtimehook.DefaultOptions(),
		PodSource:           PodSourceAPIServer,
		Kubelet:             statesinformer.KubeletConfig{URL: "https://127.0.0.1:10250", Interval: 10 * time.Second},
		Cache:               metriccache.DefaultConfig(),
		Report:              reporter.DefaultOptions(),
		Topology:            topologyreporter.DefaultOptions(),
		MetricsAddr:         ":9316",
		Serving:             serving.DefaultOptions(),
		HealthAddr:          ":9317",
		ConnectTimeout:      10 * time.Second,
		ShutdownTimeout:     10 * time.Second,
		Uninstall:           UninstallOptions{Restore: true, DaemonSet: "gleaner-agent", Timeout: 15 * time.Second},
	}
}

// AddFlags binds the options to flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig file; empty means $KUBECONFIG, ~/.kube/config, then in-cluster")
	fs.StringVar(&o.NodeName, "node-name", o.NodeName, "name of the node the agent runs on (default $NODE_NAME, set from the downward API)")
	fs.StringVar(&o.ProcRoot, "proc-root", o.ProcRoot, "the host's /proc")
	fs.StringVar(&o.SysRoot, "sys-root", o.SysRoot, "the host's /sys")
	fs.StringVar(&o.NetQOSDevice, "net-qos-device", o.NetQOSDevice, "the network device whose egress the netqos QoS plugin shapes (empty: the IPv4 default route's)")
	fs.StringVar(&o.SysctlRoot, "sysctl-root", o.SysctlRoot, "the host's /proc/sys, written by the sysreconcile QoS plugin (a container's own is read-only)")
	fs.StringVar(&o.StateDir, "state-dir", o.StateDir, "a directory on the node that outlives agent restarts, for the kernel values the agent replaced and the cgroup files it holds")
	fs.StringVar(&o.CgroupRoot, "cgroup-root", o.CgroupRoot, "where the host's cgroup hierarchy is mounted")
	fs.StringVar(&o.CgroupParent, "cgroup-parent", o.CgroupParent, "the kubelet's --cgroup-root, relative to the cgroup hierarchy root (empty for /)")
	fs.StringVar(&o.CgroupDriver, "cgroup-driver", o.CgroupDriver, "the kubelet's cgroup driver: systemd, cgroupfs, or auto (from the kubepods directory)")
	fs.IntVar(&o.CgroupKeepOpenFiles, "cgroup-keep-open-files", o.CgroupKeepOpenFiles, "cgroup files kept open between reads, re-read with one pread each (0: open each time)")
	fs.StringSliceVar(&o.Collectors, "collectors", o.Collectors, "collectors to run: '*' for the defaults, 'name' to add one, '-name' to leave one out (known: "+strings.Join(collectorNames(), ", ")+")")
	fs.Var(&durationMap{m: &o.CollectorIntervals}, "collector-intervals", "collection interval per collector, as name=duration pairs (e.g. podresource=2s,psi=10s)")
	fs.StringVar(&o.Devices.KubeletRootDir, "kubelet-root-dir", o.Devices.KubeletRootDir, "the kubelet's --root-dir on the node: the storage collector reports its file system, and the topology reporter asks the kubelet's CPU and memory manager policies on pod-resources/kubelet.sock under it (mounted at the same path)")
	fs.StringVar(&o.Devices.RuntimeRootDir, "runtime-root-dir", o.Devices.RuntimeRootDir, "the container runtime's root directory on the node, whose file system the storage collector reports")
	fs.IntVar(&o.Devices.CPIMaxContainers, "cpi-max-containers", o.Devices.CPIMaxContainers, "most containers the cpi collector keeps hardware counters on (two counters per CPU each)")
	fs.DurationVar(&o.Devices.ColdAge, "cold-memory-age", o.Devices.ColdAge, "how long a page must have been idle to count as cold memory (kidled kernels)")
	fs.IntVar(&o.Devices.GPUMaxDevices, "gpu-max-devices", o.Devices.GPUMaxDevices, "most GPUs the gpu collector reports")
	fs.BoolVar(&o.PredictionEnabled, "prediction", o.PredictionEnabled, "predict the prod pods' peaks; false: the NodeMetric reports no prod reclaimable resources, so the node offers no mid-* (docs/prediction.md)")
	deprecatedAlias(fs, fs.VarPF(negated{&o.PredictionEnabled}, "prediction-off", "", "true turns peak prediction off"), "--prediction=false")
	fs.DurationVar(&o.Prediction.TrainingInterval, "prediction-training-interval", o.Prediction.TrainingInterval, "how often the peak-prediction models learn the collectors' new samples")
	fs.DurationVar(&o.Prediction.ColdStart, "prediction-cold-start", o.Prediction.ColdStart, "how old a model must be before its peak counts; younger ones reclaim nothing")
	fs.DurationVar(&o.Prediction.ModelExpiry, "prediction-model-expiry", o.Prediction.ModelExpiry, "how long a prod pod may be gone before its model is dropped")
	fs.Int64Var(&o.Prediction.SafetyMarginPercent, "prediction-safety-margin-percent", o.Prediction.SafetyMarginPercent, "how much every predicted peak is raised before it is subtracted from the requests")
	fs.DurationVar(&o.Prediction.CheckpointInterval, "prediction-checkpoint-interval", o.Prediction.CheckpointInterval, "how often the models are saved under --state-dir/prediction (and once more at shutdown)")
	fs.Var(byteSize{&o.Prediction.CheckpointMaxBytes}, "prediction-checkpoint-max-size", "the most the saved models may take, as a quantity (64Mi) or bytes")
	deprecatedAlias(fs, fs.VarPF(byteSize{&o.Prediction.CheckpointMaxBytes}, "prediction-checkpoint-max-bytes", "", "the most bytes the saved models may take"), "--prediction-checkpoint-max-size")
	fs.StringSliceVar(&o.QoSPlugins, "qos-plugins", o.QoSPlugins, "QoS plugins to run: '*' for the defaults, 'name' to add one, '-name' to leave one out (known: "+strings.Join(qosPluginNames(), ", ")+")")
	fs.Var(&durationMap{m: &o.QoSPluginIntervals}, "qos-plugin-intervals", "interval per QoS plugin, as name=duration pairs (e.g. memoryevict=500ms)")
	fs.DurationVar(&o.Executor.Resync, "executor-resync", o.Executor.Resync, "how often the resource executor writes every cgroup value it holds again, undoing changes made behind its back")
	fs.IntVar(&o.Executor.AuditSize, "executor-audit-size", o.Executor.AuditSize, "cgroup writes kept in the executor's audit trail (served at /debug/executor on the metrics address)")
	fs.BoolVar(&o.Eviction.DryRun, "eviction-dry-run", o.Eviction.DryRun, "only report the evictions and local kills the QoS plugins decide (events WouldEvict, WouldKillLocally), never do them")
	fs.Float64Var(&o.Eviction.RatePerMinute, "eviction-rate", o.Eviction.RatePerMinute, "pods per minute this node may evict (and kill locally) once --eviction-burst is spent")
	fs.IntVar(&o.Eviction.Burst, "eviction-burst", o.Eviction.Burst, "pods this node may evict at once after a quiet period")
	fs.DurationVar(&o.Eviction.RetryAfter, "eviction-retry-after", o.Eviction.RetryAfter, "how long a pod whose eviction a PodDisruptionBudget refused waits before it is asked for again")
	fs.BoolVar(&o.Eviction.LocalKill, "eviction-local-kill", o.Eviction.LocalKill, "while the API server cannot be reached and memory stays above the eviction threshold, kill best-effort pods' processes on the node (the last resort)")
	fs.StringVar(&o.RuntimeHook.Mode, "runtime-hook", o.RuntimeHook.Mode, "how batch and mid pods get their cgroup limits: nri (an NRI plugin of the container runtime sets them at creation, with the reconciler behind it), reconciler (written every --runtime-reconcile-interval only) or off (docs/runtime-hook.md)")
	fs.StringVar(&o.RuntimeHook.NRISocket, "nri-socket", o.RuntimeHook.NRISocket, "the container runtime's NRI socket, for --runtime-hook=nri")
	fs.DurationVar(&o.RuntimeHook.PodWait, "nri-pod-wait", o.RuntimeHook.PodWait, "how long an NRI request waits for the agent to learn of a new pod before the container starts without adjustments (at most half the runtime's plugin request timeout)")
	fs.DurationVar(&o.RuntimeHook.ReconcileInterval, "runtime-reconcile-interval", o.RuntimeHook.ReconcileInterval, "how often the runtime hook's reconciler writes every batch and mid pod's cgroup limits (pods that started without the NRI plugin)")
	fs.BoolVar(&o.RuntimeHook.OOMScoreOrder, "oom-score-order", o.RuntimeHook.OOMScoreOrder, "give containers the oom_score_adj of their class, so that the kernel's OOM killer picks batch and free pods first, mid pods next and Burstable services last (docs/runtime-hook.md); false leaves the kubelet's values")
	fs.StringVar(&o.PodSource, "pod-source", o.PodSource, "where pods come from: apiserver (a watch on this node's pods) or kubelet (its pod list)")
	fs.StringVar(&o.Kubelet.URL, "kubelet-url", o.Kubelet.URL, "the kubelet's HTTPS endpoint, for --pod-source=kubelet")
	fs.DurationVar(&o.Kubelet.Interval, "kubelet-poll-interval", o.Kubelet.Interval, "how often the kubelet's pod list is read")
	fs.StringVar(&o.Kubelet.CAFile, "kubelet-ca-file", o.Kubelet.CAFile, "CA bundle verifying the kubelet's serving certificate; empty means the system roots")
	fs.BoolVar(&o.Kubelet.InsecureSkipTLSVerify, "kubelet-insecure-skip-tls-verify", o.Kubelet.InsecureSkipTLSVerify, "accept any kubelet serving certificate")
	fs.DurationVar(&o.Cache.Step, "metric-cache-step", o.Cache.Step, "resolution of the metric cache's fine series")
	fs.IntVar(&o.Cache.NodeSlots, "metric-cache-node-slots", o.Cache.NodeSlots, "fine samples kept per node-level series")
	fs.IntVar(&o.Cache.PodSlots, "metric-cache-pod-slots", o.Cache.PodSlots, "fine samples kept per pod or container series")
	fs.DurationVar(&o.Cache.CoarseStep, "metric-cache-coarse-step", o.Cache.CoarseStep, "resolution of the metric cache's coarse series")
	fs.IntVar(&o.Cache.CoarseSlots, "metric-cache-coarse-slots", o.Cache.CoarseSlots, "coarse samples kept per series")
	fs.Float64Var(&o.Report.MinCoverage, "report-min-coverage", o.Report.MinCoverage, "share of a window a series' samples must reach back to be reported (cold start)")
	fs.IntVar(&o.Report.MaxPods, "report-max-pods", o.Report.MaxPods, "most pods listed in NodeMetric status")
	fs.IntVar(&o.Report.MaxHostApplications, "report-max-host-applications", o.Report.MaxHostApplications, "most host applications listed in NodeMetric status")
	fs.BoolVar(&o.Topology.Enabled, "report-topology", o.Topology.Enabled, "publish the node's NUMA zones as its NodeResourceTopology (topology.node.k8s.io/v1alpha2), which the manager splits batch resources by (docs/agent.md)")
	fs.DurationVar(&o.Topology.Interval, "report-topology-interval", o.Topology.Interval, "how often the NUMA zones are computed again; the NodeResourceTopology is written only when they changed")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "address of the Prometheus /metrics endpoint; 0 disables it")
	o.Serving.AddFlags(fs)
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", o.HealthAddr, "address of /healthz and /readyz; 0 disables them")
	fs.DurationVar(&o.ConnectTimeout, "connect-timeout", o.ConnectTimeout, "how long to wait for the API server at start-up")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", o.ShutdownTimeout, "how long the modules may take to stop after a signal")
	fs.BoolVar(&o.Uninstall.Restore, "restore-on-uninstall", o.Uninstall.Restore, "when the agent stops and its DaemonSet (--daemonset) is gone or being deleted, give the node back what the QoS plugins wrote and empty --state-dir")
	fs.StringVar(&o.Uninstall.DaemonSet, "daemonset", o.Uninstall.DaemonSet, "the agent's DaemonSet, in --namespace, whose deletion is an uninstall")
	fs.StringVar(&o.Uninstall.Namespace, "namespace", o.Uninstall.Namespace, "the agent's namespace (default $POD_NAMESPACE, set from the downward API)")
	fs.DurationVar(&o.Uninstall.Timeout, "uninstall-timeout", o.Uninstall.Timeout, "how long the uninstall check and the restoration may take, within the pod's termination grace period less --shutdown-timeout")
}

// Validate reports every invalid option at once.
func (o *Options) Validate() error {
	var errs []error
	if o.NodeName == "" {
		errs = append(errs, errors.New("--node-name must be set (or $NODE_NAME, from the downward API)"))
	}
	for _, p := range []struct{ flag, v string }{
		{"--proc-root", o.ProcRoot}, {"--sys-root", o.SysRoot}, {"--sysctl-root", o.SysctlRoot}, {"--cgroup-root", o.CgroupRoot},
		{"--state-dir", o.StateDir},
	} {
		if p.v == "" {
			errs = append(errs, fmt.Errorf("%s must not be empty", p.flag))
		}
	}
	if o.CgroupKeepOpenFiles < 0 {
		errs = append(errs, fmt.Errorf("--cgroup-keep-open-files must not be negative, got %d", o.CgroupKeepOpenFiles))
	}
	if !slices.Contains([]string{"auto", "systemd", "cgroupfs"}, o.CgroupDriver) {
		errs = append(errs, fmt.Errorf("--cgroup-driver must be auto, systemd or cgroupfs, got %q", o.CgroupDriver))
	}
	errs = append(errs, o.validateModules()...)
	switch o.PodSource {
	case PodSourceAPIServer:
	case PodSourceKubelet:
		if o.Kubelet.URL == "" || o.Kubelet.Interval <= 0 {
			errs = append(errs, errors.New("--pod-source=kubelet needs --kubelet-url and a positive --kubelet-poll-interval"))
		}
	default:
		errs = append(errs, fmt.Errorf("--pod-source must be apiserver or kubelet, got %q", o.PodSource))
	}
	if err := serving.ValidateBindAddresses(serving.BindAddress{Flag: "--metrics-bind-address", Addr: o.MetricsAddr},
		serving.BindAddress{Flag: "--health-probe-bind-address", Addr: o.HealthAddr}); err != nil {
		errs = append(errs, err)
	}
	if err := o.Serving.Validate(o.MetricsAddr); err != nil {
		errs = append(errs, err)
	}
	if o.ConnectTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--connect-timeout must be positive, got %s", o.ConnectTimeout))
	}
	if o.Uninstall.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--uninstall-timeout must be positive, got %s", o.Uninstall.Timeout))
	}
	if o.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout must be positive, got %s", o.ShutdownTimeout))
	}
	if err := o.validateTrainingWindow(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validateTrainingWindow refuses a training interval longer than the metric cache's fine rings: a training round
// reads the samples of the last interval, and where the fine ring no longer holds them the cache answers with its
// coarse averages, so the models would learn averages (a true p95 of 2,000m learned as 302m) without a word. Pod
// series train the pod and prod-band models, node series the system model.
func (o *Options) validateTrainingWindow() error {
	if !o.PredictionEnabled || o.Cache.Step <= 0 || o.Prediction.TrainingInterval <= 0 {
		return nil // nothing trains, or the cache's and the prediction's own checks already refuse it
	}
	interval := o.Prediction.TrainingInterval
	var errs []error
	for _, ring := range []struct {
		flag  string
		slots int
	}{{"--metric-cache-pod-slots", o.Cache.PodSlots}, {"--metric-cache-node-slots", o.Cache.NodeSlots}} {
		if held := time.Duration(ring.slots) * o.Cache.Step; ring.slots > 0 && interval > held {
			need := (interval + o.Cache.Step - 1) / o.Cache.Step
			errs = append(errs, fmt.Errorf("--prediction-training-interval %s is longer than the %s the metric cache keeps at full resolution (%s %d x --metric-cache-step %s): training would learn %s averages instead of the samples; shorten the interval or set %s to at least %d",
				interval, held, ring.flag, ring.slots, o.Cache.Step, o.Cache.CoarseStep, ring.flag, need))
		}
	}
	return errors.Join(errs...)
}

// validateModules checks the options of the agent's modules, each of which validates its own where it can.
func (o *Options) validateModules() []error {
	ev := o.Eviction
	ev.NodeName = "checked by Validate"
	var errs []error
	for _, err := range []error{
		collector.ValidateSelection(collector.Registry(), o.Collectors, o.CollectorIntervals),
		o.Devices.Validate(),
		toggle.ValidateNamed("--qos-plugins", "--qos-plugin-intervals", qosPluginNames(), o.QoSPlugins, o.QoSPluginIntervals),
		o.RuntimeHook.Validate(),
		o.Cache.Validate(),
		o.Report.Validate(),
		o.Topology.Validate(),
		o.predictionOptions().Validate(),
	} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := ev.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--eviction-*: %w", err))
	}
	if o.Executor.Resync <= 0 {
		errs = append(errs, fmt.Errorf("--executor-resync must be positive, got %s", o.Executor.Resync))
	}
	if o.Executor.AuditSize < 1 {
		errs = append(errs, fmt.Errorf("--executor-audit-size must be at least 1, got %d", o.Executor.AuditSize))
	}
	return errs
}

func qosPluginNames() []string {
	var n []string
	for _, f := range plugins.Registry() {
		n = append(n, f.Name)
	}
	return n
}

func collectorNames() []string {
	var n []string
	for _, f := range collector.Registry() {
		n = append(n, f.Name)
	}
	return n
}

// durationMap is a flag of name=duration pairs.
type durationMap struct{ m *map[string]time.Duration }

func (d *durationMap) String() string {
	if d.m == nil || *d.m == nil {
		return ""
	}
	var pairs []string
	for k, v := range *d.m {
		pairs = append(pairs, k+"="+v.String())
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

func (d *durationMap) Set(s string) error {
	if *d.m == nil {
		*d.m = map[string]time.Duration{}
	}
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || k == "" {
			return fmt.Errorf("%q is not name=duration", pair)
		}
		dur, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		(*d.m)[k] = dur
	}
	return nil
}

func (d *durationMap) Type() string { return "name=duration,..." }

// deprecatedAlias marks f, an old spelling of a flag, deprecated in favour of use: it keeps working for one release,
// hidden from --help, with a warning when it is used. A bool's alias takes no value, as a bool flag does.
func deprecatedAlias(fs *pflag.FlagSet, f *pflag.Flag, use string) {
	if f.Value.Type() == "bool" {
		f.NoOptDefVal = "true"
	}
	_ = fs.MarkDeprecated(f.Name, "use "+use+"; the old name goes after one release") // f is in fs: no error
}

// negated is a boolean flag that sets the opposite of *b: the old negative spelling of a positive flag.
type negated struct{ b *bool }

func (n negated) String() string {
	if n.b == nil {
		return "false"
	}
	return strconv.FormatBool(!*n.b)
}

func (n negated) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*n.b = !v
	return nil
}

func (n negated) Type() string { return "bool" }

// byteSize is a size in bytes written as Kubernetes writes memory (64Mi, 1G) or as a plain number of bytes.
type byteSize struct{ v *int64 }

func (b byteSize) String() string {
	if b.v == nil {
		return "0"
	}
	return resource.NewQuantity(*b.v, resource.BinarySI).String()
}

func (b byteSize) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is no size such as 64Mi or 67108864: %w", s, err)
	}
	if q.Sign() < 0 {
		return fmt.Errorf("%q: a size must not be negative", s)
	}
	*b.v = q.Value()
	return nil
}

func (b byteSize) Type() string { return "quantity" }

// predictionOptions are the peak-prediction options with the checkpoint directory under --state-dir.
func (o *Options) predictionOptions() prediction.Options {
	p := o.Prediction
	p.CheckpointDir = filepath.Join(o.StateDir, "prediction")
	return p
}
