// Package cpunormalization is the node-resource plugin that sets a node's CPU normalization ratio
// (node.koordinator.sh/cpu-normalization-ratio): how much more one of its CPUs does than the reference CPU of
// cpu-normalization-config's ratio model, so that clusters with several CPU generations can count CPU alike.
//
// The ratio, as Koordinator finds it:
//
//	enabled = label node.koordinator.sh/cpu-normalization-enabled if set, else the strategy's enable
//	not enabled:  no ratio (the annotation is removed)
//	enabled:      ratioModel[cpuModel] for the node's hyper-threading and turbo
//	              (baseRatio, hyperThreadEnabledRatio, turboEnabledRatio, hyperThreadTurboEnabledRatio),
//	              else defaultRatio, else the node keeps the ratio it has (an error, with a Warning event)
//
// The CPU model, hyper-threading and turbo come from the node's NodeResourceTopology
// (node.koordinator.sh/cpu-basic-info, written by gleaner-agent). The ratio multiplies the node's allocatable cpu
// through the resourceamplification plugin and the node webhook; batch-cpu and mid-cpu stay in real CPUs
// (docs/qos.md#cpu-normalization-and-resource-amplification).
package cpunormalization

import (
	"errors"
	"fmt"
	"strconv"

	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// Name is the plugin's name.
const Name = "cpunormalization"

var _ framework.AnnotatePlugin = &Plugin{}

// Plugin sets the CPU normalization ratio.
type Plugin struct{}

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name implements framework.Plugin.
func (p *Plugin) Name() string { return Name }

// Annotate returns the node's ratio. On an error the node keeps the ratio it has.
func (p *Plugin) Annotate(in *framework.Input, _ *framework.NodeResource) ([]framework.AnnotationItem, error) {
	keep := []framework.AnnotationItem{{Key: slov1alpha1.AnnotationCPUNormalizationRatio}}
	source := in.Config.StrategySource(sloconfig.CPUNormalizationConfigKey, in.Node.Labels)
	strategy := in.Config.CPUNormalization(in.Node.Labels)
	enabled := ptr.Deref(strategy.Enable, false)
	if s, ok := in.Node.Labels[slov1alpha1.LabelCPUNormalizationEnabled]; ok {
		v, err := strconv.ParseBool(s)
		if err != nil {
			return keep, fmt.Errorf("label %s: %q is not true or false", slov1alpha1.LabelCPUNormalizationEnabled, s)
		}
		enabled, source = v, "label "+slov1alpha1.LabelCPUNormalizationEnabled+"="+s
	}
	if !enabled {
		// Koordinator writes 1.00 here, which its koordlet reads to stop scaling containers; Gleaner's agent scales
		// nothing, and a cluster that never turned normalization on keeps its Nodes free of the annotation.
		return []framework.AnnotationItem{{
			Key: slov1alpha1.AnnotationCPUNormalizationRatio, Source: source, Reason: "CPU normalization is off for the node",
		}}, nil
	}
	info, err := cpuBasicInfo(in)
	if err != nil {
		return keep, err
	}
	ratio, how, err := Ratio(strategy, info)
	if err != nil {
		return keep, err
	}
	return []framework.AnnotationItem{{
		Key: slov1alpha1.AnnotationCPUNormalizationRatio, Value: ptr.To(slov1alpha1.FormatRatio(ratio)), Source: source, Reason: how,
	}}, nil
}

// cpuBasicInfo reads the node's CPU description from its NodeResourceTopology.
func cpuBasicInfo(in *framework.Input) (*slov1alpha1.CPUBasicInfo, error) {
	if in.Topology == nil || in.Topology.Object == nil {
		return nil, fmt.Errorf("node %s has no NodeResourceTopology to read its CPU model from (is gleaner-agent's --report-topology on?)", in.Node.Name)
	}
	info, err := slov1alpha1.CPUBasicInfoOf(in.Topology.Object.GetAnnotations())
	if err != nil {
		return nil, fmt.Errorf("NodeResourceTopology %s: %w", in.Node.Name, err)
	}
	if info == nil {
		return nil, fmt.Errorf("NodeResourceTopology %s has no %s annotation yet", in.Node.Name, slov1alpha1.AnnotationCPUBasicInfo)
	}
	return info, nil
}

// Ratio is the ratio strategy gives a CPU described by info, and how it was found. The strategy's ratios were
// checked against [1, 5] when the key was parsed.
func Ratio(strategy *sloconfig.CPUNormalizationStrategy, info *slov1alpha1.CPUBasicInfo) (float64, string, error) {
	ratio, how, err := modelRatio(strategy, info)
	if err == nil {
		return ratio, how, nil
	}
	if strategy.DefaultRatio != nil {
		return *strategy.DefaultRatio, "defaultRatio: " + err.Error(), nil
	}
	return 0, "", fmt.Errorf("%w, and there is no defaultRatio", err)
}

func modelRatio(strategy *sloconfig.CPUNormalizationStrategy, info *slov1alpha1.CPUBasicInfo) (float64, string, error) {
	model, ok := strategy.RatioModel[info.CPUModel]
	if !ok {
		if info.CPUModel == "" {
			return 0, "", errors.New("the node's CPU model is unknown")
		}
		return 0, "", fmt.Errorf("ratioModel has no CPU model %q", info.CPUModel)
	}
	var field string
	var v *float64
	switch {
	case info.HyperThreadEnabled && info.TurboEnabled:
		field, v = "hyperThreadTurboEnabledRatio", model.HyperThreadTurboEnabledRatio
	case info.HyperThreadEnabled:
		field, v = "hyperThreadEnabledRatio", model.HyperThreadEnabledRatio
	case info.TurboEnabled:
		field, v = "turboEnabledRatio", model.TurboEnabledRatio
	default:
		field, v = "baseRatio", model.BaseRatio
	}
	state := fmt.Sprintf("hyper-threading %s, turbo %s", onOff(info.HyperThreadEnabled), onOff(info.TurboEnabled))
	if v == nil {
		return 0, "", fmt.Errorf("ratioModel[%s] has no %s (%s)", info.CPUModel, field, state)
	}
	return *v, fmt.Sprintf("ratioModel[%s].%s (%s)", info.CPUModel, field, state), nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
