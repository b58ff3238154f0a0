package v1alpha1

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// CPU normalization and resource amplification (docs/qos.md#cpu-normalization-and-resource-amplification). The
// names are Koordinator's, so a scheduler or tool written for it reads them unchanged.
//
//   - The agent describes the node's CPU in AnnotationCPUBasicInfo on its NodeResourceTopology.
//   - gleaner-manager derives the node's CPU normalization ratio from cpu-normalization-config and that description
//     (AnnotationCPUNormalizationRatio), and the amplification ratios from resource-amplification-config times the
//     normalization ratio for cpu (AnnotationResourceAmplificationRatio), both on the Node.
//   - gleaner-manager's node webhook keeps status.allocatable at the raw allocatable the kubelet reports (saved in
//     AnnotationRawAllocatable) times those ratios.
const (
	// AnnotationCPUBasicInfo, on a NodeResourceTopology, is the node's CPUBasicInfo as JSON.
	AnnotationCPUBasicInfo = "node.koordinator.sh/cpu-basic-info"
	// AnnotationCPUNormalizationRatio, on a Node, is its CPU normalization ratio with two decimals ("1.25"): how
	// much more one of its CPUs does than the reference CPU the ratios are measured against.
	AnnotationCPUNormalizationRatio = "node.koordinator.sh/cpu-normalization-ratio"
	// LabelCPUNormalizationEnabled, on a Node, turns CPU normalization on ("true") or off ("false") for the node,
	// over the enable of cpu-normalization-config.
	LabelCPUNormalizationEnabled = "node.koordinator.sh/cpu-normalization-enabled"
	// AnnotationResourceAmplificationRatio, on a Node, maps resource names to amplification ratios as JSON with two
	// decimals ({"cpu":1.50,"memory":1.20}); absent when nothing is amplified.
	AnnotationResourceAmplificationRatio = "node.koordinator.sh/resource-amplification-ratio"
	// AnnotationRawAllocatable, on a Node, is the allocatable the kubelet reported before amplification, as a JSON
	// resource list of the amplified resources ({"cpu":"8","memory":"32Gi"}).
	AnnotationRawAllocatable = "node.koordinator.sh/raw-allocatable"
)

// Bounds of the CPU normalization ratio. Below 1 would shrink a node's CPU, which Koordinator does not support
// either; above 5 is no CPU generation gap but a typo.
const (
	MinCPUNormalizationRatio = 1.0
	MaxCPUNormalizationRatio = 5.0
)

// AmplifiedResources are the resources whose allocatable the node webhook amplifies; a ratio for any other resource
// is carried in AnnotationResourceAmplificationRatio (as Koordinator does) and changes nothing.
var AmplifiedResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// CPUBasicInfo is what CPU normalization needs to know about a node's processors. JSON names are Koordinator's.
//
// +kubebuilder:object:generate=false
type CPUBasicInfo struct {
	// CPUModel is the first "model name" of /proc/cpuinfo, such as "Intel(R) Xeon(R) Platinum 8269CY CPU @ 2.50GHz".
	CPUModel string `json:"cpuModel,omitempty"`
	// HyperThreadEnabled says whether simultaneous multithreading is active (more than one thread per core).
	HyperThreadEnabled bool `json:"hyperThreadEnabled,omitempty"`
	// TurboEnabled says whether turbo boost is on (intel_pstate's no_turbo is 0, or cpufreq's boost is 1).
	TurboEnabled bool `json:"turboEnabled,omitempty"`
	// VendorID is the "vendor_id" of /proc/cpuinfo, such as GenuineIntel.
	VendorID string `json:"vendorID,omitempty"`
}

// CPUBasicInfoOf reads AnnotationCPUBasicInfo from annotations; nil without an error when it is absent.
func CPUBasicInfoOf(annotations map[string]string) (*CPUBasicInfo, error) {
	s, ok := annotations[AnnotationCPUBasicInfo]
	if !ok {
		return nil, nil
	}
	info := &CPUBasicInfo{}
	if err := json.Unmarshal([]byte(s), info); err != nil {
		return nil, fmt.Errorf("parsing annotation %s: %w", AnnotationCPUBasicInfo, err)
	}
	return info, nil
}

// FormatRatio writes a ratio as the annotations carry it: two decimals, as Koordinator writes them.
func FormatRatio(r float64) string { return strconv.FormatFloat(r, 'f', 2, 64) }

// CPUNormalizationRatioOf reads the node's AnnotationCPUNormalizationRatio; ok is false without an error when it is
// absent. A value that does not parse or is not positive is an error.
func CPUNormalizationRatioOf(node *corev1.Node) (ratio float64, ok bool, err error) {
	s, ok := node.Annotations[AnnotationCPUNormalizationRatio]
	if !ok {
		return 0, false, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, false, fmt.Errorf("annotation %s: %q is not a positive number", AnnotationCPUNormalizationRatio, s)
	}
	return v, true, nil
}

// AmplificationRatios reads AnnotationResourceAmplificationRatio from annotations; nil without an error when it is
// absent.
func AmplificationRatios(annotations map[string]string) (map[corev1.ResourceName]float64, error) {
	s, ok := annotations[AnnotationResourceAmplificationRatio]
	if !ok {
		return nil, nil
	}
	var ratios map[corev1.ResourceName]float64
	if err := json.Unmarshal([]byte(s), &ratios); err != nil {
		return nil, fmt.Errorf("parsing annotation %s: %w", AnnotationResourceAmplificationRatio, err)
	}
	return ratios, nil
}

// FormatAmplificationRatios encodes ratios as AnnotationResourceAmplificationRatio carries them: a JSON object with
// sorted keys and every ratio with two decimals.
func FormatAmplificationRatios(ratios map[corev1.ResourceName]float64) string {
	out := make(map[corev1.ResourceName]json.RawMessage, len(ratios))
	for r, v := range ratios {
		out[r] = json.RawMessage(FormatRatio(v))
	}
	b, _ := json.Marshal(out) // a map of names to numbers always encodes
	return string(b)
}

// RawAllocatableOf reads AnnotationRawAllocatable from annotations; nil without an error when it is absent.
func RawAllocatableOf(annotations map[string]string) (corev1.ResourceList, error) {
	s, ok := annotations[AnnotationRawAllocatable]
	if !ok {
		return nil, nil
	}
	var raw corev1.ResourceList
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, fmt.Errorf("parsing annotation %s: %w", AnnotationRawAllocatable, err)
	}
	return raw, nil
}

// RawAllocatable is the node's allocatable of r as the kubelet reported it, before amplification: the value saved
// in AnnotationRawAllocatable while the node carries amplification ratios, else status.allocatable. Everything that
// sets usage against allocatable (the batch and mid calculations, the agent's suppression) reads this one: usage is
// measured in the node's real CPUs and bytes, not in amplified ones.
func RawAllocatable(node *corev1.Node, r corev1.ResourceName) (resource.Quantity, bool) {
	if _, amplified := node.Annotations[AnnotationResourceAmplificationRatio]; amplified {
		if raw, err := RawAllocatableOf(node.Annotations); err == nil {
			if q, ok := raw[r]; ok {
				return q, true
			}
		}
	}
	q, ok := node.Status.Allocatable[r]
	return q, ok
}

// Amplify multiplies q by ratio, rounding up to the resource's unit (a millicore for cpu, a byte otherwise). A ratio
// of at most 1 leaves q as it is.
func Amplify(q resource.Quantity, r corev1.ResourceName, ratio float64) resource.Quantity {
	if ratio <= 1 {
		return q.DeepCopy()
	}
	if r == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(int64(math.Ceil(float64(q.MilliValue())*ratio)), q.Format)
	}
	return *resource.NewQuantity(int64(math.Ceil(float64(q.Value())*ratio)), q.Format)
}
