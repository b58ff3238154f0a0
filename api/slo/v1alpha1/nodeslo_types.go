package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NodeSLO is the QoS strategy gleaner-agent enforces on one node: the cluster strategy of the slo-controller-config
// ConfigMap overlaid by the first node strategy whose selector matches the node. gleaner-manager writes it; the agent
// watches it and keeps enforcing the last one it saw when the API server is unreachable.
//
// Every field is optional; a field left out means the agent's default (docs/configuration.md lists them), so the
// object only shows what a user configured.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nslo,categories=gleaner
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Applied")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeSLO struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the node's merged strategy.
	Spec NodeSLOSpec `json:"spec,omitempty"`
	// Status is what the agent on the node applies of the spec.
	Status NodeSLOStatus `json:"status,omitempty"`
}

// NodeSLOSpec is a node's merged QoS strategy. Field names are those of Koordinator's NodeSLO, so a strategy written
// for it reads the same here.
type NodeSLOSpec struct {
	// ResourceUsedThresholdWithBE holds the thresholds at which best-effort pods are suppressed and evicted
	// (from the ConfigMap key resource-threshold-config).
	// +optional
	ResourceUsedThresholdWithBE *ResourceThresholdStrategy `json:"resourceUsedThresholdWithBE,omitempty"`

	// ResourceQOSStrategy holds the per-class CPU, memory, block I/O and cache QoS (from resource-qos-config).
	// +optional
	ResourceQOSStrategy *ResourceQOSStrategy `json:"resourceQOSStrategy,omitempty"`

	// CPUBurstStrategy configures CFS burst and quota burst (from cpu-burst-config).
	// +optional
	CPUBurstStrategy *CPUBurstStrategy `json:"cpuBurstStrategy,omitempty"`

	// SystemStrategy holds node-wide kernel settings (from system-config).
	// +optional
	SystemStrategy *SystemStrategy `json:"systemStrategy,omitempty"`

	// HostApplications are processes outside Kubernetes whose usage the agent measures and whose cgroups it manages
	// (from host-application-config).
	// +optional
	// +listType=map
	// +listMapKey=name
	HostApplications []HostApplicationSpec `json:"hostApplications,omitempty"`

	// Extensions carries settings of plugins outside this API, as free-form JSON keyed by plugin name.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Extensions *runtime.RawExtension `json:"extensions,omitempty"`
}

// CPUSuppressPolicy is how best-effort pods' CPU is suppressed.
// +kubebuilder:validation:Enum=cpuset;cfsQuota
type CPUSuppressPolicy string

const (
	// CPUSuppressCPUSet confines best-effort pods to fewer cores through cpuset.cpus.
	CPUSuppressCPUSet CPUSuppressPolicy = "cpuset"
	// CPUSuppressCFSQuota caps best-effort pods' CPU time through the CFS quota of the best-effort cgroup.
	CPUSuppressCFSQuota CPUSuppressPolicy = "cfsQuota"
)

// CPUEvictPolicy is what CPU-satisfaction eviction divides the best-effort pods' CPU requests into.
// +kubebuilder:validation:Enum=evictByRealLimit;evictByAllocatable
type CPUEvictPolicy string

const (
	// CPUEvictByRealLimit measures satisfaction against the CPU suppression leaves best-effort pods now.
	CPUEvictByRealLimit CPUEvictPolicy = "evictByRealLimit"
	// CPUEvictByAllocatable measures it against the node's allocatable kubernetes.io/batch-cpu: what the node
	// offers batch pods, whatever suppression does at the moment.
	CPUEvictByAllocatable CPUEvictPolicy = "evictByAllocatable"
)

// ResourceThresholdStrategy holds the node-usage thresholds that protect latency-sensitive pods from best-effort ones.
type ResourceThresholdStrategy struct {
	// Enable turns every threshold-based strategy on or off. When on, CPU suppression and memory eviction run, and
	// CPU eviction and allocatable eviction run where their percents are set. Default false.
	// +optional
	Enable *bool `json:"enable,omitempty"`

	// CPUSuppressThresholdPercent is the node CPU utilisation, percent of the node's CPU, above which best-effort
	// pods are suppressed. Default 65.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	CPUSuppressThresholdPercent *int64 `json:"cpuSuppressThresholdPercent,omitempty"`

	// CPUSuppressPolicy is how suppression is applied. Default cpuset.
	// +optional
	CPUSuppressPolicy CPUSuppressPolicy `json:"cpuSuppressPolicy,omitempty"`

	// CPUSuppressMinPercent is the least CPU, percent of the node's CPU, that suppression leaves best-effort pods,
	// however busy the node's services are, so that they are slowed rather than stopped (the cpuset policy also
	// never leaves fewer than two CPUs). Default 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	CPUSuppressMinPercent *int64 `json:"cpuSuppressMinPercent,omitempty"`

	// MemoryEvictThresholdPercent is the node memory utilisation, percent of the node's memory, above which
	// best-effort pods are evicted. Default 70.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MemoryEvictThresholdPercent *int64 `json:"memoryEvictThresholdPercent,omitempty"`

	// MemoryEvictLowerPercent is the utilisation eviction brings memory back under. Default
	// MemoryEvictThresholdPercent - 2.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MemoryEvictLowerPercent *int64 `json:"memoryEvictLowerPercent,omitempty"`

	// MemoryEvictHoldSeconds is how long after the node's memory use was last above MemoryEvictThresholdPercent
	// the node stays in memory pressure (NodeMetric status.memoryPressure): until then gleaner-manager offers batch
	// pods no more kubernetes.io/batch-memory than those already there request, so that a pod evicted for memory
	// is not placed on the node again while it would be evicted again (as the kubelet's
	// --eviction-pressure-transition-period holds its MemoryPressure condition). 0..3600. Default 300. Gleaner's
	// own key.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	MemoryEvictHoldSeconds *int64 `json:"memoryEvictHoldSeconds,omitempty"`

	// CPUEvictBESatisfactionUpperPercent is the best-effort CPU satisfaction (real limit / request, percent) that
	// CPU eviction restores before it stops.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	CPUEvictBESatisfactionUpperPercent *int64 `json:"cpuEvictBESatisfactionUpperPercent,omitempty"`

	// CPUEvictBESatisfactionLowerPercent is the best-effort CPU satisfaction below which CPU eviction starts (when
	// CPUEvictBEUsageThresholdPercent is also reached). Unset disables CPU eviction.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	CPUEvictBESatisfactionLowerPercent *int64 `json:"cpuEvictBESatisfactionLowerPercent,omitempty"`

	// CPUEvictBEUsageThresholdPercent is the best-effort CPU utilisation (usage / real limit, percent) at or above
	// which CPU eviction may start. Default 90.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	CPUEvictBEUsageThresholdPercent *int64 `json:"cpuEvictBEUsageThresholdPercent,omitempty"`

	// CPUEvictPolicy is what CPU satisfaction divides the best-effort requests into: evictByRealLimit (the CPU
	// suppression leaves them now) or evictByAllocatable (the node's allocatable batch-cpu, as Koordinator's key of
	// the same name). Default evictByRealLimit.
	// +optional
	CPUEvictPolicy CPUEvictPolicy `json:"cpuEvictPolicy,omitempty"`

	// CPUEvictTimeWindowSeconds is the window the CPU eviction averages its inputs over, 1..3600 (the agent's metric
	// cache keeps one hour). Default 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	CPUEvictTimeWindowSeconds *int64 `json:"cpuEvictTimeWindowSeconds,omitempty"`

	// EvictEnabledPriorityThreshold limits memory eviction and CPU-satisfaction eviction to pods whose
	// spec.priority (0 when unset) is at most this value, e.g. 5999 for batch and free pods only, which keeps the
	// mid tier out of them. Unset: every best-effort pod, and for memory every mid-tier pod after them. Koordinator's
	// key; unlike Koordinator, a higher value never makes a service evictable: only best-effort and mid-tier pods
	// ever are.
	// +optional
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	EvictEnabledPriorityThreshold *int64 `json:"evictEnabledPriorityThreshold,omitempty"`

	// MemoryEvictPressurePercent turns on eviction by pressure stall for memory: when the share of time the tasks of
	// a service stalled on memory (the kernel's pressure stall information, "some", averaged over
	// PressureEvictWindowSeconds) is at or above this percent, the agent evicts one best-effort pod, then mid-tier
	// pods, at a time, however little of the node's memory is used. Which stall counts: each protected pod's own on
	// cgroup v2 (except a pod at its own memory limit, whose stall batch work does not cause); the node's on cgroup
	// v1, which has no per-cgroup stall. Unset (no default): off. Gleaner's own key.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MemoryEvictPressurePercent *int64 `json:"memoryEvictPressurePercent,omitempty"`

	// CPUEvictPressurePercent is MemoryEvictPressurePercent for CPU stall (tasks runnable but waiting for a CPU).
	// cgroup v2 only: on v1 the node's CPU stall includes best-effort pods waiting behind the services, which is
	// what suppression asks of them, so it says nothing about the services; the agent logs that once and does not
	// act on it. Unset (no default): off. Gleaner's own key.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	CPUEvictPressurePercent *int64 `json:"cpuEvictPressurePercent,omitempty"`

	// PressureEvictWindowSeconds is the window eviction by pressure stall averages the stall over, and how long it
	// waits after a pod it evicted is gone before it judges the stall again, 1..300 (the agent's metric cache keeps
	// per-second samples for 300 s). Default 10.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=300
	PressureEvictWindowSeconds *int64 `json:"pressureEvictWindowSeconds,omitempty"`

	// CPUAllocatableEvictThresholdPercent is the share, percent of the node's allocatable kubernetes.io/batch-cpu
	// (and, separately, kubernetes.io/mid-cpu), that the requests of the node's pods of that tier may reach before
	// allocatable eviction evicts some of them: the tier's allocatable shrinks when the services grow, and the pods
	// already there then hold more than the node offers. It may be above 100 (up to 1000): Koordinator's own
	// example, 110 with a lower percent of 100, evicts only once the requests exceed the offer by a tenth, and brings
	// them back to it. Unset (no default) turns CPU allocatable eviction off; with it set,
	// CPUAllocatableEvictLowerPercent must be set too.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	CPUAllocatableEvictThresholdPercent *int64 `json:"cpuAllocatableEvictThresholdPercent,omitempty"`

	// CPUAllocatableEvictLowerPercent is the share of the tier's allocatable CPU that allocatable eviction brings
	// the requests back to (at or below) before it stops; not above CPUAllocatableEvictThresholdPercent. No default.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	CPUAllocatableEvictLowerPercent *int64 `json:"cpuAllocatableEvictLowerPercent,omitempty"`

	// MemoryAllocatableEvictThresholdPercent is CPUAllocatableEvictThresholdPercent for kubernetes.io/batch-memory
	// and kubernetes.io/mid-memory. Unset (no default) turns memory allocatable eviction off.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MemoryAllocatableEvictThresholdPercent *int64 `json:"memoryAllocatableEvictThresholdPercent,omitempty"`

	// MemoryAllocatableEvictLowerPercent is CPUAllocatableEvictLowerPercent for memory. No default.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MemoryAllocatableEvictLowerPercent *int64 `json:"memoryAllocatableEvictLowerPercent,omitempty"`

	// AllocatableEvictPriorityThreshold limits allocatable eviction to pods whose spec.priority (0 when unset) is at
	// most this value, e.g. 5999 for batch and free pods only. Unset: every best-effort and mid-tier pod that
	// requests the resource may go.
	// +optional
	// +kubebuilder:validation:Minimum=-2147483648
	// +kubebuilder:validation:Maximum=2147483647
	AllocatableEvictPriorityThreshold *int64 `json:"allocatableEvictPriorityThreshold,omitempty"`
}

// ResourceQOSStrategy is the QoS of each class of pods on a node.
type ResourceQOSStrategy struct {
	// LSRClass applies to pods of QoS class LSR.
	// +optional
	LSRClass *ResourceQOS `json:"lsrClass,omitempty"`
	// LSClass applies to pods of QoS class LS.
	// +optional
	LSClass *ResourceQOS `json:"lsClass,omitempty"`
	// BEClass applies to pods of QoS class BE.
	// +optional
	BEClass *ResourceQOS `json:"beClass,omitempty"`
	// SystemClass applies to pods of QoS class SYSTEM and to system host applications.
	// +optional
	SystemClass *ResourceQOS `json:"systemClass,omitempty"`
}

// ResourceQOS is the QoS of one class.
type ResourceQOS struct {
	// CPUQOS configures CPU scheduling priority.
	// +optional
	CPUQOS *CPUQOSCfg `json:"cpuQOS,omitempty"`
	// MemoryQOS configures memory protection and throttling.
	// +optional
	MemoryQOS *MemoryQOSCfg `json:"memoryQOS,omitempty"`
	// BlkIOQOS configures block I/O limits and weights.
	// +optional
	BlkIOQOS *BlkIOQOSCfg `json:"blkioQOS,omitempty"`
	// ResctrlQOS configures last-level cache and memory bandwidth partitioning (Intel RDT / AMD QoS).
	// +optional
	ResctrlQOS *ResctrlQOSCfg `json:"resctrlQOS,omitempty"`
	// NetworkQOS configures the class's share of the node's egress bandwidth (lsClass, beClass and systemClass; LSR
	// pods share the LS class's, so lsrClass may not set it).
	// +optional
	NetworkQOS *NetworkQOSCfg `json:"networkQOS,omitempty"`
}

// CPUQOSCfg turns CPU QoS on or off for a class and sets its parameters.
type CPUQOSCfg struct {
	// Enable turns CPU QoS on; off resets the class's cgroups to the kernel defaults. Default true for BE (cpu.idle
	// where the kernel has it), false for the other classes.
	// +optional
	Enable *bool `json:"enable,omitempty"`
	// CPUQOS holds the parameters.
	CPUQOS `json:",inline"`
}

// CPUQOS are CPU scheduling parameters.
type CPUQOS struct {
	// GroupIdentity is the scheduling priority level, from -1 (lowest) to 2 (highest). It needs a kernel with group
	// identity (Anolis OS); elsewhere the agent uses cpu.idle for -1 where the kernel has it.
	// +optional
	// +kubebuilder:validation:Minimum=-1
	// +kubebuilder:validation:Maximum=2
	GroupIdentity *int64 `json:"groupIdentity,omitempty"`
}

// MemoryQOSCfg turns memory QoS on or off for a class and sets its parameters.
type MemoryQOSCfg struct {
	// Enable turns memory QoS on; off resets the class's cgroups to the kernel defaults. Default false.
	// +optional
	Enable *bool `json:"enable,omitempty"`
	// MemoryQOS holds the parameters.
	MemoryQOS `json:",inline"`
}

// MemoryQOS are memory cgroup parameters. memory.min, memory.low and memory.high need cgroup v2 (or a kernel that
// backports them to v1); the agent reports once that it cannot set them and leaves them alone.
type MemoryQOS struct {
	// MinLimitPercent sets memory.min to this percentage of the container's memory request. Default 0 (off).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MinLimitPercent *int64 `json:"minLimitPercent,omitempty"`
	// LowLimitPercent sets memory.low to this percentage of the memory request. Default 0 (off).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	LowLimitPercent *int64 `json:"lowLimitPercent,omitempty"`
	// ThrottlingPercent sets memory.high to this percentage of the memory limit. Default 0 (off).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	ThrottlingPercent *int64 `json:"throttlingPercent,omitempty"`
	// WmarkRatio is the asynchronous reclaim watermark, percent of the limit (Anolis OS). Default 95.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	WmarkRatio *int64 `json:"wmarkRatio,omitempty"`
	// WmarkScalePermill is the share of memory, per mille, one asynchronous reclaim frees (Anolis OS). Default 20.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	WmarkScalePermill *int64 `json:"wmarkScalePermill,omitempty"`
	// WmarkMinAdj adjusts the global minimum watermark for the class, percent, -25..50 (Anolis OS). Default -25 for
	// LSR and LS, 50 for BE.
	// +optional
	// +kubebuilder:validation:Minimum=-25
	// +kubebuilder:validation:Maximum=50
	WmarkMinAdj *int64 `json:"wmarkMinAdj,omitempty"`
	// PriorityEnable turns memcg reclaim priority on (1) or off (0) (Anolis OS). Default 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	PriorityEnable *int64 `json:"priorityEnable,omitempty"`
	// Priority is the memcg reclaim priority, 0..12 (Anolis OS). Default 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=12
	Priority *int64 `json:"priority,omitempty"`
	// OomKillGroup makes the OOM killer kill the whole cgroup (1) or one task (0). Default 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	OomKillGroup *int64 `json:"oomKillGroup,omitempty"`
}

// BlkIOQOSCfg turns block I/O QoS on or off for a class and sets its parameters.
type BlkIOQOSCfg struct {
	// Enable turns block I/O QoS on. Default false.
	// +optional
	Enable *bool `json:"enable,omitempty"`
	// BlkIOQOS holds the parameters.
	BlkIOQOS `json:",inline"`
}

// BlkIOQOS lists the block devices and their limits.
type BlkIOQOS struct {
	// Blocks are the devices to limit.
	// +optional
	Blocks []BlockCfg `json:"blocks,omitempty"`
}

// BlockType says how a BlockCfg names its device.
// +kubebuilder:validation:Enum=device;volumegroup;podvolume
type BlockType string

const (
	// BlockDevice names a device node, such as /dev/vda.
	BlockDevice BlockType = "device"
	// BlockVolumeGroup names an LVM volume group.
	BlockVolumeGroup BlockType = "volumegroup"
	// BlockPodVolume names a pod volume.
	BlockPodVolume BlockType = "podvolume"
)

// BlockCfg is the I/O configuration of one device.
type BlockCfg struct {
	// Name is the device, volume group or volume, as Type says.
	Name string `json:"name"`
	// Type says what Name is.
	Type BlockType `json:"type"`
	// IOCfg holds the limits.
	IOCfg IOCfg `json:"ioCfg"`
}

// IOCfg are block I/O limits; unset means unlimited.
type IOCfg struct {
	// ReadIOPS caps read operations per second.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ReadIOPS *int64 `json:"readIOPS,omitempty"`
	// WriteIOPS caps write operations per second.
	// +optional
	// +kubebuilder:validation:Minimum=0
	WriteIOPS *int64 `json:"writeIOPS,omitempty"`
	// ReadBPS caps read bytes per second.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ReadBPS *int64 `json:"readBPS,omitempty"`
	// WriteBPS caps write bytes per second.
	// +optional
	// +kubebuilder:validation:Minimum=0
	WriteBPS *int64 `json:"writeBPS,omitempty"`
	// IOWeightPercent is the proportional I/O weight, 1..100, percent of the default weight.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	IOWeightPercent *int64 `json:"ioWeightPercent,omitempty"`
}

// ResctrlQOSCfg turns resctrl QoS on or off for a class and sets its parameters.
type ResctrlQOSCfg struct {
	// Enable turns resctrl QoS on. Default false.
	// +optional
	Enable *bool `json:"enable,omitempty"`
	// ResctrlQOS holds the parameters.
	ResctrlQOS `json:",inline"`
}

// ResctrlQOS partitions the last-level cache and memory bandwidth.
type ResctrlQOS struct {
	// CATRangeStartPercent is where the class's share of the L3 cache ways starts. Default 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	CATRangeStartPercent *int64 `json:"catRangeStartPercent,omitempty"`
	// CATRangeEndPercent is where it ends. Default 100 (30 for BE).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	CATRangeEndPercent *int64 `json:"catRangeEndPercent,omitempty"`
	// MBAPercent is the class's share of memory bandwidth. Default 100.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MBAPercent *int64 `json:"mbaPercent,omitempty"`
}

// NetworkQOSCfg turns network QoS on or off for a class and sets its parameters.
type NetworkQOSCfg struct {
	// Enable turns network QoS on for the class: its pods' egress traffic goes through the class's share of the
	// node's bandwidth. Default false.
	// +optional
	Enable *bool `json:"enable,omitempty"`
	// NetworkQOS holds the parameters.
	NetworkQOS `json:",inline"`
}

// NetworkQOS is a class's bandwidth. Each value is an integer, a percentage of systemStrategy.totalNetworkBandwidth
// (0..100), or a string, a bandwidth in bits per second written as a Kubernetes quantity ("100M" is 100 Mbit/s).
type NetworkQOS struct {
	// IngressRequest is the bandwidth guaranteed to the class's incoming traffic. Accepted for Koordinator's
	// configurations; the agent does not shape incoming traffic (docs/qos.md). Default 0.
	// +optional
	// +kubebuilder:validation:XIntOrString
	IngressRequest *intstr.IntOrString `json:"ingressRequest,omitempty"`
	// IngressLimit is the most bandwidth the class's incoming traffic may take. Accepted, not enforced, as
	// IngressRequest. Default 100 (%).
	// +optional
	// +kubebuilder:validation:XIntOrString
	IngressLimit *intstr.IntOrString `json:"ingressLimit,omitempty"`
	// EgressRequest is the bandwidth guaranteed to the class's outgoing traffic when every class wants more than it
	// has. Default 0 (the class gets 1 % of the total as its guarantee).
	// +optional
	// +kubebuilder:validation:XIntOrString
	EgressRequest *intstr.IntOrString `json:"egressRequest,omitempty"`
	// EgressLimit is the most bandwidth the class's outgoing traffic may take, even when the link is idle. Default
	// 100 (%).
	// +optional
	// +kubebuilder:validation:XIntOrString
	EgressLimit *intstr.IntOrString `json:"egressLimit,omitempty"`
}

// CPUBurstPolicy selects which CPU burst mechanisms run.
// +kubebuilder:validation:Enum=none;cpuBurstOnly;cfsQuotaBurstOnly;auto
type CPUBurstPolicy string

const (
	// CPUBurstNone turns CPU burst off.
	CPUBurstNone CPUBurstPolicy = "none"
	// CPUBurstOnly uses the kernel's CFS burst (cpu.cfs_burst_us / cpu.max.burst) only.
	CPUBurstOnly CPUBurstPolicy = "cpuBurstOnly"
	// CFSQuotaBurstOnly raises cfs quota temporarily while the node is not overloaded, and nothing else.
	CFSQuotaBurstOnly CPUBurstPolicy = "cfsQuotaBurstOnly"
	// CPUBurstAuto uses both.
	CPUBurstAuto CPUBurstPolicy = "auto"
)

// CPUBurstStrategy configures CPU burst on a node.
type CPUBurstStrategy struct {
	// CPUBurstConfig holds the per-pod parameters.
	CPUBurstConfig `json:",inline"`
	// SharePoolThresholdPercent is the utilisation of the shared CPU pool above which bursting stops and quotas
	// return to their limits. Default 50.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	SharePoolThresholdPercent *int64 `json:"sharePoolThresholdPercent,omitempty"`
}

// CPUBurstConfig are the CPU burst parameters a pod may also set for itself.
type CPUBurstConfig struct {
	// Policy selects the mechanisms. Default none.
	// +optional
	Policy CPUBurstPolicy `json:"policy,omitempty"`
	// CPUBurstPercent sets cpu.cfs_burst_us to this percentage of the CPU limit's quota, 0..10000. Default 1000.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	CPUBurstPercent *int64 `json:"cpuBurstPercent,omitempty"`
	// CFSQuotaBurstPercent is how far, percent of the limit, quota burst may raise cpu.cfs_quota_us, 100..10000.
	// Default 300.
	// +optional
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=10000
	CFSQuotaBurstPercent *int64 `json:"cfsQuotaBurstPercent,omitempty"`
	// CFSQuotaBurstPeriodSeconds is the longest one quota burst may last, up to 86400 (a day); -1 means no limit.
	// Default -1.
	// +optional
	// +kubebuilder:validation:Minimum=-1
	// +kubebuilder:validation:Maximum=86400
	CFSQuotaBurstPeriodSeconds *int64 `json:"cfsQuotaBurstPeriodSeconds,omitempty"`
}

// SystemStrategy holds node-wide kernel settings.
type SystemStrategy struct {
	// Enable turns the settings on: the agent writes them and records the values they replace. Off (the default)
	// writes nothing, and puts back the values the agent recorded when it was on. Default false.
	// +optional
	Enable *bool `json:"enable,omitempty"`
	// MinFreeKbytesFactor sets vm.min_free_kbytes = factor x node memory (KiB) / 10000, 1..1000 (0.01 % to 10 % of
	// memory: 0 would leave the kernel no reserve for atomic allocations). Default 100.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MinFreeKbytesFactor *int64 `json:"minFreeKbytesFactor,omitempty"`
	// WatermarkScaleFactor sets vm.watermark_scale_factor, 10..1000 (the kernel takes 1..1000, newer kernels up
	// to 3000). Default 150.
	// +optional
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=1000
	WatermarkScaleFactor *int64 `json:"watermarkScaleFactor,omitempty"`
	// MemcgReapBackGround turns the background reaper of orphan memory cgroups on (1) or off (0) (Anolis OS).
	// Default 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	MemcgReapBackGround *int64 `json:"memcgReapBackGround,omitempty"`
	// TotalNetworkBandwidth is the node's egress bandwidth in bits per second ("10G"), which the classes' network
	// QoS percentages are of. Unset: the link speed the kernel reports for the shaped device, where it reports one.
	// Unlike the settings above, it applies whether or not Enable is on.
	// +optional
	TotalNetworkBandwidth *resource.Quantity `json:"totalNetworkBandwidth,omitempty"`
}

// CgroupBaseType is the cgroup directory a host application's path is relative to.
// +kubebuilder:validation:Enum=CgroupRoot;Kubepods;KubepodsBurstable;KubepodsBesteffort
type CgroupBaseType string

const (
	// CgroupBaseRoot is the cgroup root.
	CgroupBaseRoot CgroupBaseType = "CgroupRoot"
	// CgroupBaseKubepods is the kubepods cgroup.
	CgroupBaseKubepods CgroupBaseType = "Kubepods"
	// CgroupBaseKubepodsBurstable is kubepods' burstable cgroup.
	CgroupBaseKubepodsBurstable CgroupBaseType = "KubepodsBurstable"
	// CgroupBaseKubepodsBesteffort is kubepods' besteffort cgroup.
	CgroupBaseKubepodsBesteffort CgroupBaseType = "KubepodsBesteffort"
)

// HostApplicationSpec describes a process outside Kubernetes that runs on the node.
type HostApplicationSpec struct {
	// Name identifies the application; unique per node.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Priority is the application's priority band. An application in the batch or free band is not counted as
	// system usage when batch resources are calculated.
	// +optional
	Priority PriorityClass `json:"priority,omitempty"`
	// QoS is the application's QoS class.
	// +optional
	QoS QoSClass `json:"qos,omitempty"`
	// CgroupPath locates the application's cgroup.
	// +optional
	CgroupPath *CgroupPath `json:"cgroupPath,omitempty"`
}

// CgroupLocation is where the application's cgroup is, with the documented defaults of CgroupPath filled in: base
// CgroupRoot; parentDir host-latency-sensitive, or host-best-effort for a BE application; relativePath the
// application's name.
func (a *HostApplicationSpec) CgroupLocation() (base CgroupBaseType, parentDir, relativePath string) {
	base, parentDir, relativePath = CgroupBaseRoot, "host-latency-sensitive", a.Name
	if a.QoS == QoSBE {
		parentDir = "host-best-effort"
	}
	if cp := a.CgroupPath; cp != nil {
		if cp.Base != "" {
			base = cp.Base
		}
		if cp.ParentDir != "" {
			parentDir = cp.ParentDir
		}
		if cp.RelativePath != "" {
			relativePath = cp.RelativePath
		}
	}
	return base, parentDir, relativePath
}

// CgroupPath is ${base}/${parentDir}/${relativePath} in every cgroup subsystem.
type CgroupPath struct {
	// Base is the directory the path starts from. Default CgroupRoot.
	// +optional
	Base CgroupBaseType `json:"base,omitempty"`
	// ParentDir is the directory under Base. Default "host-latency-sensitive/" for LS applications and
	// "host-best-effort/" for BE ones.
	// +optional
	ParentDir string `json:"parentDir,omitempty"`
	// RelativePath is the application's directory under ParentDir.
	// +optional
	RelativePath string `json:"relativePath,omitempty"`
}

// NodeSLOStatus is what the agent on the node reports of the spec: whether each feature the spec turns on is
// applied there, and if not, why (a kernel without the file, a runtime without NRI, a privilege the agent lacks, a
// value the plugin refused). Only the agent writes it.
type NodeSLOStatus struct {
	// ObservedGeneration is the metadata.generation of the spec that every one of the agent's QoS plugins has
	// run with at least once: the conditions describe that spec or a newer one. 0 until then.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions hold NodeSLOApplied, which sums up the others, and one condition per feature that the spec turns
	// on (a feature turned off has none): status True when the node applies it, False with a reason
	// (NodeSLOReason...) and the agent's message when it does not, Unknown before the agent's first round.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// The condition types of NodeSLOStatus. NodeSLOApplied sums up the others; each other names one feature of the
// spec and the agent part that applies it.
const (
	// NodeSLOApplied is True when every feature the spec turns on is applied on the node, False naming those that
	// are not.
	NodeSLOApplied = "Applied"
	// NodeSLOCPUSuppress: resourceUsedThresholdWithBE's CPU suppression (the cpusuppress QoS plugin).
	NodeSLOCPUSuppress = "CPUSuppress"
	// NodeSLOMemoryEviction: resourceUsedThresholdWithBE's memory eviction (memoryevict).
	NodeSLOMemoryEviction = "MemoryEviction"
	// NodeSLOCPUEviction: resourceUsedThresholdWithBE's CPU eviction (cpuevict).
	NodeSLOCPUEviction = "CPUEviction"
	// NodeSLOPressureEviction: resourceUsedThresholdWithBE's eviction by pressure stall (pressureevict).
	NodeSLOPressureEviction = "PressureEviction"
	// NodeSLOAllocatableEviction: eviction of batch and mid pods past the node's batch and mid allocatable
	// (allocatableevict).
	NodeSLOAllocatableEviction = "AllocatableEviction"
	// NodeSLOCPUBurst: cpuBurstStrategy (cpuburst).
	NodeSLOCPUBurst = "CPUBurst"
	// NodeSLOResctrl: resourceQOSStrategy's resctrlQOS (resctrl).
	NodeSLOResctrl = "Resctrl"
	// NodeSLOSystem: systemStrategy's kernel settings (sysreconcile).
	NodeSLOSystem = "System"
	// NodeSLOMemoryQOS: resourceQOSStrategy's memoryQOS (cgreconcile).
	NodeSLOMemoryQOS = "MemoryQOS"
	// NodeSLOCPUIdle: resourceQOSStrategy's cpuQOS, cpu.idle for the classes with groupIdentity -1 (cpuqos).
	NodeSLOCPUIdle = "CPUIdle"
	// NodeSLOBlkIO: resourceQOSStrategy's blkioQOS (blkio).
	NodeSLOBlkIO = "BlkIO"
	// NodeSLONetworkQOS: resourceQOSStrategy's networkQOS (netqos).
	NodeSLONetworkQOS = "NetworkQOS"
	// NodeSLORuntimeHook: batch and mid pods' cgroups set at container creation through the runtime's NRI (the
	// agent's runtime hook); on whenever the hook is.
	NodeSLORuntimeHook = "RuntimeHook"
)

// The reasons of NodeSLOStatus's conditions.
const (
	// NodeSLOReasonApplied: the node applies the feature (status True).
	NodeSLOReasonApplied = "Applied"
	// NodeSLOReasonPending: the agent has not run the feature yet (status Unknown).
	NodeSLOReasonPending = "Pending"
	// NodeSLOReasonUnsupported: the kernel or the host lacks what the feature needs (a cgroup file, resctrl).
	NodeSLOReasonUnsupported = "Unsupported"
	// NodeSLOReasonPermissionDenied: the kernel refused the agent a write: it lacks a privilege (a capability,
	// a read-only mount).
	NodeSLOReasonPermissionDenied = "PermissionDenied"
	// NodeSLOReasonRefused: the plugin refused the spec (a value it cannot enforce) and keeps enforcing the last
	// spec it accepted.
	NodeSLOReasonRefused = "Refused"
	// NodeSLOReasonFailed: the last round failed for another reason; the message says which.
	NodeSLOReasonFailed = "Failed"
	// NodeSLOReasonNRIUnavailable: the runtime hook's NRI plugin is not connected (a runtime without NRI, NRI
	// off in its configuration, the runtime restarting): new batch and mid containers start with the kubelet's
	// values until the hook's next reconcile.
	NodeSLOReasonNRIUnavailable = "NRIUnavailable"
	// NodeSLOReasonNotApplied: NodeSLOApplied's reason when a feature is not applied.
	NodeSLOReasonNotApplied = "NotApplied"
)

// NodeSLOList is a list of NodeSLO.
//
// +kubebuilder:object:root=true
type NodeSLOList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeSLO `json:"items"`
}
