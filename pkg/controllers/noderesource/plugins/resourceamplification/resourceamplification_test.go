package resourceamplification

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

// TestAnnotate ports the cases of Koordinator's TestPluginCalculate (their names in the comments). Three of its cases
// configure a ratio below 1 ("final cpu normalization ratio > 1 correctly" with cpu 0.8 x 1.5, "< 1 invalid",
// "one resource amplification ratio invalid"): sloconfig refuses such a key when it is written
// (TestAmplificationKeysValidation), so they cannot reach the plugin.
func TestAnnotate(t *testing.T) {
	tests := []struct {
		name string
		// config is resource-amplification-config; nodeRatio the node's CPU normalization annotation; sameReconcile
		// the ratio the cpunormalization plugin returned in this reconcile ("-" for a removal).
		config, nodeRatio, sameReconcile string
		want                             *string // nil: removed
		wantErr                          string
	}{
		{name: "get cpu normalization ratio failed", nodeRatio: "invalid", wantErr: `"invalid" is not a positive number`},
		{name: "calculate ratio correctly with cpu normalization", nodeRatio: "1.22", want: ptr.To(`{"cpu":1.22}`)},
		{name: "calculate ratio correctly without cpu normalization", want: nil},
		{name: "calculate ratio with amplification ratio", config: `{"enable": true, "resourceAmplificationRatio": {"cpu": 1.1, "memory": 2.1}}`,
			want: ptr.To(`{"cpu":1.10,"memory":2.10}`)},
		{name: "calculate ratio with both cpu normalization ratio and amplification ratio", nodeRatio: "1.20",
			config: `{"enable": true, "resourceAmplificationRatio": {"cpu": 1.5, "memory": 2.5}}`, want: ptr.To(`{"cpu":1.80,"memory":2.50}`)},
		{name: "calculate ratio with cpu normalization ratio and amplification memory ratio", nodeRatio: "1.50",
			config: `{"enable": true, "resourceAmplificationRatio": {"memory": 3.5}}`, want: ptr.To(`{"cpu":1.50,"memory":3.50}`)},
		{name: "calculate ratio with cpu normalization ratio and other resource type ratio", nodeRatio: "1.50",
			config: `{"enable": true, "resourceAmplificationRatio": {"memory": 3.5, "storage": 1.8}}`, want: ptr.To(`{"cpu":1.50,"memory":3.50,"storage":1.80}`)},
		{name: "disabled: only the normalization ratio", nodeRatio: "1.50",
			config: `{"enable": false, "resourceAmplificationRatio": {"memory": 3.5}}`, want: ptr.To(`{"cpu":1.50}`)},
		{name: "normalization off (1.00) and nothing configured", nodeRatio: "1.00", want: nil},
		{name: "this reconcile's normalization ratio wins over the node's", nodeRatio: "1.50", sameReconcile: "1.25", want: ptr.To(`{"cpu":1.25}`)},
		{name: "a normalization ratio removed in this reconcile", nodeRatio: "1.50", sameReconcile: "-", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := map[string]string{}
			if tt.config != "" {
				data[sloconfig.ResourceAmplificationConfigKey] = tt.config
			}
			snap := sloconfig.NewStore().Apply(&corev1.ConfigMap{Data: data}).Current
			if err := snap.Key(sloconfig.ResourceAmplificationConfigKey).Err; err != nil {
				t.Fatalf("the test's config: %v", err)
			}
			b := testutil.Node("n1")
			if tt.nodeRatio != "" {
				b = b.Annotation(slov1alpha1.AnnotationCPUNormalizationRatio, tt.nodeRatio)
			}
			in := &framework.Input{Node: b.Obj(), Config: snap}
			nr := framework.NewNodeResource()
			switch tt.sameReconcile {
			case "":
			case "-":
				nr.SetAnnotations("cpunormalization", framework.AnnotationItem{Key: slov1alpha1.AnnotationCPUNormalizationRatio})
			default:
				nr.SetAnnotations("cpunormalization", framework.AnnotationItem{Key: slov1alpha1.AnnotationCPUNormalizationRatio, Value: ptr.To(tt.sameReconcile)})
			}
			items, err := New().Annotate(in, nr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != 1 || items[0].Key != slov1alpha1.AnnotationResourceAmplificationRatio {
				t.Fatalf("items = %+v, want one for %s", items, slov1alpha1.AnnotationResourceAmplificationRatio)
			}
			if d := cmp.Diff(tt.want, items[0].Value); d != "" {
				t.Errorf("ratios (-want +got):\n%s", d)
			}
		})
	}
}

// TestAnnotateLeavesWhatTheKubeletAdmitsExclusively: no ratio for cpu under the kubelet's static CPU manager nor
// for memory under its Static memory manager, as the agent reports them on the NodeResourceTopology; the reason says
// why. Managers not reported (no object, no annotations) amplify as configured; an annotation that does not parse is
// an error (the node keeps its ratios).
func TestAnnotateLeavesWhatTheKubeletAdmitsExclusively(t *testing.T) {
	const config = `{"enable": true, "resourceAmplificationRatio": {"cpu": 1.5, "memory": 1.25}}`
	tests := []struct {
		name          string
		topology      map[string]string // nil: no NodeResourceTopology
		want          *string
		wantReason    string
		wantErr       string
		normalization string
	}{
		{name: "no NodeResourceTopology", want: ptr.To(`{"cpu":1.50,"memory":1.25}`)},
		{name: "managers not reported", topology: map[string]string{}, want: ptr.To(`{"cpu":1.50,"memory":1.25}`)},
		{name: "the kubelet's defaults", topology: managers(`{"policy":"none"}`, `{"policy":"None"}`), want: ptr.To(`{"cpu":1.50,"memory":1.25}`)},
		{name: "static CPU manager", topology: managers(`{"policy":"static"}`, `{"policy":"None"}`), want: ptr.To(`{"memory":1.25}`),
			wantReason: "cpu not amplified: the kubelet's static CPU manager admits pods against the node's real cpu"},
		{name: "static CPU manager and a CPU normalization ratio", normalization: "1.20", topology: managers(`{"policy":"static"}`, `{"policy":"None"}`),
			want: ptr.To(`{"memory":1.25}`), wantReason: "cpu not amplified"},
		{name: "both static", topology: managers(`{"policy":"static"}`, `{"policy":"Static"}`), want: nil,
			wantReason: "memory not amplified: the kubelet's Static memory manager admits pods against the node's real memory; allocatable is the kubelet's"},
		{name: "an annotation that does not parse", topology: map[string]string{slov1alpha1.AnnotationKubeletCPUManagerPolicy: "static"},
			wantErr: "parsing annotation " + slov1alpha1.AnnotationKubeletCPUManagerPolicy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := sloconfig.NewStore().Apply(&corev1.ConfigMap{Data: map[string]string{sloconfig.ResourceAmplificationConfigKey: config}}).Current
			b := testutil.Node("n1")
			if tt.normalization != "" {
				b = b.Annotation(slov1alpha1.AnnotationCPUNormalizationRatio, tt.normalization)
			}
			in := &framework.Input{Node: b.Obj(), Config: snap}
			if tt.topology != nil {
				u := nrt.New()
				u.SetName("n1")
				u.SetAnnotations(tt.topology)
				in.Topology = &framework.Topology{Object: u}
			}
			items, err := New().Annotate(in, framework.NewNodeResource())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if len(items) != 1 || items[0].Value != nil || items[0].Reason != "" {
					t.Errorf("items = %+v, want the key alone (the node keeps its ratios)", items)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != 1 {
				t.Fatalf("items = %+v, want one", items)
			}
			if d := cmp.Diff(tt.want, items[0].Value); d != "" {
				t.Errorf("ratios (-want +got):\n%s", d)
			}
			if !strings.Contains(items[0].Reason, tt.wantReason) {
				t.Errorf("reason %q, want it to contain %q", items[0].Reason, tt.wantReason)
			}
		})
	}
}

func managers(cpu, memory string) map[string]string {
	return map[string]string{slov1alpha1.AnnotationKubeletCPUManagerPolicy: cpu, slov1alpha1.AnnotationKubeletMemoryManagerPolicy: memory}
}
