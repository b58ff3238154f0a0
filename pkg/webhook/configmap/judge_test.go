package configmap_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/pkg/webhook/configmap"
)

// TestHandleJudgesTheKeysARequestWrites is TestWebhookJudgesOnlyChangedKeys without the API server, for every
// operation: what is refused and what comes back as a warning.
func TestHandleJudgesTheKeysARequestWrites(t *testing.T) {
	const (
		badInterval = `{"metricReportIntervalSeconds": 86400}`
		badWindow   = `{"clusterStrategy": {"cpuEvictTimeWindowSeconds": 0}}`
		intervalErr = "colocation-config: metricReportIntervalSeconds: Invalid value: 86400: must be from 1 to 3600"
		windowErr   = "resource-threshold-config: clusterStrategy.cpuEvictTimeWindowSeconds: Invalid value: 0: must be from 1 to 3600"
		unknownKey  = "colocation-confg: unknown key, ignored"
	)
	twoBad := map[string]string{sloconfig.ColocationConfigKey: badInterval, sloconfig.ResourceThresholdConfigKey: badWindow}
	with := func(data map[string]string, key, value string) map[string]string {
		out := map[string]string{}
		for k, v := range data {
			out[k] = v
		}
		if value == "" {
			delete(out, key)
		} else {
			out[key] = value
		}
		return out
	}
	stored := func(err string) string { return configmap.StoredInvalidWarning + err }
	tests := []struct {
		name      string
		op        admissionv1.Operation
		old, data map[string]string
		oldLabels map[string]string
		denied    []string // lines of the denial; none: allowed
		warnings  []string // prefixes of the warnings, in order
	}{
		{name: "create judges every key", op: admissionv1.Create, data: twoBad, denied: []string{intervalErr, windowErr}},
		{name: "label only", op: admissionv1.Update, old: twoBad, data: twoBad, oldLabels: map[string]string{"a": "b"},
			warnings: []string{stored(intervalErr), stored(windowErr)}},
		{name: "fix one of two", op: admissionv1.Update, old: twoBad, data: with(twoBad, sloconfig.ColocationConfigKey, "{}"),
			warnings: []string{stored(windowErr)}},
		{name: "remove one of two", op: admissionv1.Update, old: twoBad, data: with(twoBad, sloconfig.ColocationConfigKey, ""),
			warnings: []string{stored(windowErr)}},
		{name: "a bad value over a bad key", op: admissionv1.Update, old: twoBad,
			data:   with(twoBad, sloconfig.ColocationConfigKey, `{"metricReportIntervalSeconds": 86400, "enable": true}`),
			denied: []string{intervalErr}, warnings: []string{stored(windowErr)}},
		{name: "adding a bad key", op: admissionv1.Update, old: with(twoBad, sloconfig.ResourceThresholdConfigKey, ""), data: twoBad,
			denied: []string{windowErr}, warnings: []string{stored(intervalErr)}},
		{name: "an unknown key is reported when written only", op: admissionv1.Update,
			old: map[string]string{"colocation-confg": "{}"}, data: map[string]string{"colocation-confg": "{}", sloconfig.CPUBurstConfigKey: "{}"}},
		{name: "an unknown key written", op: admissionv1.Update, old: map[string]string{}, data: map[string]string{"colocation-confg": "{}"},
			warnings: []string{unknownKey}},
	}
	v := configmap.NewValidator(types.NamespacedName{Namespace: namespace, Name: "slo-controller-config"})
	raw := func(data, labels map[string]string) runtime.RawExtension {
		b, err := json.Marshal(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "slo-controller-config", Labels: labels}, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: tt.op, Namespace: namespace,
				Name: "slo-controller-config", Object: raw(tt.data, nil)}}
			if tt.op == admissionv1.Update {
				req.OldObject = raw(tt.old, tt.oldLabels)
			}
			resp := v.Handle(context.Background(), req)
			var denied []string
			if !resp.Allowed {
				denied = strings.Split(resp.Result.Message, "\n")
			}
			if diff := cmp.Diff(tt.denied, denied); diff != "" {
				t.Errorf("denial (-want +got):\n%s", diff)
			}
			if len(resp.Warnings) != len(tt.warnings) {
				t.Fatalf("warnings %q, want %d beginning %q", resp.Warnings, len(tt.warnings), tt.warnings)
			}
			for i, w := range tt.warnings {
				if !strings.HasPrefix(resp.Warnings[i], w) {
					t.Errorf("warning %d = %q, want it to begin %q", i, resp.Warnings[i], w)
				}
			}
		})
	}
}
