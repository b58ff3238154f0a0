package sloconfig

import (
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// Defaults of the NodeSLO strategies. A NodeSLO only carries what the ConfigMap sets; WithDefaults fills in the rest
// with these values, so the manager (validation) and the agent (enforcement) agree on every field.

// DefaultResourceThresholdStrategy returns the documented defaults of resource-threshold-config. The satisfaction
// percents of CPU eviction have no default (unset disables CPU eviction), and MemoryEvictLowerPercent is derived
// from the merged threshold by WithDefaults.
func DefaultResourceThresholdStrategy() *slov1alpha1.ResourceThresholdStrategy {
	return &slov1alpha1.ResourceThresholdStrategy{
		Enable:                          ptr.To(false),
		CPUSuppressThresholdPercent:     ptr.To[int64](65),
		CPUSuppressPolicy:               slov1alpha1.CPUSuppressCPUSet,
		MemoryEvictThresholdPercent:     ptr.To[int64](70),
		CPUEvictBEUsageThresholdPercent: ptr.To[int64](90),
		CPUEvictTimeWindowSeconds:       ptr.To[int64](1),
	}
}

// memoryEvictLowerGap is how far below the eviction threshold eviction stops when memoryEvictLowerPercent is unset.
const memoryEvictLowerGap = 2

// DefaultResourceQOSStrategy returns the documented defaults of resource-qos-config: every feature off, with the
// parameters the seed lists per class.
func DefaultResourceQOSStrategy() *slov1alpha1.ResourceQOSStrategy {
	class := func(groupIdentity, wmarkMinAdj, catEnd int64) *slov1alpha1.ResourceQOS {
		return &slov1alpha1.ResourceQOS{
			CPUQOS: &slov1alpha1.CPUQOSCfg{Enable: ptr.To(false), CPUQOS: slov1alpha1.CPUQOS{GroupIdentity: ptr.To(groupIdentity)}},
			MemoryQOS: &slov1alpha1.MemoryQOSCfg{Enable: ptr.To(false), MemoryQOS: slov1alpha1.MemoryQOS{
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
			BlkIOQOS: &slov1alpha1.BlkIOQOSCfg{Enable: ptr.To(false)},
			ResctrlQOS: &slov1alpha1.ResctrlQOSCfg{Enable: ptr.To(false), ResctrlQOS: slov1alpha1.ResctrlQOS{
				CATRangeStartPercent: ptr.To[int64](0),
				CATRangeEndPercent:   ptr.To(catEnd),
				MBAPercent:           ptr.To[int64](100),
			}},
		}
	}
	return &slov1alpha1.ResourceQOSStrategy{
		LSRClass:    class(2, -25, 100),
		LSClass:     class(2, -25, 100),
		BEClass:     class(-1, 50, 30),
		SystemClass: class(0, 0, 100),
	}
}

// DefaultCPUBurstStrategy returns the documented defaults of cpu-burst-config: policy none, 1000 / 300 / -1 / 50.
func DefaultCPUBurstStrategy() *slov1alpha1.CPUBurstStrategy {
	return &slov1alpha1.CPUBurstStrategy{
		CPUBurstConfig: slov1alpha1.CPUBurstConfig{
			Policy:                     slov1alpha1.CPUBurstNone,
			CPUBurstPercent:            ptr.To[int64](1000),
			CFSQuotaBurstPercent:       ptr.To[int64](300),
			CFSQuotaBurstPeriodSeconds: ptr.To[int64](-1),
		},
		SharePoolThresholdPercent: ptr.To[int64](50),
	}
}

// DefaultSystemStrategy returns the documented defaults of system-config: 100 / 150 / 0.
func DefaultSystemStrategy() *slov1alpha1.SystemStrategy {
	return &slov1alpha1.SystemStrategy{
		MinFreeKbytesFactor:  ptr.To[int64](100),
		WatermarkScaleFactor: ptr.To[int64](150),
		MemcgReapBackGround:  ptr.To[int64](0),
	}
}

// WithDefaults returns spec with every unset strategy field filled from the defaults above (and
// MemoryEvictLowerPercent derived from the merged eviction threshold). The agent calls it on the NodeSLO it reads;
// the manager validates the same result. spec is not modified.
func WithDefaults(spec *slov1alpha1.NodeSLOSpec) *slov1alpha1.NodeSLOSpec {
	out := spec.DeepCopy()
	out.ResourceUsedThresholdWithBE = mustOverlay(DefaultResourceThresholdStrategy(), out.ResourceUsedThresholdWithBE)
	deriveMemoryEvictLower(out.ResourceUsedThresholdWithBE)
	out.ResourceQOSStrategy = mustOverlay(DefaultResourceQOSStrategy(), out.ResourceQOSStrategy)
	out.CPUBurstStrategy = mustOverlay(DefaultCPUBurstStrategy(), out.CPUBurstStrategy)
	out.SystemStrategy = mustOverlay(DefaultSystemStrategy(), out.SystemStrategy)
	if out.Extensions == nil {
		out.Extensions = emptyExtensions()
	}
	return out
}

func deriveMemoryEvictLower(s *slov1alpha1.ResourceThresholdStrategy) {
	if s.MemoryEvictLowerPercent != nil || s.MemoryEvictThresholdPercent == nil {
		return
	}
	s.MemoryEvictLowerPercent = ptr.To(max(*s.MemoryEvictThresholdPercent-memoryEvictLowerGap, 0))
}

func emptyExtensions() *runtime.RawExtension {
	return &runtime.RawExtension{Raw: []byte("{}")}
}

// overlay returns base with every field that over sets replaced: objects merge field by field, lists and scalars
// are replaced (a JSON merge patch, RFC 7386, of over onto base). Unset fields of over are omitted by their
// omitempty tags, so they inherit. Neither argument is modified; a nil over returns a copy of base.
func overlay[T any](base, over *T) (*T, error) {
	baseJSON, err := json.Marshal(base)
	if err != nil {
		return nil, fmt.Errorf("encoding the base strategy: %w", err)
	}
	merged := baseJSON
	if over != nil {
		overJSON, err := json.Marshal(over)
		if err != nil {
			return nil, fmt.Errorf("encoding the override: %w", err)
		}
		if merged, err = jsonpatch.MergePatch(baseJSON, overJSON); err != nil {
			return nil, fmt.Errorf("merging the override: %w", err)
		}
	}
	out := new(T)
	if err := json.Unmarshal(merged, out); err != nil {
		return nil, fmt.Errorf("decoding the merged strategy: %w", err)
	}
	return out, nil
}

// mustOverlay is overlay for values that came out of encoding/json already, which always encode and decode again;
// a failure is a programmer's error.
func mustOverlay[T any](base, over *T) *T {
	out, err := overlay(base, over)
	if err != nil {
		panic(fmt.Sprintf("sloconfig: merging %T: %v", base, err))
	}
	return out
}
