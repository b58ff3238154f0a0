package runtimehook

import (
	"errors"
	"fmt"

	"k8s.io/utils/cpuset"

	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// Feature is one concern the hook applies to pods and containers (the batch and mid resources, the best-effort
// cpuset, ...). The core asks every feature for its values at each Stage, merges them in the registry's order and
// delivers them: as NRI adjustments and updates, or through the executor. A feature only computes values; it never
// writes. Every feature also implements PodFeature, ContainerFeature or both.
type Feature interface {
	// Name is the feature's name in the registry and in logs.
	Name() string
}

// PodFeature gives values for pods' own cgroups.
type PodFeature interface {
	Feature
	// PodValues are the values of t's pod cgroup (t.Container is ""); zero Values leave it alone. It is called at
	// StageRunPodSandbox and StageReconcile, possibly concurrently, and must not block: it runs inside the runtime's
	// request. An error fails the request open (see ErrContainerUnknown).
	PodValues(t Target) (Values, error)
}

// ContainerFeature gives values for containers' cgroups.
type ContainerFeature interface {
	Feature
	// ContainerValues are the values of container t.Container of t's pod at t.Stage; zero Values leave it alone. It
	// is called at StageCreateContainer, StageStartContainer, StageUpdateContainer and StageReconcile, possibly
	// concurrently, and must not block. An error fails the request open: the container gets nothing from any feature.
	ContainerValues(t Target) (Values, error)
}

// ErrContainerUnknown is what a feature returns for a container its pod's spec does not have (a spec the agent has
// not seen yet); the request is counted as ResultContainerUnknown.
var ErrContainerUnknown = errors.New("the pod's spec has no such container")

// Stage is where in a pod's life the hook is asked for values.
type Stage int

// The stages. The NRI ones come from the runtime's requests, in this order for a new container; StageReconcile is
// every reconciler round.
const (
	// StageRunPodSandbox: the pod's cgroup exists (the kubelet made it), no container does yet. Pod values.
	StageRunPodSandbox Stage = iota
	// StageCreateContainer: the container's spec is being made; its values become the adjustment runc creates its
	// cgroup with, when the kubelet starts it, so whatever a cgroup above allows may have changed by then.
	StageCreateContainer
	// StageStartContainer: the container's cgroup exists and its process has not run its first instruction.
	StageStartContainer
	// StageUpdateContainer: the runtime updates a running container (a resize, the CPU manager's cpusets).
	StageUpdateContainer
	// StageReconcile: the reconciler writes a pod's cgroup and its running containers' in one executor batch.
	StageReconcile
)

func (s Stage) String() string {
	switch s {
	case StageRunPodSandbox:
		return "RunPodSandbox"
	case StageCreateContainer:
		return "CreateContainer"
	case StageStartContainer:
		return "StartContainer"
	case StageUpdateContainer:
		return "UpdateContainer"
	case StageReconcile:
		return "Reconcile"
	}
	return fmt.Sprintf("Stage(%d)", int(s))
}

// Target is the pod or container a feature is asked about.
type Target struct {
	// Stage is where the hook is.
	Stage Stage
	// Pod is the pod, as the states informer has it.
	Pod *statesinformer.PodMeta
	// PodDir is the pod's cgroup.
	PodDir string
	// Container is the container's name; "" when the pod's own cgroup is asked about.
	Container string
	// RequestedCPUs is the cpuset the runtime asks for the container at StageCreateContainer and
	// StageUpdateContainer ("" for none, and at the other stages).
	RequestedCPUs string
}

// Values are what features set on one pod or container cgroup. A zero field is one left as the kubelet and the
// runtime set it: there is no such thing as zero shares, a zero quota or a zero memory limit.
type Values struct {
	// CPUShares is cpu.shares (cpu.weight on cgroup v2, converted by the writer).
	CPUShares uint64
	// CPUQuota is the CFS quota and period; a Quota of zero or less leaves the kubelet's.
	CPUQuota cgroup.CPUQuota
	// MemoryLimit is the memory limit in bytes.
	MemoryLimit int64
	// CPUs is the container's cpuset; containers only, at StageCreateContainer and StageUpdateContainer.
	CPUs cpuset.CPUSet
	// OOMScoreAdj is the oom_score_adj of the container's processes; containers only, at StageCreateContainer and
	// StageReconcile; nil leaves the kubelet's.
	OOMScoreAdj *int
}

// Empty reports whether v sets nothing.
func (v Values) Empty() bool {
	return v.CPUShares == 0 && !v.HasQuota() && v.MemoryLimit <= 0 && v.CPUs.IsEmpty() && v.OOMScoreAdj == nil
}

// HasQuota reports whether v sets a CFS quota.
func (v Values) HasQuota() bool { return v.CPUQuota.Quota > 0 && v.CPUQuota.Period > 0 }

// merge is v with the fields o sets replaced by o's.
func (v Values) merge(o Values) Values {
	if o.CPUShares > 0 {
		v.CPUShares = o.CPUShares
	}
	if o.HasQuota() {
		v.CPUQuota = o.CPUQuota
	}
	if o.MemoryLimit > 0 {
		v.MemoryLimit = o.MemoryLimit
	}
	if !o.CPUs.IsEmpty() {
		v.CPUs = o.CPUs
	}
	if o.OOMScoreAdj != nil {
		v.OOMScoreAdj = o.OOMScoreAdj
	}
	return v
}

// FeatureFactory describes one feature of the registry.
type FeatureFactory struct {
	// Name is the feature's name; the feature New builds must report the same.
	Name string
	// New builds the feature from the hook's dependencies.
	New func(Deps) (Feature, error)
}

// Registry is the hook's features, built, in registry order; the NRI plugin and the reconciler ask the same one.
type Registry struct {
	names     []string
	pod       []PodFeature
	container []ContainerFeature
}

// NewRegistry builds the features of factories, in order. A name registered twice, a feature that reports another
// name than its factory's, or one that gives neither pod nor container values is an error.
func NewRegistry(d Deps, factories []FeatureFactory) (*Registry, error) {
	fs := &Registry{}
	seen := map[string]bool{}
	for _, f := range factories {
		if f.Name == "" || f.New == nil {
			return nil, fmt.Errorf("building the runtime hook: a feature factory without a name or constructor (%q)", f.Name)
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("building the runtime hook: feature %q is registered twice", f.Name)
		}
		seen[f.Name] = true
		ft, err := f.New(d)
		if err != nil {
			return nil, fmt.Errorf("building the runtime hook's feature %q: %w", f.Name, err)
		}
		if ft.Name() != f.Name {
			return nil, fmt.Errorf("building the runtime hook: feature %q calls itself %q", f.Name, ft.Name())
		}
		pf, isPod := ft.(PodFeature)
		cf, isContainer := ft.(ContainerFeature)
		if !isPod && !isContainer {
			return nil, fmt.Errorf("building the runtime hook: feature %q gives neither pod nor container values", f.Name)
		}
		fs.names = append(fs.names, f.Name)
		if isPod {
			fs.pod = append(fs.pod, pf)
		}
		if isContainer {
			fs.container = append(fs.container, cf)
		}
	}
	return fs, nil
}

// Names are the features' names, in order.
func (fs *Registry) Names() []string { return fs.names }

// podValues are the merged pod values of every pod feature for t.
func (fs *Registry) podValues(t Target) (Values, error) {
	var v Values
	for _, f := range fs.pod {
		fv, err := f.PodValues(t)
		if err != nil {
			return Values{}, fmt.Errorf("feature %s: %w", f.Name(), err)
		}
		v = v.merge(fv)
	}
	return v, nil
}

// containerValues are the merged container values of every container feature for t.
func (fs *Registry) containerValues(t Target) (Values, error) {
	var v Values
	for _, f := range fs.container {
		fv, err := f.ContainerValues(t)
		if err != nil {
			return Values{}, fmt.Errorf("feature %s: %w", f.Name(), err)
		}
		v = v.merge(fv)
	}
	return v, nil
}
