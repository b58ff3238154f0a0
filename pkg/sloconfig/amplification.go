package sloconfig

import (
	"fmt"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// The two keys of docs/qos.md#cpu-normalization-and-resource-amplification. Both have Koordinator's shape: the
// cluster strategy at the top level, node overrides in nodeConfigs (as colocation-config):
//
//	cpu-normalization-config: |
//	  {"enable": true, "ratioModel": {"Intel(R) Xeon(R) Platinum 8269CY CPU @ 2.50GHz":
//	      {"baseRatio": 1.5, "hyperThreadEnabledRatio": 1.0, "turboEnabledRatio": 1.8, "hyperThreadTurboEnabledRatio": 1.2}},
//	   "nodeConfigs": [{"name": "old", "nodeSelector": {"matchLabels": {"gen": "old"}}, "defaultRatio": 1.0}]}
//	resource-amplification-config: |
//	  {"enable": true, "resourceAmplificationRatio": {"cpu": 1.5, "memory": 1.2}}

// ConfigMap keys of CPU normalization and resource amplification.
const (
	// CPUNormalizationConfigKey holds the CPU normalization ratio of each CPU model.
	CPUNormalizationConfigKey = "cpu-normalization-config"
	// ResourceAmplificationConfigKey holds the ratios by which nodes' allocatable is amplified.
	ResourceAmplificationConfigKey = "resource-amplification-config"
)

// MaxAmplificationRatio bounds a resource-amplification-config ratio. Koordinator sets no upper bound; a hundredfold
// overcommit is no policy but a typo, and the bound keeps an amplified allocatable far from overflowing.
const MaxAmplificationRatio = 100.0

// CPUNormalizationCfg is the whole cpu-normalization-config key.
//
// +kubebuilder:object:generate=true
type CPUNormalizationCfg struct {
	CPUNormalizationStrategy `json:",inline"`
	// NodeConfigs override the cluster strategy for the nodes their selector matches; the first match wins.
	NodeConfigs []NodeCPUNormalizationCfg `json:"nodeConfigs,omitempty"`
}

// NodeCPUNormalizationCfg is one node override of cpu-normalization-config.
//
// +kubebuilder:object:generate=true
type NodeCPUNormalizationCfg struct {
	NodeCfgProfile           `json:",inline"`
	CPUNormalizationStrategy `json:",inline"`
}

// CPUNormalizationStrategy is how a node's CPU normalization ratio is found. A node override's ratioModel is merged
// with the cluster's model by model, and a model's ratios field by field.
//
// +kubebuilder:object:generate=true
type CPUNormalizationStrategy struct {
	// Enable turns CPU normalization on: the node gets a ratio. Off, its ratio is 1.00. Default false. The node
	// label node.koordinator.sh/cpu-normalization-enabled, when set, wins over it.
	Enable *bool `json:"enable,omitempty"`
	// DefaultRatio is the ratio of a node whose CPU model (or whose hyper-threading and turbo combination) has no
	// ratio in RatioModel, 1.0 to 5.0. Unset, such a node keeps the ratio it has.
	DefaultRatio *float64 `json:"defaultRatio,omitempty"`
	// RatioModel maps a CPU model, as /proc/cpuinfo names it, to its ratios.
	RatioModel map[string]ModelRatioCfg `json:"ratioModel,omitempty"`
}

// ModelRatioCfg holds a CPU model's ratio for each combination of hyper-threading and turbo, each 1.0 to 5.0.
//
// +kubebuilder:object:generate=true
type ModelRatioCfg struct {
	// BaseRatio applies with neither hyper-threading nor turbo.
	BaseRatio *float64 `json:"baseRatio,omitempty"`
	// HyperThreadEnabledRatio applies with hyper-threading on and turbo off.
	HyperThreadEnabledRatio *float64 `json:"hyperThreadEnabledRatio,omitempty"`
	// TurboEnabledRatio applies with turbo on and hyper-threading off.
	TurboEnabledRatio *float64 `json:"turboEnabledRatio,omitempty"`
	// HyperThreadTurboEnabledRatio applies with both on.
	HyperThreadTurboEnabledRatio *float64 `json:"hyperThreadTurboEnabledRatio,omitempty"`
}

// ResourceAmplificationCfg is the whole resource-amplification-config key.
//
// +kubebuilder:object:generate=true
type ResourceAmplificationCfg struct {
	ResourceAmplificationStrategy `json:",inline"`
	// NodeConfigs override the cluster strategy for the nodes their selector matches; the first match wins.
	NodeConfigs []NodeResourceAmplificationCfg `json:"nodeConfigs,omitempty"`
}

// NodeResourceAmplificationCfg is one node override of resource-amplification-config.
//
// +kubebuilder:object:generate=true
type NodeResourceAmplificationCfg struct {
	NodeCfgProfile                `json:",inline"`
	ResourceAmplificationStrategy `json:",inline"`
}

// ResourceAmplificationStrategy is how much a node's allocatable is amplified. A node override's ratios are merged
// with the cluster's resource by resource.
//
// +kubebuilder:object:generate=true
type ResourceAmplificationStrategy struct {
	// Enable turns amplification on. Default false; off, only the CPU normalization ratio amplifies cpu.
	Enable *bool `json:"enable,omitempty"`
	// ResourceAmplificationRatio maps a resource to its ratio, 1.0 to 100. Only cpu and memory are amplified; a
	// ratio for another resource is carried in the node's annotation and changes nothing.
	ResourceAmplificationRatio map[corev1.ResourceName]float64 `json:"resourceAmplificationRatio,omitempty"`
}

func cpuNormalizationKey() strategyKey[CPUNormalizationCfg, CPUNormalizationStrategy] {
	type S = CPUNormalizationStrategy
	return strategyKey[CPUNormalizationCfg, S]{
		nodesPath: nodeConfigsPath,
		split: func(c *CPUNormalizationCfg) (*S, []nodeEntry[S]) {
			var nodes []nodeEntry[S]
			for i := range c.NodeConfigs {
				n := &c.NodeConfigs[i]
				nodes = append(nodes, nodeEntry[S]{profile: n.NodeCfgProfile, strategy: &n.CPUNormalizationStrategy})
			}
			return &c.CPUNormalizationStrategy, nodes
		},
		merge: slov1alpha1.MergeStrategy[S],
		finish: func(s *S) *S {
			return slov1alpha1.MergeStrategy(&S{Enable: ptr.To(false)}, s)
		},
		validateRaw: validateCPUNormalization,
	}
}

func resourceAmplificationKey() strategyKey[ResourceAmplificationCfg, ResourceAmplificationStrategy] {
	type S = ResourceAmplificationStrategy
	return strategyKey[ResourceAmplificationCfg, S]{
		nodesPath: nodeConfigsPath,
		split: func(c *ResourceAmplificationCfg) (*S, []nodeEntry[S]) {
			var nodes []nodeEntry[S]
			for i := range c.NodeConfigs {
				n := &c.NodeConfigs[i]
				nodes = append(nodes, nodeEntry[S]{profile: n.NodeCfgProfile, strategy: &n.ResourceAmplificationStrategy})
			}
			return &c.ResourceAmplificationStrategy, nodes
		},
		merge: slov1alpha1.MergeStrategy[S],
		finish: func(s *S) *S {
			return slov1alpha1.MergeStrategy(&S{Enable: ptr.To(false)}, s)
		},
		validateRaw: validateResourceAmplification,
	}
}

// ratioIn checks one ratio against [lo, hi]. Koordinator checks a node's ratio only when it calculates it, and then
// leaves the node as it is; here the key is refused when it is written, so the mistake is seen at once.
func ratioIn(v *float64, lo, hi float64, path *field.Path) field.ErrorList {
	if v == nil || (*v >= lo && *v <= hi) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, *v, fmt.Sprintf("must be from %v to %v", lo, hi))}
}

// validateCPUNormalization checks that every ratio a strategy sets lies in [1, 5].
func validateCPUNormalization(s *CPUNormalizationStrategy, path *field.Path) field.ErrorList {
	lo, hi := slov1alpha1.MinCPUNormalizationRatio, slov1alpha1.MaxCPUNormalizationRatio
	errs := ratioIn(s.DefaultRatio, lo, hi, path.Child("defaultRatio"))
	models := make([]string, 0, len(s.RatioModel))
	for m := range s.RatioModel {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		r, p := s.RatioModel[m], path.Child("ratioModel").Key(m)
		if m == "" {
			errs = append(errs, field.Invalid(p, m, "a CPU model name must not be empty"))
		}
		errs = append(errs, ratioIn(r.BaseRatio, lo, hi, p.Child("baseRatio"))...)
		errs = append(errs, ratioIn(r.HyperThreadEnabledRatio, lo, hi, p.Child("hyperThreadEnabledRatio"))...)
		errs = append(errs, ratioIn(r.TurboEnabledRatio, lo, hi, p.Child("turboEnabledRatio"))...)
		errs = append(errs, ratioIn(r.HyperThreadTurboEnabledRatio, lo, hi, p.Child("hyperThreadTurboEnabledRatio"))...)
	}
	return errs
}

// validateResourceAmplification checks resource names and that every ratio lies in [1, MaxAmplificationRatio].
func validateResourceAmplification(s *ResourceAmplificationStrategy, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := make([]string, 0, len(s.ResourceAmplificationRatio))
	for r := range s.ResourceAmplificationRatio {
		names = append(names, string(r))
	}
	sort.Strings(names)
	for _, r := range names {
		p := path.Child("resourceAmplificationRatio").Key(r)
		for _, msg := range validation.IsQualifiedName(r) {
			errs = append(errs, field.Invalid(p, r, "not a resource name: "+msg))
		}
		v := s.ResourceAmplificationRatio[corev1.ResourceName(r)]
		if math.IsNaN(v) {
			continue // JSON has no NaN; only a Go caller can write one
		}
		errs = append(errs, ratioIn(&v, 1, MaxAmplificationRatio, p)...)
	}
	return errs
}

// CPUNormalization returns the CPU normalization strategy of a node with these labels: defaults, overlaid by the
// cluster strategy, overlaid by the first matching nodeConfigs entry. Enable is always set.
func (s *Snapshot) CPUNormalization(nodeLabels map[string]string) *CPUNormalizationStrategy {
	_, eff := value[CPUNormalizationStrategy](s, CPUNormalizationConfigKey).pick(labels.Set(nodeLabels))
	return eff.DeepCopy()
}

// ResourceAmplification returns the resource amplification strategy of a node with these labels, layered as
// CPUNormalization's. Enable is always set.
func (s *Snapshot) ResourceAmplification(nodeLabels map[string]string) *ResourceAmplificationStrategy {
	_, eff := value[ResourceAmplificationStrategy](s, ResourceAmplificationConfigKey).pick(labels.Set(nodeLabels))
	return eff.DeepCopy()
}

// StrategySource says which part of a key applies to a node with these labels, for explanations: "KEY: cluster",
// or "KEY: nodeConfigs NAME" (nodeStrategies for the keys that call their overrides so).
func (s *Snapshot) StrategySource(key string, nodeLabels map[string]string) string {
	name := s.Override(key, nodeLabels)
	if name == "" {
		return key + ": cluster"
	}
	list := "nodeStrategies"
	switch key {
	case ColocationConfigKey, HostApplicationConfigKey, CPUNormalizationConfigKey, ResourceAmplificationConfigKey:
		list = "nodeConfigs"
	}
	return fmt.Sprintf("%s: %s %s", key, list, name)
}
