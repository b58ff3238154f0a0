package netqos

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
)

// ReasonBadAnnotation is the reason of the Warning event on a pod whose network QoS annotation cannot be used.
const ReasonBadAnnotation = "InvalidNetworkQOSAnnotation"

// podAnnotation is what a pod's network QoS annotation may say.
type podAnnotation struct {
	IngressLimit *intstr.IntOrString `json:"ingressLimit,omitempty"`
	EgressLimit  *intstr.IntOrString `json:"egressLimit,omitempty"`
}

// annotation is the pod's own network QoS annotation and its key: gleaner.sh's, else Koordinator's.
func annotation(pod *corev1.Pod) (key, raw string, ok bool) {
	for _, k := range []string{slov1alpha1.AnnotationNetworkQOS, slov1alpha1.AnnotationNetworkQOSAlias} {
		if v, has := pod.Annotations[k]; has {
			return k, v, true
		}
	}
	return "", "", false
}

// podLimit is the egress limit the pod's annotation sets, within classCeil, its class's limit; ok is false when
// the pod has no annotation or it sets no egress limit. partly names the fields of Koordinator's value that Gleaner
// does not read (qosmanager.DecodeAnnotation), "" when there are none. An annotation that is not such an object, a
// value that is no bandwidth, 0, or above the class's limit is an error (a pod may only lower its class's limit).
func podLimit(pod *corev1.Pod, total, classCeil uint64) (limit uint64, ok bool, partly string, err error) {
	key, raw, has := annotation(pod)
	if !has || raw == "" && key == slov1alpha1.AnnotationNetworkQOSAlias {
		return 0, false, "", nil // Koordinator's empty value asks for nothing, as in Koordinator
	}
	var a podAnnotation
	ignored, err := qosmanager.DecodeAnnotation(key, raw, &a)
	if err != nil {
		return 0, false, "", fmt.Errorf("annotation %s=%q is not a network QoS configuration: %w", key, raw, err)
	}
	if _, err := slov1alpha1.Bandwidth(a.IngressLimit, total, 0); err != nil {
		return 0, false, "", fmt.Errorf("annotation %s=%q: ingressLimit %w", key, raw, err)
	}
	partly = qosmanager.IgnoredFields(key, ignored)
	if a.EgressLimit == nil {
		return 0, false, partly, nil
	}
	limit, err = slov1alpha1.Bandwidth(a.EgressLimit, total, 0)
	switch {
	case err != nil:
		return 0, false, "", fmt.Errorf("annotation %s=%q: egressLimit %w", key, raw, err)
	case limit == 0:
		return 0, false, "", fmt.Errorf("annotation %s=%q: egressLimit 0 would stop the pod's traffic", key, raw)
	case limit > classCeil:
		return 0, false, "", fmt.Errorf("annotation %s=%q: egressLimit %s is above the class's %s (a pod may only lower it)",
			key, raw, bits(limit), bits(classCeil))
	}
	return limit, true, partly, nil
}
