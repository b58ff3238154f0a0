package sloconfig

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestAmplificationKeysValidation(t *testing.T) {
	sel := `"nodeSelector": {"matchLabels": {"gen": "old"}}`
	tests := []struct {
		name, key, value string
		wantErr          []string // substrings; none: valid
	}{
		{"empty object", CPUNormalizationConfigKey, `{}`, nil},
		// The example of Koordinator's CPU normalization documentation.
		{"koordinator example", CPUNormalizationConfigKey, `{"enable": true, "ratioModel": {"Intel(R) Xeon(R) Platinum 8269CY CPU @ 2.50GHz":
			{"baseRatio": 1.29, "hyperThreadEnabledRatio": 0.82, "turboEnabledRatio": 1.52, "hyperThreadTurboEnabledRatio": 1.0}}}`,
			[]string{`ratioModel[Intel(R) Xeon(R) Platinum 8269CY CPU @ 2.50GHz].hyperThreadEnabledRatio: Invalid value: 0.82: must be from 1 to 5`}},
		{"ratios at the bounds", CPUNormalizationConfigKey, `{"defaultRatio": 1, "ratioModel": {"m": {"baseRatio": 5, "turboEnabledRatio": 1.0}}}`, nil},
		{"default ratio above 5", CPUNormalizationConfigKey, `{"nodeConfigs": [{"name": "a", ` + sel + `, "defaultRatio": 5.01}]}`,
			[]string{"nodeConfigs[0].defaultRatio: Invalid value: 5.01: must be from 1 to 5"}},
		{"every ratio of a model", CPUNormalizationConfigKey, `{"ratioModel": {"m": {"baseRatio": 0, "hyperThreadEnabledRatio": 6, "turboEnabledRatio": -1, "hyperThreadTurboEnabledRatio": 10}}}`,
			[]string{"ratioModel[m].baseRatio: Invalid value: 0", "ratioModel[m].hyperThreadEnabledRatio: Invalid value: 6",
				"ratioModel[m].turboEnabledRatio: Invalid value: -1", "ratioModel[m].hyperThreadTurboEnabledRatio: Invalid value: 10"}},
		{"empty model name", CPUNormalizationConfigKey, `{"ratioModel": {"": {"baseRatio": 1}}}`, []string{"a CPU model name must not be empty"}},
		{"ratio not a number", CPUNormalizationConfigKey, `{"defaultRatio": "1.2"}`, []string{"defaultRatio at line 1, column 22: a JSON string cannot be a float64"}},
		{"override without selector", CPUNormalizationConfigKey, `{"nodeConfigs": [{"name": "a", "enable": true}]}`,
			[]string{"nodeConfigs[0].nodeSelector: Required value"}},
		{"amplification", ResourceAmplificationConfigKey, `{"enable": true, "resourceAmplificationRatio": {"cpu": 1.5, "memory": 1}}`, nil},
		{"amplification below 1", ResourceAmplificationConfigKey, `{"resourceAmplificationRatio": {"cpu": 0.5}}`,
			[]string{"resourceAmplificationRatio[cpu]: Invalid value: 0.5: must be from 1 to 100"}},
		{"amplification above 100", ResourceAmplificationConfigKey, `{"nodeConfigs": [{"name": "a", ` + sel + `, "resourceAmplificationRatio": {"memory": 101}}]}`,
			[]string{"nodeConfigs[0].resourceAmplificationRatio[memory]: Invalid value: 101: must be from 1 to 100"}},
		{"amplification of another resource is carried", ResourceAmplificationConfigKey, `{"resourceAmplificationRatio": {"example.com/eni": 2}}`, nil},
		{"amplification of no resource name", ResourceAmplificationConfigKey, `{"resourceAmplificationRatio": {"not a name": 2}}`,
			[]string{"resourceAmplificationRatio[not a name]: Invalid value: \"not a name\": not a resource name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectParse(t, tt.key, tt.value, tt.wantErr) })
	}
}

// TestAmplificationLayering checks defaults < cluster < first matching nodeConfigs entry, with maps merged entry by
// entry as Koordinator merges them.
func TestAmplificationLayering(t *testing.T) {
	s := snapshotOf(t, map[string]string{
		CPUNormalizationConfigKey: `{"enable": true, "defaultRatio": 1.1,
			"ratioModel": {"A": {"baseRatio": 1.5, "hyperThreadEnabledRatio": 1.2}, "B": {"baseRatio": 2}},
			"nodeConfigs": [{"name": "old", "nodeSelector": {"matchLabels": {"gen": "old"}},
				"ratioModel": {"A": {"baseRatio": 1.3}, "C": {"baseRatio": 3}}}]}`,
		ResourceAmplificationConfigKey: `{"enable": true, "resourceAmplificationRatio": {"cpu": 1.5},
			"nodeConfigs": [{"name": "mem", "nodeSelector": {"matchLabels": {"gen": "old"}}, "resourceAmplificationRatio": {"memory": 1.2}}]}`,
	})
	expectDiff(t, "cluster normalization", &CPUNormalizationStrategy{
		Enable: ptr.To(true), DefaultRatio: ptr.To(1.1),
		RatioModel: map[string]ModelRatioCfg{
			"A": {BaseRatio: ptr.To(1.5), HyperThreadEnabledRatio: ptr.To(1.2)},
			"B": {BaseRatio: ptr.To(2.0)},
		},
	}, s.CPUNormalization(nil))
	expectDiff(t, "old nodes' normalization", &CPUNormalizationStrategy{
		Enable: ptr.To(true), DefaultRatio: ptr.To(1.1),
		RatioModel: map[string]ModelRatioCfg{
			"A": {BaseRatio: ptr.To(1.3), HyperThreadEnabledRatio: ptr.To(1.2)},
			"B": {BaseRatio: ptr.To(2.0)},
			"C": {BaseRatio: ptr.To(3.0)},
		},
	}, s.CPUNormalization(map[string]string{"gen": "old"}))
	expectDiff(t, "old nodes' amplification", &ResourceAmplificationStrategy{
		Enable:                     ptr.To(true),
		ResourceAmplificationRatio: map[corev1.ResourceName]float64{corev1.ResourceCPU: 1.5, corev1.ResourceMemory: 1.2},
	}, s.ResourceAmplification(map[string]string{"gen": "old"}))
	expectDiff(t, "source", "cpu-normalization-config: nodeConfigs old", s.StrategySource(CPUNormalizationConfigKey, map[string]string{"gen": "old"}))
	expectDiff(t, "source", "resource-amplification-config: cluster", s.StrategySource(ResourceAmplificationConfigKey, nil))

	empty := snapshotOf(t, nil)
	expectDiff(t, "default normalization", &CPUNormalizationStrategy{Enable: ptr.To(false)}, empty.CPUNormalization(nil))
	expectDiff(t, "default amplification", &ResourceAmplificationStrategy{Enable: ptr.To(false)}, empty.ResourceAmplification(nil))
}

func TestNodeResourceChanged(t *testing.T) {
	store := NewStore()
	base := map[string]string{
		ColocationConfigKey:            `{"enable": true}`,
		CPUNormalizationConfigKey:      `{"enable": true, "nodeConfigs": [{"name": "old", "nodeSelector": {"matchLabels": {"gen": "old"}}, "defaultRatio": 1.2}]}`,
		ResourceAmplificationConfigKey: `{}`,
	}
	first := store.Apply(&corev1.ConfigMap{Data: base}).Current
	with := func(key, v string) *Snapshot {
		data := map[string]string{}
		for k, old := range base {
			data[k] = old
		}
		data[key] = v
		return NewStore().Apply(&corev1.ConfigMap{Data: data}).Current
	}
	old, other := map[string]string{"gen": "old"}, map[string]string{"gen": "new"}
	tests := []struct {
		name   string
		next   *Snapshot
		labels map[string]string
		want   bool
	}{
		{"first load", nil, other, true},
		{"a node override's ratio, its node", with(CPUNormalizationConfigKey, `{"enable": true, "nodeConfigs": [{"name": "old", "nodeSelector": {"matchLabels": {"gen": "old"}}, "defaultRatio": 1.3}]}`), old, true},
		{"a node override's ratio, another node", with(CPUNormalizationConfigKey, `{"enable": true, "nodeConfigs": [{"name": "old", "nodeSelector": {"matchLabels": {"gen": "old"}}, "defaultRatio": 1.3}]}`), other, false},
		{"amplification turned on", with(ResourceAmplificationConfigKey, `{"enable": true}`), other, true},
		{"an unrelated key", with(SystemConfigKey, `{"clusterStrategy": {"minFreeKbytesFactor": 100}}`), other, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev := first
			if tt.next == nil {
				prev, tt.next = nil, first
			}
			if got := NodeResourceChanged(prev, tt.next, tt.labels); got != tt.want {
				t.Errorf("NodeResourceChanged = %v, want %v", got, tt.want)
			}
		})
	}
}
