package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeMetric carries one node's measured usage from gleaner-agent to gleaner-manager. The manager creates it and
// owns the spec (how to collect, from the node's colocation strategy); the agent owns the status (what it measured)
// and writes it every spec.metricCollectPolicy.reportIntervalSeconds. The batch and mid plugins read the status.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nmetric,categories=gleaner
// +kubebuilder:printcolumn:name="CPU Used",type=string,JSONPath=`.status.nodeMetric.nodeUsage.cpu`,description="node CPU usage over the aggregate duration"
// +kubebuilder:printcolumn:name="Memory Used",type=string,JSONPath=`.status.nodeMetric.nodeUsage.memory`,description="node memory usage over the aggregate duration"
// +kubebuilder:printcolumn:name="Updated",type=date,JSONPath=`.status.updateTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeMetric struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is how the agent collects and reports.
	Spec NodeMetricSpec `json:"spec,omitempty"`
	// Status is what the agent measured.
	Status NodeMetricStatus `json:"status,omitempty"`
}

// NodeMetricSpec is how the agent collects and reports.
type NodeMetricSpec struct {
	// CollectPolicy sets the report's windows and interval; unset fields take the agent's defaults.
	// +optional
	CollectPolicy *NodeMetricCollectPolicy `json:"metricCollectPolicy,omitempty"`
}

// NodeMetricCollectPolicy sets the report's windows and interval.
type NodeMetricCollectPolicy struct {
	// AggregateDurationSeconds is the window status.nodeMetric.nodeUsage averages over, 1..3600 (the agent's metric
	// cache keeps one hour). Default 300.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	AggregateDurationSeconds *int64 `json:"aggregateDurationSeconds,omitempty"`
	// ReportIntervalSeconds is how often the agent writes the status, 1..3600. Default 60.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	ReportIntervalSeconds *int64 `json:"reportIntervalSeconds,omitempty"`
	// NodeAggregatePolicy lists the windows of status.nodeMetric.aggregatedNodeUsages.
	// +optional
	NodeAggregatePolicy *AggregatePolicy `json:"nodeAggregatePolicy,omitempty"`
}

// AggregatePolicy lists aggregation windows.
type AggregatePolicy struct {
	// Durations are the windows, such as 5m, 10m, 15m: at most 10, each longer than 0 and at most 1h (the agent's
	// metric cache keeps one hour).
	// +optional
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:XValidation:rule="self.all(d, duration(d) > duration('0s') && duration(d) <= duration('1h'))",message="each duration must be longer than 0s and at most 1h"
	Durations []metav1.Duration `json:"durations,omitempty"`
}

// AggregationType is a statistic over a window.
// +kubebuilder:validation:Enum=avg;p50;p90;p95;p99
type AggregationType string

// The statistics the agent reports per window.
const (
	// AggregationAvg is the mean.
	AggregationAvg AggregationType = "avg"
	// AggregationP50 is the median.
	AggregationP50 AggregationType = "p50"
	// AggregationP90 is the 90th percentile.
	AggregationP90 AggregationType = "p90"
	// AggregationP95 is the 95th percentile.
	AggregationP95 AggregationType = "p95"
	// AggregationP99 is the 99th percentile.
	AggregationP99 AggregationType = "p99"
)

// NodeMetricStatus is what the agent measured on the node. Usage quantities are CPU in cores (millicore precision)
// and memory in bytes; memory excludes page cache.
type NodeMetricStatus struct {
	// ObservedGeneration is the metadata.generation of the spec this report followed (its windows and interval):
	// after a change of spec.metricCollectPolicy, the report is of the new policy once it equals the generation.
	// 0 from agents older than the field.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// UpdateTime is when the agent wrote this status. The batch plugin degrades a node whose UpdateTime is older than
	// degradeTimeMinutes.
	// +optional
	UpdateTime *metav1.Time `json:"updateTime,omitempty"`

	// NodeMetric is the node's own usage.
	// +optional
	NodeMetric *NodeMetricInfo `json:"nodeMetric,omitempty"`

	// PodsMetric is the usage of each pod on the node, averaged over the aggregate duration, as agents wrote it
	// before PodUsages: name, namespace, UID, priority, QoS class and a resource list per pod. Readers take
	// PodUsages when it is set and this list otherwise (PodRecords), so that a manager reads the reports of agents
	// one release older. Pods without enough samples (just started, or the agent just restarted) are left out.
	// +optional
	PodsMetric []PodMetricInfo `json:"podsMetric,omitempty"`

	// PodUsages is the usage of each pod on the node, averaged over the aggregate duration, in the form agents
	// write now: the pod's UID, its priority class when not prod, and CPU and memory as integers. It
	// carries what the manager's calculation reads and nothing else, because the manager decodes every report of
	// the cluster (one per node a minute): a record costs under half of a PodsMetric record to decode and a
	// quarter of its garbage (docs/benchmarks.md). The pod's name and namespace are where its UID leads (kubectl
	// glean top pods shows them). Pods without enough samples are left out.
	// +optional
	PodUsages []PodUsage `json:"podUsages,omitempty"`

	// HostApplicationMetric is the usage of each host application of the NodeSLO.
	// +optional
	HostApplicationMetric []HostApplicationMetricInfo `json:"hostApplicationMetric,omitempty"`

	// ProdReclaimableMetric is what the agent predicts prod pods requested but will not use: the input of the mid
	// tier.
	// +optional
	ProdReclaimableMetric *ReclaimableMetric `json:"prodReclaimableMetric,omitempty"`

	// GPUs are the node's GPUs by index with their usage; absent on nodes without GPUs or an agent without NVML.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	GPUs []GPUMetricInfo `json:"gpus,omitempty"`

	// MemoryPressure is present while the node is under memory pressure and for a hold time after it: the agent's
	// memory eviction found the node's memory use above the NodeSLO's memoryEvictThresholdPercent less than its
	// memoryEvictHoldSeconds ago. While it is present gleaner-manager publishes no more kubernetes.io/batch-memory
	// (mid-memory) than the node's batch (mid) pods already request, leaving out those the agent evicts, so that no
	// new pod of the tier (a replacement of an evicted one included) is placed where it would be evicted again. The
	// agent writes it at once, without waiting for its report interval, when it appears, before each pod it lists is
	// evicted, and when it ends. Absent otherwise.
	// +optional
	MemoryPressure *MemoryPressure `json:"memoryPressure,omitempty"`
}

// MemoryPressure is one episode of node memory pressure as the agent reports it (NodeMetricStatus.MemoryPressure),
// like the kubelet's MemoryPressure node condition and its --eviction-pressure-transition-period.
type MemoryPressure struct {
	// Since is when the agent found the node's memory use above the eviction threshold first in this episode.
	Since metav1.Time `json:"since"`
	// LastPressureTime is when it last found it above, as of this report. The episode ends, and the status field
	// goes, HoldSeconds after the last time it does.
	LastPressureTime metav1.Time `json:"lastPressureTime"`
	// HoldSeconds is how long the episode lasts after the pressure is gone (the NodeSLO's memoryEvictHoldSeconds).
	// +kubebuilder:validation:Minimum=0
	HoldSeconds int64 `json:"holdSeconds"`
	// EvictedPods are the UIDs of the pods the agent evicts for the node's memory in this episode, each listed
	// before its eviction is sent (a pod the eviction did not take is listed no more); at most 1000, the oldest left
	// out. gleaner-manager counts them as gone.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=set
	// +optional
	EvictedPods []string `json:"evictedPods,omitempty"`
}

// NodeMetricInfo is the node's usage.
type NodeMetricInfo struct {
	// NodeUsage is the node's usage averaged over the aggregate duration: CPU busy time of every task, memory
	// MemTotal - MemAvailable.
	// +optional
	NodeUsage corev1.ResourceList `json:"nodeUsage,omitempty"`
	// AggregatedNodeUsages are statistics of the node's usage over each configured window.
	// +optional
	AggregatedNodeUsages []AggregatedUsage `json:"aggregatedNodeUsages,omitempty"`
	// SystemUsage is the usage of everything outside pods and host applications (kernel, kubelet, runtime, other
	// daemons): max(node - pods - host applications, 0), averaged like NodeUsage.
	// +optional
	SystemUsage corev1.ResourceList `json:"systemUsage,omitempty"`
	// AggregatedSystemUsages are statistics of the system usage over each configured window.
	// +optional
	AggregatedSystemUsages []AggregatedUsage `json:"aggregatedSystemUsages,omitempty"`
}

// AggregatedUsage is a set of statistics of a usage over one window.
type AggregatedUsage struct {
	// Usage maps each statistic to its value per resource.
	// +optional
	Usage map[AggregationType]corev1.ResourceList `json:"usage,omitempty"`
	// Duration is the window.
	Duration metav1.Duration `json:"duration"`
}

// PodMetricInfo is one pod's usage.
type PodMetricInfo struct {
	// Name is the pod's name.
	Name string `json:"name"`
	// Namespace is the pod's namespace.
	Namespace string `json:"namespace"`
	// UID is the pod's UID, so a pod recreated under the same name is not mistaken for the old one.
	// +optional
	UID string `json:"uid,omitempty"`
	// Priority is the pod's priority band.
	// +optional
	Priority PriorityClass `json:"priority,omitempty"`
	// QoS is the pod's QoS class.
	// +optional
	QoS QoSClass `json:"qos,omitempty"`
	// Usage is the pod's usage averaged over the aggregate duration.
	// +optional
	Usage corev1.ResourceList `json:"usage,omitempty"`
	// GPU is what the pod's processes use of the node's GPUs; absent for pods that use none.
	// +optional
	GPU *PodGPUUsage `json:"gpu,omitempty"`
}

// PodUsage is one pod's usage in status.podUsages.
type PodUsage struct {
	// UID is the pod's UID.
	UID string `json:"uid"`
	// Priority is the pod's priority class as the agent decided it (ClassOf); omitted for prod.
	// +optional
	Priority PriorityClass `json:"priority,omitempty"`
	// CPUMillis is the pod's CPU usage in millicores, averaged over the aggregate duration.
	CPUMillis int64 `json:"cpuMillis"`
	// MemoryBytes is the pod's memory usage in bytes (without page cache), averaged over the aggregate duration.
	MemoryBytes int64 `json:"memoryBytes"`
	// GPU is what the pod's processes use of the node's GPUs; absent for pods that use none.
	// +optional
	GPU *PodGPUUsage `json:"gpu,omitempty"`
}

// HostApplicationMetricInfo is one host application's usage.
type HostApplicationMetricInfo struct {
	// Name is the application's name in the NodeSLO.
	Name string `json:"name"`
	// Priority is the application's priority band.
	// +optional
	Priority PriorityClass `json:"priority,omitempty"`
	// QoS is the application's QoS class.
	// +optional
	QoS QoSClass `json:"qos,omitempty"`
	// Usage is the application's usage averaged over the aggregate duration.
	// +optional
	Usage corev1.ResourceList `json:"usage,omitempty"`
}

// ReclaimableMetric is a quantity predicted to be reclaimable.
type ReclaimableMetric struct {
	// Resource is the reclaimable quantity per resource.
	// +optional
	Resource corev1.ResourceList `json:"resource,omitempty"`
	// Prediction is how Resource was predicted, for explanations (kubectl glean explain).
	// +optional
	Prediction *ReclaimablePrediction `json:"prediction,omitempty"`
}

// ReclaimablePrediction holds the terms of a reclaimable prediction.
type ReclaimablePrediction struct {
	// ProdRequest is the prod pods' requests.
	// +optional
	ProdRequest corev1.ResourceList `json:"prodRequest,omitempty"`
	// ProdPeak is the prod pods' predicted peak together (the largest sample of the last 25 hours, or of the same
	// hours a week ago; docs/prediction.md), before the safety margin.
	// +optional
	ProdPeak corev1.ResourceList `json:"prodPeak,omitempty"`
	// SystemPeak is the typical peak of the node's system part (p95 of CPU, p98 of memory; its short spikes are left
	// to the safety margin), before the safety margin.
	// +optional
	SystemPeak corev1.ResourceList `json:"systemPeak,omitempty"`
	// SafetyMarginPercent is how much the peaks were raised before they were subtracted.
	// +optional
	SafetyMarginPercent int64 `json:"safetyMarginPercent,omitempty"`
	// ColdStartUntil is when the node's models will be old enough to predict; until then nothing is reclaimable.
	// Unset once they are.
	// +optional
	ColdStartUntil *metav1.Time `json:"coldStartUntil,omitempty"`
	// ColdPods is how many prod pods' own models are still too young; they count as reclaiming nothing.
	// +optional
	ColdPods int32 `json:"coldPods,omitempty"`
}

// NodeMetricList is a list of NodeMetric.
//
// +kubebuilder:object:root=true
type NodeMetricList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeMetric `json:"items"`
}
