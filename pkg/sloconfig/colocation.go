package sloconfig

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// ColocationConfigKey is the ConfigMap key of the colocation strategy.
const ColocationConfigKey = "colocation-config"

// Upper bounds of the colocation fields that only the manager reads (the others are in api/slo/v1alpha1, next to
// the NodeMetric fields they become).
const (
	// MaxDegradeTimeMinutes bounds degradeTimeMinutes: a day. A NodeMetric older than that says nothing about the
	// node's usage now, and a larger value times time.Minute soon overflows time.Duration.
	MaxDegradeTimeMinutes int64 = 1440
	// MaxUpdateTimeThresholdSeconds bounds updateTimeThresholdSeconds: a day, for the same reasons.
	MaxUpdateTimeThresholdSeconds int64 = 86400
)

// CalculatePolicy is how the batch plugin counts high-priority pods against a resource.
type CalculatePolicy string

const (
	// CalculateByUsage counts high-priority pods at their measured usage: the most batch capacity.
	CalculateByUsage CalculatePolicy = "usage"
	// CalculateByRequest counts them at their requests: only what nobody requested is reclaimed (memory only).
	CalculateByRequest CalculatePolicy = "request"
	// CalculateByMaxUsageRequest counts each pod at max(usage, request): nothing a pod reserved is reclaimed, but
	// what it uses beyond its request is still subtracted.
	CalculateByMaxUsageRequest CalculatePolicy = "maxUsageRequest"
)

// ColocationCfg is the whole colocation-config key: the cluster strategy inline, plus node overrides.
//
// +kubebuilder:object:generate=true
type ColocationCfg struct {
	ColocationStrategy `json:",inline"`
	// NodeConfigs override the cluster strategy for the nodes their selector matches; the first match wins.
	NodeConfigs []NodeColocationCfg `json:"nodeConfigs,omitempty"`
}

// NodeCfgProfile names a node override and selects its nodes.
//
// +kubebuilder:object:generate=true
type NodeCfgProfile struct {
	// Name identifies the override; unique within its key.
	Name string `json:"name,omitempty"`
	// NodeSelector selects the nodes the override applies to; required. An empty selector ({}) matches every node.
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
}

// NodeColocationCfg is one node override of the colocation strategy.
//
// +kubebuilder:object:generate=true
type NodeColocationCfg struct {
	NodeCfgProfile     `json:",inline"`
	ColocationStrategy `json:",inline"`
}

// ColocationStrategy is how batch and mid resources are reclaimed on a node. Field names are those of Koordinator's
// colocation-config; nil means "inherit" until the strategy is merged, and never appears in a merged strategy.
//
// +kubebuilder:object:generate=true
type ColocationStrategy struct {
	// Enable turns colocation on for the node: without it the batch and mid resources are removed. Default false.
	Enable *bool `json:"enable,omitempty"`
	// MetricAggregateDurationSeconds is the window NodeMetric usage is averaged over, 1..3600. Default 300.
	MetricAggregateDurationSeconds *int64 `json:"metricAggregateDurationSeconds,omitempty"`
	// MetricReportIntervalSeconds is how often the agent writes NodeMetric status, 1..3600 and less than
	// DegradeTimeMinutes. Default 60.
	MetricReportIntervalSeconds *int64 `json:"metricReportIntervalSeconds,omitempty"`
	// MetricAggregatePolicy lists the windows of the aggregated usages, at most 10, each in (0, 1h]. Default 5m, 10m,
	// 15m.
	MetricAggregatePolicy *slov1alpha1.AggregatePolicy `json:"metricAggregatePolicy,omitempty"`
	// CPUReclaimThresholdPercent is the share of node CPU that may be used by everything together; the rest is
	// the safety margin. Default 60.
	CPUReclaimThresholdPercent *int64 `json:"cpuReclaimThresholdPercent,omitempty"`
	// CPUCalculatePolicy is how high-priority pods count against batch CPU: usage or maxUsageRequest.
	// Default usage.
	CPUCalculatePolicy *CalculatePolicy `json:"cpuCalculatePolicy,omitempty"`
	// MemoryReclaimThresholdPercent is the memory counterpart of CPUReclaimThresholdPercent. Default 65.
	MemoryReclaimThresholdPercent *int64 `json:"memoryReclaimThresholdPercent,omitempty"`
	// MemoryCalculatePolicy is how high-priority pods count against batch memory: usage, request or
	// maxUsageRequest. Default usage.
	MemoryCalculatePolicy *CalculatePolicy `json:"memoryCalculatePolicy,omitempty"`
	// DegradeTimeMinutes is how old a NodeMetric may get before the node's batch and mid resources are removed,
	// 1..1440. Default 15.
	DegradeTimeMinutes *int64 `json:"degradeTimeMinutes,omitempty"`
	// UpdateTimeThresholdSeconds forces a node update after this long even when nothing changed much, 1..86400.
	// Default 300.
	UpdateTimeThresholdSeconds *int64 `json:"updateTimeThresholdSeconds,omitempty"`
	// ResourceDiffThreshold is the relative change of a batch or mid resource that triggers a node update.
	// Default 0.1.
	ResourceDiffThreshold *float64 `json:"resourceDiffThreshold,omitempty"`
	// BatchCPUThresholdPercent caps batch CPU at this share of node CPU. Default 100.
	BatchCPUThresholdPercent *int64 `json:"batchCPUThresholdPercent,omitempty"`
	// BatchMemoryThresholdPercent caps batch memory at this share of node memory. Default 100.
	BatchMemoryThresholdPercent *int64 `json:"batchMemoryThresholdPercent,omitempty"`
	// MidCPUThresholdPercent caps mid CPU at this share of node CPU. Default 100.
	MidCPUThresholdPercent *int64 `json:"midCPUThresholdPercent,omitempty"`
	// MidMemoryThresholdPercent caps mid memory at this share of node memory. Default 100.
	MidMemoryThresholdPercent *int64 `json:"midMemoryThresholdPercent,omitempty"`
	// MidUnallocatedPercent is the share of unallocated resources added to the mid tier. Default 0.
	MidUnallocatedPercent *int64 `json:"midUnallocatedPercent,omitempty"`
}

// DefaultColocationStrategy returns the strategy every field of which is set to its documented default.
func DefaultColocationStrategy() ColocationStrategy {
	return ColocationStrategy{
		Enable:                         ptr.To(false),
		MetricAggregateDurationSeconds: ptr.To(slov1alpha1.DefaultMetricAggregateDurationSeconds),
		MetricReportIntervalSeconds:    ptr.To(slov1alpha1.DefaultMetricReportIntervalSeconds),
		MetricAggregatePolicy:          &slov1alpha1.AggregatePolicy{Durations: slov1alpha1.DefaultAggregateDurations()},
		CPUReclaimThresholdPercent:     ptr.To[int64](60),
		CPUCalculatePolicy:             ptr.To(CalculateByUsage),
		MemoryReclaimThresholdPercent:  ptr.To[int64](65),
		MemoryCalculatePolicy:          ptr.To(CalculateByUsage),
		DegradeTimeMinutes:             ptr.To[int64](15),
		UpdateTimeThresholdSeconds:     ptr.To[int64](300),
		ResourceDiffThreshold:          ptr.To(0.1),
		BatchCPUThresholdPercent:       ptr.To[int64](100),
		BatchMemoryThresholdPercent:    ptr.To[int64](100),
		MidCPUThresholdPercent:         ptr.To[int64](100),
		MidMemoryThresholdPercent:      ptr.To[int64](100),
		MidUnallocatedPercent:          ptr.To[int64](0),
	}
}
