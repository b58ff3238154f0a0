// Package resourceamplification is the node-resource plugin that sets a node's amplification ratios
// (node.koordinator.sh/resource-amplification-ratio), which gleaner-manager's node webhook multiplies the node's
// allocatable cpu and memory by. As in Koordinator:
//
//	ratio[r]   = resource-amplification-config's resourceAmplificationRatio[r]   (when enable is true)
//	ratio[cpu] = that ratio (1 when unset) x the node's CPU normalization ratio, when the product is above 1
//	no ratio at all: the annotation is removed, and the webhook puts back the raw allocatable
//
// The CPU normalization ratio is the one the cpunormalization plugin returned in the same reconcile, else the node's.
package resourceamplification

import (
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// Name is the plugin's name.
const Name = "resourceamplification"

var _ framework.AnnotatePlugin = &Plugin{}

// Plugin sets the amplification ratios.
type Plugin struct{}

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name implements framework.Plugin.
func (p *Plugin) Name() string { return Name }

// Annotate returns the node's ratios, or their removal when nothing is amplified. On an error the node keeps the
// ratios it has.
func (p *Plugin) Annotate(in *framework.Input, nr *framework.NodeResource) ([]framework.AnnotationItem, error) {
	key := slov1alpha1.AnnotationResourceAmplificationRatio
	strategy := in.Config.ResourceAmplification(in.Node.Labels)
	source := in.Config.StrategySource(sloconfig.ResourceAmplificationConfigKey, in.Node.Labels)
	ratios := map[corev1.ResourceName]float64{}
	if ptr.Deref(strategy.Enable, false) {
		maps.Copy(ratios, strategy.ResourceAmplificationRatio)
	}
	reason := "resourceAmplificationRatio"
	if len(ratios) == 0 {
		reason = "nothing configured to amplify"
	}
	if s, ok := nr.Annotation(in.Node, slov1alpha1.AnnotationCPUNormalizationRatio); ok {
		norm, err := strconv.ParseFloat(s, 64)
		if err != nil || norm <= 0 {
			return []framework.AnnotationItem{{Key: key}}, fmt.Errorf("annotation %s: %q is not a positive number", slov1alpha1.AnnotationCPUNormalizationRatio, s)
		}
		configured, ok := ratios[corev1.ResourceCPU]
		if !ok {
			configured = 1
		}
		if cpu := configured * norm; cpu > 1 {
			ratios[corev1.ResourceCPU] = cpu
			reason = fmt.Sprintf("cpu: %s x CPU normalization ratio %s", slov1alpha1.FormatRatio(configured), s)
		}
	}
	if len(ratios) == 0 {
		return []framework.AnnotationItem{{Key: key, Source: source, Reason: reason + "; allocatable is the kubelet's"}}, nil
	}
	return []framework.AnnotationItem{{Key: key, Value: ptr.To(slov1alpha1.FormatAmplificationRatios(ratios)), Source: source, Reason: reason}}, nil
}
