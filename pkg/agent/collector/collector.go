package collector

import (
	"context"
	"time"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/metrics"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/proc"
)

// Collector takes one kind of measurement and writes it into the metric cache.
type Collector interface {
	// Collect takes one round of samples and appends them with round.Append, stamped with round.Time; it reads
	// the node's pods from round.Pods. The Runner calls it at start and then every interval, from one goroutine,
	// never concurrently with itself or any other collector. Rates need two rounds: the first round of a rate only
	// remembers the counters. An error says what went wrong this round: an error wrapping system.ErrUnsupported
	// means the host lacks what the collector reads (logged once, not retried faster); other errors are logged,
	// rate-limited. A collector that measures many pods returns an error when some failed, after writing the
	// others.
	Collect(ctx context.Context, round *Round) error
}

// Deps are what collectors read from and write to.
type Deps struct {
	// Proc reads the node's /proc.
	Proc *proc.FS
	// SysRoot is the node's /sys.
	SysRoot string
	// Cgroups reads cgroup files.
	Cgroups cgroup.Reader
	// CgroupVersion is the host's cgroup version.
	CgroupVersion cgroup.Version
	// Layout finds the kubelet's cgroup directories.
	Layout cgroup.Layout
	// States is the node's pods and NodeSLO.
	States statesinformer.States
	// Cache holds the samples (collectors append theirs through the Round) and the node's static information.
	Cache metriccache.Cache
	// Metrics receives the node and pod usage gauges.
	Metrics *metrics.Metrics
	// Interval is how often the collector runs (set per collector by the Runner).
	Interval time.Duration
	// Devices configure the device and interference collectors.
	Devices DeviceOptions
}

// Factory describes one collector.
type Factory struct {
	// Name is the collector's name in flags, logs and metrics.
	Name string
	// Interval is how often it runs unless --collector-intervals says otherwise.
	Interval time.Duration
	// Default says whether "*" in --collectors turns it on.
	Default bool
	// Inputs are the collectors whose samples this one derives from, through Round.Value. They must come before
	// it in the registry, be on whenever it is, and run in each of its rounds (its interval a multiple of theirs);
	// NewRunner refuses a configuration that breaks this.
	Inputs []string
	// New builds the collector.
	New func(Deps) Collector
}

// Registry returns every collector, in the order the Runner runs them in a round. Adding a collector is one line
// here. Node, pod and host application collectors come before the system collector, which subtracts their
// samples of the same round.
func Registry() []Factory {
	return []Factory{
		{Name: NodeInfoName, Interval: time.Minute, Default: true, New: NewNodeInfo},
		{Name: NodeResourceName, Interval: time.Second, Default: true, New: NewNodeResource},
		{Name: PodResourceName, Interval: time.Second, Default: true, New: NewPodResource},
		{Name: HostApplicationName, Interval: time.Second, Default: true, New: NewHostApplication},
		{Name: SystemResourceName, Interval: time.Second, Default: true, New: NewSystemResource, Inputs: []string{NodeResourceName, PodResourceName, HostApplicationName}},
		{Name: BEResourceName, Interval: time.Second, Default: true, New: NewBEResource},
		{Name: PodThrottledName, Interval: time.Second, Default: true, New: NewPodThrottled},
		{Name: PageCacheName, Interval: 5 * time.Second, Default: true, New: NewPageCache},
		{Name: PSIName, Interval: 5 * time.Second, Default: true, New: NewPSI},
		{Name: StorageName, Interval: time.Minute, Default: true, New: NewStorage},
		{Name: PodIOName, Interval: 5 * time.Second, Default: true, New: NewPodIO},
		{Name: CPIName, Interval: 10 * time.Second, Default: false, New: NewCPI},
		{Name: ColdMemoryName, Interval: 10 * time.Second, Default: true, New: NewColdMemory},
		{Name: GPUName, Interval: 10 * time.Second, Default: true, New: NewGPU},
	}
}
