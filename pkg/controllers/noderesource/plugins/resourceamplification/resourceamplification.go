// Package resourceamplification is the node-resource plugin that sets a node's amplification ratios
// (node.koordinator.sh/resource-amplification-ratio), which gleaner-manager's node webhook multiplies the node's
// allocatable cpu and memory by. As in Koordinator:
//
//	ratio[r]   = resource-amplification-config's resourceAmplificationRatio[r]   (when enable is true)
//	ratio[cpu] = that ratio (1 when unset) x the node's CPU normalization ratio, when the product is above 1
//	no ratio at all: the annotation is removed, and the webhook puts back the raw allocatable
//
// The CPU normalization ratio is the one the cpunormalization plugin returned in the same reconcile, else the node's.
//
// Unlike Koordinator, no ratio is set for a resource the node's kubelet admits against its real capacity, as the
// agent reports it on the NodeResourceTopology: cpu under the static CPU manager, memory under the Static memory
// manager. Amplified, their allocatable would let the scheduler bind pods that the kubelet then rejects
// (UnexpectedAdmissionError). A node whose managers are not known (no NodeResourceTopology, or an agent that could
// not ask its kubelet) is amplified as configured.
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
	refused, err := refuse(in, ratios)
	if err != nil {
		return []framework.AnnotationItem{{Key: key}}, err
	}
	reason += refused
	if len(ratios) == 0 {
		return []framework.AnnotationItem{{Key: key, Source: source, Reason: reason + "; allocatable is the kubelet's"}}, nil
	}
	return []framework.AnnotationItem{{Key: key, Value: ptr.To(slov1alpha1.FormatAmplificationRatios(ratios)), Source: source, Reason: reason}}, nil
}

// refuse removes from ratios each resource the node's kubelet admits against its real capacity, and says which.
func refuse(in *framework.Input, ratios map[corev1.ResourceName]float64) (string, error) {
	if in.Topology == nil || in.Topology.Object == nil {
		return "", nil
	}
	managers, err := slov1alpha1.KubeletResourceManagersOf(in.Topology.Object.GetAnnotations())
	if err != nil {
		return "", fmt.Errorf("NodeResourceTopology %s: %w", in.Node.Name, err)
	}
	why := ""
	for _, r := range []struct {
		name    corev1.ResourceName
		manager string
	}{{corev1.ResourceCPU, "static CPU manager"}, {corev1.ResourceMemory, "Static memory manager"}} {
		if ratio, ok := ratios[r.name]; ok && ratio > 1 && managers.Exclusive(r.name) {
			delete(ratios, r.name)
			why += fmt.Sprintf("; %s not amplified: the kubelet's %s admits pods against the node's real %s", r.name, r.manager, r.name)
		}
	}
	return why, nil
}
