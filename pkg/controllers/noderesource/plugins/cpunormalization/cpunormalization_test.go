package cpunormalization

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource/framework"
	"github.com/gleaner-sh/gleaner/pkg/nrt"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// xxxRatios is the ratio model of Koordinator's plugin tests.
const xxxRatios = `{"baseRatio": 1.5, "turboEnabledRatio": 1.65, "hyperThreadEnabledRatio": 1.0, "hyperThreadTurboEnabledRatio": 1.1}`

const htTurbo = `{"cpuModel": "XXX", "hyperThreadEnabled": true, "turboEnabled": true}`

func input(t *testing.T, config string, labels map[string]string, cpuInfo *string) *framework.Input {
	t.Helper()
	data := map[string]string{}
	if config != "" {
		data[sloconfig.CPUNormalizationConfigKey] = config
	}
	snap := sloconfig.NewStore().Apply(&corev1.ConfigMap{Data: data}).Current
	if err := snap.Key(sloconfig.CPUNormalizationConfigKey).Err; err != nil {
		t.Fatalf("the test's config: %v", err)
	}
	b := testutil.Node("n1")
	for k, v := range labels {
		b = b.Label(k, v)
	}
	in := &framework.Input{Node: b.Obj(), Config: snap}
	if cpuInfo != nil {
		u := nrt.New()
		u.SetName("n1")
		u.SetAnnotations(map[string]string{slov1alpha1.AnnotationCPUBasicInfo: *cpuInfo})
		in.Topology = &framework.Topology{Object: u}
	}
	return in
}

// TestAnnotate ports the cases of Koordinator's TestPluginCalculate (their names in the comments) where Gleaner
// behaves alike, but for one deliberate difference: where Koordinator writes the ratio "1.00" for a node without
// normalization, Gleaner removes the annotation. Koordinator's "failed to validate ratio" (a ratio of 10) cannot happen here: sloconfig refuses the
// key (TestAmplificationKeysValidation).
func TestAnnotate(t *testing.T) {
	tests := []struct {
		name       string
		config     string
		labels     map[string]string
		cpuInfo    *string
		want       *string // nil: removed (Koordinator writes "1.00")
		wantErr    string
		wantWhy    string
		wantSource string
	}{
		{name: "no config: off", cpuInfo: ptr.To(htTurbo), want: nil, wantSource: "cpu-normalization-config: cluster"},
		{name: "label that does not parse", // failed to get node config
			config: `{"enable": true}`, labels: map[string]string{slov1alpha1.LabelCPUNormalizationEnabled: "{]"}, wantErr: `"{]" is not true or false`},
		{name: "strategy disabled", // node strategy is disabled
			config: `{"enable": false, "ratioModel": {}}`, want: nil},
		{name: "no NodeResourceTopology", // failed to get NRT
			config: `{"enable": true, "ratioModel": {}}`, wantErr: "has no NodeResourceTopology"},
		{name: "no CPU description", // failed to get CPUBasicInfo
			config: `{"enable": true}`, cpuInfo: ptr.To(""), wantErr: "has no node.koordinator.sh/cpu-basic-info annotation yet"},
		{name: "CPU description does not parse", // failed to parse CPUBasicInfo
			config: `{"enable": true}`, cpuInfo: ptr.To(`{"cpuModel": 1}`), wantErr: "parsing annotation node.koordinator.sh/cpu-basic-info"},
		{name: "no ratio for the combination", // failed to get ratio
			config: `{"enable": true, "ratioModel": {"XXX": {"baseRatio": 1.0}}}`, cpuInfo: ptr.To(htTurbo),
			wantErr: "ratioModel[XXX] has no hyperThreadTurboEnabledRatio (hyper-threading on, turbo on), and there is no defaultRatio"},
		{name: "ratio", // get ratio correctly
			config: `{"enable": true, "ratioModel": {"XXX": ` + xxxRatios + `}}`, cpuInfo: ptr.To(htTurbo), want: ptr.To("1.10"),
			wantWhy: "ratioModel[XXX].hyperThreadTurboEnabledRatio (hyper-threading on, turbo on)"},
		{name: "node override enables", // get ratio correctly 1
			config: `{"enable": false, "ratioModel": {"XXX": {"baseRatio": 1, "turboEnabledRatio": 1, "hyperThreadEnabledRatio": 1, "hyperThreadTurboEnabledRatio": 1}},
				"nodeConfigs": [{"name": "xxx", "nodeSelector": {"matchLabels": {"cpu": "xxx"}}, "enable": true, "ratioModel": {"XXX": ` + xxxRatios + `}}]}`,
			labels: map[string]string{"cpu": "xxx"}, cpuInfo: ptr.To(htTurbo), want: ptr.To("1.10"), wantSource: "cpu-normalization-config: nodeConfigs xxx"},
		{name: "label enables over the strategy", // get ratio when strategy disable but not enabled
			config: `{"enable": false, "ratioModel": {"XXX": ` + xxxRatios + `}}`, labels: map[string]string{slov1alpha1.LabelCPUNormalizationEnabled: "true"},
			cpuInfo: ptr.To(htTurbo), want: ptr.To("1.10"), wantSource: "label node.koordinator.sh/cpu-normalization-enabled=true"},
		{name: "label disables over the strategy", // strategy enabled but node disabled
			config: `{"enable": true, "ratioModel": {"XXX": ` + xxxRatios + `}}`, labels: map[string]string{slov1alpha1.LabelCPUNormalizationEnabled: "false"},
			cpuInfo: ptr.To(htTurbo), want: nil},
		{name: "unknown model takes the default ratio",
			config: `{"enable": true, "defaultRatio": 1.234, "ratioModel": {"XXX": ` + xxxRatios + `}}`, cpuInfo: ptr.To(`{"cpuModel": "YYY"}`),
			want: ptr.To("1.23"), wantWhy: `defaultRatio: ratioModel has no CPU model "YYY"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input(t, tt.config, tt.labels, tt.cpuInfo)
			if tt.cpuInfo != nil && *tt.cpuInfo == "" {
				in.Topology.Object.SetAnnotations(nil)
			}
			items, err := New().Annotate(in, framework.NewNodeResource())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if d := cmp.Diff([]framework.AnnotationItem{{Key: slov1alpha1.AnnotationCPUNormalizationRatio}}, items); d != "" {
					t.Errorf("on an error the plugin names the annotation it keeps (-want +got):\n%s", d)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != 1 || items[0].Key != slov1alpha1.AnnotationCPUNormalizationRatio {
				t.Fatalf("items = %+v, want one for %s", items, slov1alpha1.AnnotationCPUNormalizationRatio)
			}
			if d := cmp.Diff(tt.want, items[0].Value); d != "" {
				t.Errorf("ratio (-want +got):\n%s", d)
			}
			if tt.wantWhy != "" && items[0].Reason != tt.wantWhy {
				t.Errorf("reason = %q, want %q", items[0].Reason, tt.wantWhy)
			}
			if tt.wantSource != "" && items[0].Source != tt.wantSource {
				t.Errorf("source = %q, want %q", items[0].Source, tt.wantSource)
			}
		})
	}
}

// TestRatio ports Koordinator's Test_getCPUNormalizationRatioFromModel and Test_getCPUNormalizationRatio.
func TestRatio(t *testing.T) {
	full := sloconfig.ModelRatioCfg{BaseRatio: ptr.To(1.5), TurboEnabledRatio: ptr.To(1.65), HyperThreadEnabledRatio: ptr.To(1.0), HyperThreadTurboEnabledRatio: ptr.To(1.1)}
	xxx := func(m sloconfig.ModelRatioCfg) map[string]sloconfig.ModelRatioCfg {
		return map[string]sloconfig.ModelRatioCfg{"CPU XXX": m}
	}
	tests := []struct {
		name     string
		info     slov1alpha1.CPUBasicInfo
		strategy sloconfig.CPUNormalizationStrategy
		want     float64 // 0: an error
	}{
		{"nil model", slov1alpha1.CPUBasicInfo{}, sloconfig.CPUNormalizationStrategy{}, 0},
		{"no ratio for model", slov1alpha1.CPUBasicInfo{CPUModel: "CPU XXX"}, sloconfig.CPUNormalizationStrategy{RatioModel: map[string]sloconfig.ModelRatioCfg{"CPU YYY": {BaseRatio: ptr.To(1.0)}}}, 0},
		{"missing ratio for Turbo and HT on", slov1alpha1.CPUBasicInfo{CPUModel: "CPU XXX", TurboEnabled: true, HyperThreadEnabled: true},
			sloconfig.CPUNormalizationStrategy{RatioModel: xxx(sloconfig.ModelRatioCfg{BaseRatio: ptr.To(1.5)})}, 0},
		{"got ratio for Turbo and HT on", slov1alpha1.CPUBasicInfo{CPUModel: "CPU XXX", TurboEnabled: true, HyperThreadEnabled: true},
			sloconfig.CPUNormalizationStrategy{RatioModel: xxx(full)}, 1.1},
		{"got ratio for HT on", slov1alpha1.CPUBasicInfo{CPUModel: "CPU XXX", HyperThreadEnabled: true}, sloconfig.CPUNormalizationStrategy{RatioModel: xxx(full)}, 1.0},
		{"got ratio for Turbo on", slov1alpha1.CPUBasicInfo{CPUModel: "CPU XXX", TurboEnabled: true}, sloconfig.CPUNormalizationStrategy{RatioModel: xxx(full)}, 1.65},
		{"got ratio for basic setting", slov1alpha1.CPUBasicInfo{CPUModel: "CPU XXX"}, sloconfig.CPUNormalizationStrategy{RatioModel: xxx(full)}, 1.5},
		{"missing ratio for basic setting", slov1alpha1.CPUBasicInfo{CPUModel: "CPU XXX"}, sloconfig.CPUNormalizationStrategy{RatioModel: xxx(sloconfig.ModelRatioCfg{})}, 0},
		{"nil model and nil default ratio", slov1alpha1.CPUBasicInfo{}, sloconfig.CPUNormalizationStrategy{}, 0},
		{"nil model and valid default ratio", slov1alpha1.CPUBasicInfo{}, sloconfig.CPUNormalizationStrategy{DefaultRatio: ptr.To(2.5)}, 2.5},
		{"model takes precedence over the default ratio", slov1alpha1.CPUBasicInfo{CPUModel: "CPU XXX"},
			sloconfig.CPUNormalizationStrategy{DefaultRatio: ptr.To(3.5), RatioModel: xxx(sloconfig.ModelRatioCfg{BaseRatio: ptr.To(1.9), TurboEnabledRatio: ptr.To(1.65)})}, 1.9},
		{"use the default ratio with invalid model", slov1alpha1.CPUBasicInfo{CPUModel: "CPU XXX"},
			sloconfig.CPUNormalizationStrategy{DefaultRatio: ptr.To(2.2), RatioModel: xxx(sloconfig.ModelRatioCfg{})}, 2.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := Ratio(&tt.strategy, &tt.info)
			if tt.want == 0 {
				if err == nil {
					t.Fatalf("Ratio = %v, want an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Ratio = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
