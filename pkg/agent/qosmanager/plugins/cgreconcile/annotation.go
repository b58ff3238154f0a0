package cgreconcile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// ReasonBadAnnotation is the reason of the Warning event on a pod whose memory QoS annotation cannot be used.
const ReasonBadAnnotation = "InvalidMemoryQOSAnnotation"

// podAnnotation is what a pod's memory QoS annotation holds: Koordinator's PodMemoryQOSConfig, a policy beside
// the class's parameters.
type podAnnotation struct {
	// Policy is "default" or "auto" (the class's values, with the parameters given over them) or "none" (no
	// protection for the pod); "" is "default".
	Policy                string `json:"policy,omitempty"`
	slov1alpha1.MemoryQOS `json:",inline"`
}

// PodMemoryQOS is the memory QoS of pod, whose class has class (nil when the class's memory QoS is off): the
// class's, narrowed by the pod's own AnnotationMemoryQOS (else Koordinator's). A pod may only narrow its class's:
// less protection (minLimitPercent and lowLimitPercent at most the class's; policy "none" for none), more
// throttling (a throttlingPercent from 1 up to the class's, any when the class sets none), and oomKillGroup 1. An
// annotation that is not a memory QoS configuration, that would widen the class's, or on a pod whose class has
// memory QoS off, is an error, and the class's applies.
func PodMemoryQOS(pod *corev1.Pod, class *slov1alpha1.MemoryQOSCfg) (*slov1alpha1.MemoryQOSCfg, error) {
	key, raw, ok := annotation(pod)
	if !ok {
		return class, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	var a podAnnotation
	if err := dec.Decode(&a); err != nil {
		return class, fmt.Errorf("annotation %s=%q is not a memory QoS configuration: %w", key, raw, err)
	}
	if class == nil {
		return nil, fmt.Errorf("annotation %s=%q: the memory QoS of the pod's class is off, and a pod may only narrow its class's", key, raw)
	}
	out := class.DeepCopy()
	var msgs []string
	switch a.Policy {
	case "", "default", "auto":
	case "none":
		out.MinLimitPercent, out.LowLimitPercent = ptr.To[int64](0), ptr.To[int64](0)
	default:
		msgs = append(msgs, fmt.Sprintf("policy %q is not default, auto or none", a.Policy))
	}
	lower := func(name string, v, classV *int64, dst **int64) {
		switch {
		case v == nil:
		case *v < 0 || *v > ptr.Deref(classV, 0):
			msgs = append(msgs, fmt.Sprintf("%s %d is outside 0..%d (the class's)", name, *v, ptr.Deref(classV, 0)))
		default:
			*dst = ptr.To(*v)
		}
	}
	lower("minLimitPercent", a.MinLimitPercent, class.MinLimitPercent, &out.MinLimitPercent)
	lower("lowLimitPercent", a.LowLimitPercent, class.LowLimitPercent, &out.LowLimitPercent)
	if v := a.ThrottlingPercent; v != nil {
		top := ptr.Deref(class.ThrottlingPercent, 0)
		if top == 0 {
			top = 100
		}
		if *v < 1 || *v > top {
			msgs = append(msgs, fmt.Sprintf("throttlingPercent %d is outside 1..%d (a pod may only throttle itself more than its class)", *v, top))
		} else {
			out.ThrottlingPercent = ptr.To(*v)
		}
	}
	if v := a.OomKillGroup; v != nil {
		if *v != 1 && ptr.Deref(class.OomKillGroup, 0) == 1 || *v < 0 || *v > 1 {
			msgs = append(msgs, fmt.Sprintf("oomKillGroup %d: a pod may only set 1, or 0 where its class does", *v))
		} else {
			out.OomKillGroup = ptr.To(*v)
		}
	}
	if len(msgs) > 0 {
		return class, fmt.Errorf("annotation %s=%q: %s", key, raw, strings.Join(msgs, "; "))
	}
	return out, nil
}

// annotation is the pod's own memory QoS annotation and its key: gleaner.sh's, else Koordinator's.
func annotation(pod *corev1.Pod) (key, raw string, ok bool) {
	for _, k := range []string{slov1alpha1.AnnotationMemoryQOS, slov1alpha1.AnnotationMemoryQOSAlias} {
		if v, has := pod.Annotations[k]; has {
			return k, v, true
		}
	}
	return "", "", false
}
