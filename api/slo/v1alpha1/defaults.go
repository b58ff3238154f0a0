package v1alpha1

import (
	"encoding/json"
	"fmt"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// Defaults of the strategies. A NodeSLO carries only what the slo-controller-config ConfigMap sets; WithDefaults
// fills in the rest with the values below, so the manager (which validates the merged result) and the agent (which
// enforces it) agree on every field. They live in the API package so that the agent needs neither the manager's
// ConfigMap parser nor its dependencies.

// Defaults of a NodeMetric's collect policy (colocation-config's metricAggregateDurationSeconds,
// metricReportIntervalSeconds and metricAggregatePolicy).
const (
	// DefaultMetricAggregateDurationSeconds is the window of a NodeMetric's usages.
	DefaultMetricAggregateDurationSeconds int64 = 300
	// DefaultMetricReportIntervalSeconds is how often the agent writes a NodeMetric's status.
	DefaultMetricReportIntervalSeconds int64 = 60
)

// DefaultAggregateDurations are the windows of a NodeMetric's aggregated usages: 5, 10 and 15 minutes.
func DefaultAggregateDurations() []metav1.Duration {
	return []metav1.Duration{{Duration: 5 * time.Minute}, {Duration: 10 * time.Minute}, {Duration: 15 * time.Minute}}
}

// DefaultResourceThresholdStrategy returns the documented defaults of resource-threshold-config. The satisfaction
// percents of CPU eviction have no default (unset disables CPU eviction), and MemoryEvictLowerPercent is derived
// from the merged threshold by ResourceThresholdStrategy.WithDefaults.
func DefaultResourceThresholdStrategy() *ResourceThresholdStrategy {
	return &ResourceThresholdStrategy{
		Enable:                          ptr.To(false),
		CPUSuppressThresholdPercent:     ptr.To[int64](65),
		CPUSuppressPolicy:               CPUSuppressCPUSet,
		CPUSuppressMinPercent:           ptr.To[int64](0),
		MemoryEvictThresholdPercent:     ptr.To[int64](70),
		MemoryEvictHoldSeconds:          ptr.To[int64](DefaultMemoryEvictHoldSeconds),
		CPUEvictBEUsageThresholdPercent: ptr.To[int64](90),
		CPUEvictTimeWindowSeconds:       ptr.To[int64](1),
		CPUEvictPolicy:                  CPUEvictByRealLimit,
		PressureEvictWindowSeconds:      ptr.To[int64](10),
	}
}

// DefaultMemoryEvictHoldSeconds is the default of memoryEvictHoldSeconds: the kubelet's default
// --eviction-pressure-transition-period, and the default window of a NodeMetric's usages (metricAggregateDurationSeconds),
// after which the memory of the pods that were evicted and of the growth that caused it is what the report averages.
const DefaultMemoryEvictHoldSeconds int64 = 300

// MemoryEvictLowerGap is how far below memoryEvictThresholdPercent memory eviction stops when
// memoryEvictLowerPercent is unset.
const MemoryEvictLowerGap = 2

// DefaultResourceQOSStrategy returns the documented defaults of resource-qos-config, with the parameters Koordinator's
// template lists per class: every feature off except class BE's cpuQOS, whose groupIdentity -1 runs the besteffort QoS
// cgroup as SCHED_IDLE (cpu.idle = 1) wherever the kernel has cpu.idle (Linux 5.15+), so that batch yields to
// services inside the scheduler.
func DefaultResourceQOSStrategy() *ResourceQOSStrategy {
	class := func(cpuQOS bool, groupIdentity, wmarkMinAdj, catEnd int64) *ResourceQOS {
		return &ResourceQOS{
			CPUQOS: &CPUQOSCfg{Enable: ptr.To(cpuQOS), CPUQOS: CPUQOS{GroupIdentity: ptr.To(groupIdentity)}},
			MemoryQOS: &MemoryQOSCfg{Enable: ptr.To(false), MemoryQOS: MemoryQOS{
				MinLimitPercent:   ptr.To[int64](0),
				LowLimitPercent:   ptr.To[int64](0),
				ThrottlingPercent: ptr.To[int64](0),
				WmarkRatio:        ptr.To[int64](95),
				WmarkScalePermill: ptr.To[int64](20),
				WmarkMinAdj:       ptr.To(wmarkMinAdj),
				PriorityEnable:    ptr.To[int64](0),
				Priority:          ptr.To[int64](0),
				OomKillGroup:      ptr.To[int64](0),
			}},
			BlkIOQOS: &BlkIOQOSCfg{Enable: ptr.To(false)},
			ResctrlQOS: &ResctrlQOSCfg{Enable: ptr.To(false), ResctrlQOS: ResctrlQOS{
				CATRangeStartPercent: ptr.To[int64](0),
				CATRangeEndPercent:   ptr.To(catEnd),
				MBAPercent:           ptr.To[int64](100),
			}},
		}
	}
	return &ResourceQOSStrategy{
		LSRClass:    class(false, 2, -25, 100),
		LSClass:     class(false, 2, -25, 100),
		BEClass:     class(true, -1, 50, 30),
		SystemClass: class(false, 0, 0, 100),
	}
}

// DefaultCPUBurstStrategy returns the documented defaults of cpu-burst-config: policy none, 1000 / 300 / -1 / 50.
func DefaultCPUBurstStrategy() *CPUBurstStrategy {
	return &CPUBurstStrategy{
		CPUBurstConfig: CPUBurstConfig{
			Policy:                     CPUBurstNone,
			CPUBurstPercent:            ptr.To[int64](1000),
			CFSQuotaBurstPercent:       ptr.To[int64](300),
			CFSQuotaBurstPeriodSeconds: ptr.To[int64](-1),
		},
		SharePoolThresholdPercent: ptr.To[int64](50),
	}
}

// DefaultSystemStrategy returns the documented defaults of system-config: off, 100 / 150 / 0.
func DefaultSystemStrategy() *SystemStrategy {
	return &SystemStrategy{
		Enable:               ptr.To(false),
		MinFreeKbytesFactor:  ptr.To[int64](100),
		WatermarkScaleFactor: ptr.To[int64](150),
		MemcgReapBackGround:  ptr.To[int64](0),
	}
}

// WithDefaults returns s with every unset field taken from DefaultResourceThresholdStrategy, and
// MemoryEvictLowerPercent, when unset, MemoryEvictLowerGap below the merged eviction threshold. s may be nil and is
// not modified.
func (s *ResourceThresholdStrategy) WithDefaults() *ResourceThresholdStrategy {
	out := MergeStrategy(DefaultResourceThresholdStrategy(), s)
	if out.MemoryEvictLowerPercent == nil && out.MemoryEvictThresholdPercent != nil {
		out.MemoryEvictLowerPercent = ptr.To(max(*out.MemoryEvictThresholdPercent-MemoryEvictLowerGap, 0))
	}
	return out
}

// WithDefaults returns s with every unset field taken from DefaultResourceQOSStrategy. s may be nil and is not
// modified.
func (s *ResourceQOSStrategy) WithDefaults() *ResourceQOSStrategy {
	return MergeStrategy(DefaultResourceQOSStrategy(), s)
}

// WithDefaults returns s with every unset field taken from DefaultCPUBurstStrategy. s may be nil and is not
// modified.
func (s *CPUBurstStrategy) WithDefaults() *CPUBurstStrategy {
	return MergeStrategy(DefaultCPUBurstStrategy(), s)
}

// WithDefaults returns s with every unset field taken from DefaultSystemStrategy. s may be nil and is not modified.
func (s *SystemStrategy) WithDefaults() *SystemStrategy {
	return MergeStrategy(DefaultSystemStrategy(), s)
}

// WithDefaults returns spec with every strategy's unset fields filled in by that strategy's WithDefaults. The
// agent's QoS plugins call it on every NodeSLO they read; the manager validates the same result. spec may be nil
// and is not modified.
func (spec *NodeSLOSpec) WithDefaults() *NodeSLOSpec {
	out := &NodeSLOSpec{}
	if spec != nil {
		out = spec.DeepCopy()
	}
	out.ResourceUsedThresholdWithBE = out.ResourceUsedThresholdWithBE.WithDefaults()
	out.ResourceQOSStrategy = out.ResourceQOSStrategy.WithDefaults()
	out.CPUBurstStrategy = out.CPUBurstStrategy.WithDefaults()
	out.SystemStrategy = out.SystemStrategy.WithDefaults()
	if out.Extensions == nil {
		out.Extensions = &runtime.RawExtension{Raw: []byte("{}")}
	}
	return out
}

// MergeStrategy returns base with every field that over sets replaced: objects merge field by field, lists and
// scalars are replaced (a JSON merge patch, RFC 7386, of over onto base). It is the rule by which defaults, the
// cluster strategy and a node's override combine. Unset fields of over are left out by their omitempty tags, so
// they inherit. Neither argument is modified; a nil over returns a copy of base. T must be one of this package's
// strategy types (or a type like them that encoding/json encodes and decodes again): a failure is a programmer's
// error and panics.
func MergeStrategy[T any](base, over *T) *T {
	out, err := mergeStrategy(base, over)
	if err != nil {
		panic(fmt.Sprintf("v1alpha1: merging %T: %v", base, err))
	}
	return out
}

func mergeStrategy[T any](base, over *T) (*T, error) {
	merged, err := json.Marshal(base)
	if err != nil {
		return nil, fmt.Errorf("encoding the base strategy: %w", err)
	}
	if over != nil {
		overJSON, err := json.Marshal(over)
		if err != nil {
			return nil, fmt.Errorf("encoding the override: %w", err)
		}
		if merged, err = jsonpatch.MergePatch(merged, overJSON); err != nil {
			return nil, fmt.Errorf("merging the override: %w", err)
		}
	}
	out := new(T)
	if err := json.Unmarshal(merged, out); err != nil {
		return nil, fmt.Errorf("decoding the merged strategy: %w", err)
	}
	return out, nil
}
