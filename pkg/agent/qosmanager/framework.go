package qosmanager

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/evictor"
	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/proc"
)

// Plugin is a QoS manager plugin. Every plugin also implements RunPlugin; the other interfaces are optional.
type Plugin interface {
	// Name is the plugin's name in flags, logs, events and metrics.
	Name() string
}

// RunPlugin enforces its part of the node's QoS.
type RunPlugin interface {
	Plugin
	// Run enforces once, from spec: the node's NodeSLO spec with defaults filled in, the last one the plugin
	// accepted (never nil; the defaults alone when the node has no NodeSLO yet). The Manager calls it every
	// interval, from one goroutine per plugin, never concurrently with itself. A plugin whose strategy is off does
	// nothing (and undoes what it did, if anything is left to undo). An error says what failed this round; the
	// Manager logs it, rate-limited, and calls again at the next interval.
	Run(ctx context.Context, spec *slov1alpha1.NodeSLOSpec) error
}

// ValidatingPlugin checks a NodeSLO before the plugin enforces it.
type ValidatingPlugin interface {
	Plugin
	// Validate returns an error naming every field of spec (defaults filled in) the plugin cannot enforce. The
	// Manager then keeps giving Run the last spec Validate accepted, logs the error and records a Warning event on
	// the NodeSLO.
	Validate(spec *slov1alpha1.NodeSLOSpec) error
}

// ReportingPlugin is a plugin with a condition in the NodeSLO's status, of the type Factory.Condition names.
type ReportingPlugin interface {
	Plugin
	// Asks reports whether spec (defaults filled in) turns on anything the plugin applies: the plugin has a
	// condition only then.
	Asks(spec *slov1alpha1.NodeSLOSpec) bool
}

// SteppingAside is a plugin that steps aside, without an error, where the node lacks what it needs.
type SteppingAside interface {
	// Unsupported says why the node cannot apply the plugin's strategy, as its last Run found; "" when it can.
	Unsupported() string
}

// Evictor evicts best-effort pods (*evictor.Evictor implements it; see there for every Result).
type Evictor interface {
	// Evict asks the API server to evict pod, for reason (a short CamelCase word), with message giving the numbers
	// that led to it. It refuses pods that are not best-effort. Result.Releasing says whether the pod's resources
	// may be counted as on their way out. An error wrapping evictor.ErrUnreachable means the API server did not
	// answer.
	Evict(ctx context.Context, pod *corev1.Pod, reason, message string) (evictor.Result, error)
	// KillLocally kills the best-effort pod's processes in its cgroup podDir: the last resort against memory
	// pressure while the API server cannot be reached (off with --eviction-local-kill=false).
	KillLocally(ctx context.Context, pod *corev1.Pod, podDir, reason, message string) (evictor.Result, error)
}

// PressureReporter publishes the node's memory pressure in its NodeMetric (status.memoryPressure), by which
// gleaner-manager stops offering batch pods memory on the node; *reporter.Reporter implements it.
type PressureReporter interface {
	// SetMemoryPressure makes mp (nil: none) what every NodeMetric report says from now on, without writing it now.
	SetMemoryPressure(mp *slov1alpha1.MemoryPressure)
	// WriteMemoryPressure is SetMemoryPressure that also writes mp into the NodeMetric before it returns; ctx
	// bounds the write. An error says the write failed; the reports still carry mp.
	WriteMemoryPressure(ctx context.Context, mp *slov1alpha1.MemoryPressure) error
}

// EventRecorder records Kubernetes events on objects.
type EventRecorder interface {
	// Eventf records an event of type eventtype (corev1.EventTypeNormal or corev1.EventTypeWarning) on obj.
	Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// Deps are what plugins read, write and call.
type Deps struct {
	// States is the node, its pods and its NodeSLO.
	States statesinformer.States
	// Cache holds the collectors' measurements.
	Cache metriccache.Cache
	// Executor writes cgroup values.
	Executor *executor.Executor
	// Cgroups reads cgroup files (writes go through Executor).
	Cgroups cgroup.Reader
	// Layout finds the kubelet's cgroup directories.
	Layout cgroup.Layout
	// Proc reads the node's /proc.
	Proc *proc.FS
	// Host reads the host's kernel files outside cgroups (sysctls, /sys/fs/resctrl), by the same paths relative to
	// the host root as the executor's HostFile values (writes go through Executor).
	Host HostReader
	// StateDir is a directory on the node that outlives the agent's restarts, for what a plugin must remember
	// across them (the kernel values it replaced); "" gives plugins none.
	StateDir string
	// SysRoot is the node's /sys (--sys-root), for plugins that read block devices or other kernel objects.
	SysRoot string
	// NetDevice is the network device whose outgoing traffic the netqos plugin shapes (--net-qos-device); "" for
	// the device of the IPv4 default route.
	NetDevice string
	// Evictor evicts best-effort pods.
	Evictor Evictor
	// Events records events.
	Events EventRecorder
	// Pressure publishes the node's memory pressure.
	Pressure PressureReporter
	// Clock is the plugins' clock.
	Clock clock.PassiveClock
	// Registerer receives the metrics of plugins that are prometheus.Collectors; nil registers nothing.
	Registerer prometheus.Registerer
	// Interval is how often the plugin runs (set per plugin by the Manager).
	Interval time.Duration
}

// HostReader reads the host's kernel files outside the cgroup hierarchies (*system.HostFS implements it).
type HostReader interface {
	// ReadFile returns the content of rel, a path relative to the host root ("proc/sys/vm/min_free_kbytes"),
	// without its trailing newline. A file this kernel lacks is an error wrapping system.ErrUnsupported, a missing
	// directory one wrapping fs.ErrNotExist.
	ReadFile(rel string) (string, error)
	// Path is the absolute path of rel, for reading a tree of files (the resctrl file system).
	Path(rel string) string
}

// Factory describes one plugin.
type Factory struct {
	// Name is the plugin's name.
	Name string
	// Interval is how often it runs unless --qos-plugin-intervals says otherwise.
	Interval time.Duration
	// Default says whether "*" in --qos-plugins turns it on.
	Default bool
	// Condition is the type of the plugin's condition in the NodeSLO's status (slov1alpha1.NodeSLOCPUIdle, ...);
	// the plugin implements ReportingPlugin.
	Condition string
	// New builds the plugin.
	New func(Deps) (RunPlugin, error)
}

// Need returns an error naming every dependency in what ("States", "Cache", "Executor", "Cgroups", "Proc", "Host",
// "StateDir", "Evictor", "Events", "Pressure", "Clock") that d lacks, for plugin's constructor.
func (d Deps) Need(plugin string, what ...string) error {
	has := map[string]bool{
		"States": d.States != nil, "Cache": d.Cache != nil, "Executor": d.Executor != nil, "Cgroups": d.Cgroups != nil,
		"Proc": d.Proc != nil, "Host": d.Host != nil, "StateDir": d.StateDir != "", "Evictor": d.Evictor != nil,
		"Events": d.Events != nil, "Pressure": d.Pressure != nil, "Clock": d.Clock != nil,
	}
	var missing []string
	for _, w := range what {
		ok, known := has[w]
		if !known {
			panic(fmt.Sprintf("qosmanager: plugin %s needs an unknown dependency %q", plugin, w))
		}
		if !ok {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("building the %s plugin: missing %s", plugin, strings.Join(missing, ", "))
	}
	return nil
}

// CgroupVersion is the cgroup version Cgroups reads (cgroup.FS knows it), or 0 for a reader that does not say.
func (d Deps) CgroupVersion() cgroup.Version {
	if v, ok := d.Cgroups.(interface{ Version() cgroup.Version }); ok {
		return v.Version()
	}
	return 0
}
