package configmap

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

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
	res := sloconfig.ParseConfigMap(cm.Data)
	if err := res.Err(); err != nil {
		return admission.Denied(err.Error()).WithWarnings(res.Warnings()...)
	}
	return admission.Allowed("").WithWarnings(res.Warnings()...)
}
