package runtimehook

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/gleaner-sh/gleaner/pkg/agent/executor"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// The owners the hook's executor writes are recorded under (audit trail, /debug/executor).
const (
	// OwnerNRI writes a pod's cgroup when the runtime runs its sandbox.
	OwnerNRI = "runtimehook-nri"
	// OwnerReconciler writes pods' and containers' cgroups every --runtime-reconcile-interval.
	OwnerReconciler = "runtimehook-reconciler"
)

// Options configure the hook. Fill them from flags, then call Validate.
type Options struct {
	// Mode is "nri" (the NRI plugin, with the reconciler behind it), "reconciler" (the reconciler alone) or "off".
	Mode string
	// NRISocket is the runtime's NRI socket.
	NRISocket string
	// PodWait bounds how long an NRI request waits for the states informer to learn of a pod it does not know yet;
	// never more than half the runtime's request timeout.
	PodWait time.Duration
	// ReconcileInterval is how often the reconciler walks the node's pods.
	ReconcileInterval time.Duration
	// OOMScoreOrder gives containers their class's oom_score_adj (see OOMScoreAdj); false leaves the kubelet's.
	OOMScoreOrder bool
}

// DefaultNRISocket is containerd's (and CRI-O's) default NRI socket.
const DefaultNRISocket = "/var/run/nri/nri.sock"

// DefaultOptions are NRI at the default socket with the reconciler every 10 s, and the OOM order on.
func DefaultOptions() Options {
	return Options{Mode: string(ModeNRI), NRISocket: DefaultNRISocket, PodWait: time.Second, ReconcileInterval: 10 * time.Second, OOMScoreOrder: true}
}

// Validate reports every invalid option, by flag.
func (o Options) Validate() error {
	var errs []error
	switch Mode(o.Mode) {
	case ModeNRI:
		if o.NRISocket == "" {
			errs = append(errs, errors.New("--nri-socket must be set with --runtime-hook=nri"))
		}
	case ModeReconciler, ModeOff:
	default:
		errs = append(errs, fmt.Errorf("--runtime-hook must be nri, reconciler or off, got %q", o.Mode))
	}
	if o.PodWait < 0 {
		errs = append(errs, fmt.Errorf("--nri-pod-wait must not be negative, got %s", o.PodWait))
	}
	if o.ReconcileInterval <= 0 {
		errs = append(errs, fmt.Errorf("--runtime-reconcile-interval must be positive, got %s", o.ReconcileInterval))
	}
	return errors.Join(errs...)
}

// Deps are what the hook reads and writes.
type Deps struct {
	// States are the node's pods.
	States statesinformer.States
	// Executor writes the cgroups of pods (and, for the reconciler, containers).
	Executor *executor.Executor
	// Cgroups reads the limits above a pod (cgroup v1's hierarchy rules; see fitter).
	Cgroups cgroup.Reader
	// Layout finds the kubelet's cgroup directories.
	Layout cgroup.Layout
	// CgroupVersion is the host's cgroup version.
	CgroupVersion cgroup.Version
	// Clock drives the reconciler, the reconnect backoff and the pod wait.
	Clock clock.WithTicker
	// Events, when set, receives the Warning events about pods' annotations the hook cannot use.
	Events EventRecorder
	// RuntimeLowersOOMScores says the runtime can start a container at a negative oom_score_adj
	// (RuntimeCanLowerOOMScores); false leaves negative values to the reconciler.
	RuntimeLowersOOMScores bool
}

// EventRecorder records events (*events.Writer implements it).
type EventRecorder interface {
	// Eventf records an event of type eventtype (corev1.EventTypeNormal or corev1.EventTypeWarning) on obj.
	Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

func (d Deps) check() error {
	var missing []string
	for _, dep := range []struct {
		name  string
		unset bool
	}{{"States", d.States == nil}, {"Executor", d.Executor == nil}, {"Cgroups", d.Cgroups == nil}, {"Clock", d.Clock == nil}} {
		if dep.unset {
			missing = append(missing, dep.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("building the runtime hook: missing %v", missing)
	}
	return nil
}

func (d Deps) fitter() fitter {
	return fitter{cgroups: d.Cgroups, layout: d.Layout, v1: d.CgroupVersion == cgroup.V1}
}

// Hook is the runtime hook as opts configure it: NRI and Reconciler are nil where switched off.
type Hook struct {
	// Status is the hook's state (mode, counters, /debug/runtimehook).
	Status *Status
	// NRI is the NRI plugin, with --runtime-hook=nri.
	NRI *NRI
	// Reconciler is the reconciler, unless --runtime-hook=off.
	Reconciler *Reconciler
}

// New builds the hook; opts must be valid. Its metrics are registered on reg.
func New(d Deps, opts Options, reg prometheus.Registerer) (*Hook, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	socket := ""
	if Mode(opts.Mode) == ModeNRI {
		socket = opts.NRISocket
	}
	st, err := NewStatus(opts.Mode, socket, reg, d.Clock)
	if err != nil {
		return nil, err
	}
	h := &Hook{Status: st}
	if Mode(opts.Mode) == ModeOff {
		return h, nil
	}
	factories := Features()
	if !opts.OOMScoreOrder {
		factories = slices.DeleteFunc(factories, func(f FeatureFactory) bool { return f.Name == OOMScoreFeatureName })
	}
	fs, err := NewRegistry(d, factories)
	if err != nil {
		return nil, err
	}
	h.Reconciler = NewReconciler(d, fs, st, opts.ReconcileInterval)
	if Mode(opts.Mode) == ModeNRI {
		h.NRI = NewNRI(d, fs, st, NRIOptions{Socket: opts.NRISocket, PodWait: opts.PodWait})
	}
	return h, nil
}

// updates are the executor's updates that make dir hold v's shares, quota and memory limit, and its processes v's
// oom_score_adj (cpusets are CPU suppression's to write; the hook gives them to the runtime only).
func updates(dir string, v Values, reason string) []executor.Update {
	var u []executor.Update
	if v.CPUShares > 0 {
		u = append(u, executor.Update{Dir: dir, Value: executor.CPUShares(v.CPUShares), Reason: reason})
	}
	if v.HasQuota() {
		u = append(u, executor.Update{Dir: dir, Value: executor.CPUQuota(v.CPUQuota), Reason: reason})
	}
	if v.MemoryLimit > 0 {
		u = append(u, executor.Update{Dir: dir, Value: executor.MemoryLimit(v.MemoryLimit), Reason: reason})
	}
	if v.OOMScoreAdj != nil {
		u = append(u, executor.Update{Dir: dir, Value: executor.OOMScoreAdj(*v.OOMScoreAdj), Reason: reason})
	}
	return u
}
