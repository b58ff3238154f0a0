package configmap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// Path is where the webhook is served; config/webhook/manifests.yaml points the API server at it.
const Path = "/validate-slo-controller-config"

// Validator validates one ConfigMap; requests about any other object are allowed untouched (the webhook
// configuration's matchConditions already keep them away).
type Validator struct {
	configMap types.NamespacedName
}

var _ admission.Handler = &Validator{}

// NewValidator returns the validator of the ConfigMap named configMap.
func NewValidator(configMap types.NamespacedName) *Validator {
	return &Validator{configMap: configMap}
}

// Webhook returns the validator wrapped for a controller-runtime webhook server.
func (v *Validator) Webhook() *admission.Webhook {
	return &admission.Webhook{Handler: v, RecoverPanic: ptr.To(true)}
}

// Handle implements admission.Handler.
func (v *Validator) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Namespace != v.configMap.Namespace || req.Name != v.configMap.Name {
		return admission.Allowed("")
	}
	if req.Operation == admissionv1.Delete {
		return admission.Allowed("").WithWarnings(fmt.Sprintf(
			"deleting %s returns every key to its defaults: colocation (batch and mid resources) off, threshold-based suppression and eviction off, QoS and CPU burst off", v.configMap))
	}
	cm := &corev1.ConfigMap{}
	if err := json.Unmarshal(req.Object.Raw, cm); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the ConfigMap: %w", err))
	}
	var stored map[string]string // nil on create: every key is new
	if req.Operation == admissionv1.Update {
		old := &corev1.ConfigMap{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the stored ConfigMap: %w", err))
		}
		stored = old.Data
	}
	return judge(cm.Data, stored, req.Operation == admissionv1.Update)
}

// judge parses data and refuses it for the keys the request writes: those that are new or whose value differs from
// stored (every key when update is false). A stored key that is invalid and that the request leaves as it is (it
// reached the API server while the webhook was away, or before an upgrade that tightened a bound) does not block
// the request: it is reported as a warning, so that an operator can mend one key at a time, or change only the
// labels, while another key is still bad. Findings (unknown fields and keys) are reported for the written keys only.
func judge(data, stored map[string]string, update bool) admission.Response {
	written := func(key string) bool {
		if !update {
			return true
		}
		old, had := stored[key]
		return !had || old != data[key]
	}
	res := sloconfig.ParseConfigMap(data)
	var errs []error
	var warnings []string
	for _, k := range res.Keys {
		if !k.Present {
			continue
		}
		switch {
		case written(k.Key):
			if k.Err != nil {
				errs = append(errs, k.Err)
			}
			for _, f := range k.Findings {
				warnings = append(warnings, k.Key+": "+f.String())
			}
		case k.Err != nil:
			for _, line := range strings.Split(k.Err.Error(), "\n") {
				warnings = append(warnings, StoredInvalidWarning+line)
			}
		}
	}
	var unknown []string
	for _, k := range res.UnknownKeys {
		if written(k) {
			unknown = append(unknown, k)
		}
	}
	for _, k := range unknown {
		warnings = append(warnings, fmt.Sprintf("%s: unknown key, ignored (known keys: %s)", k, strings.Join(sloconfig.Keys(), ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return admission.Denied(err.Error()).WithWarnings(warnings...)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

// StoredInvalidWarning begins the warning about a stored key that is invalid and that a request leaves unchanged;
// the key's error follows, as the manager's InvalidSLOConfig event gives it. The manager keeps such a key on its last
// good value, or on its defaults when it never had one, until the key is fixed or removed.
const StoredInvalidWarning = "left unchanged and still rejected (the manager keeps its last good value or its defaults until it is fixed or removed): "
