package cgreconcile

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
)

// ReasonBadAnnotation is the reason of the Warning event on a pod whose memory QoS annotation cannot be used.
const ReasonBadAnnotation = "InvalidMemoryQOSAnnotation"

// podAnnotation is what a pod's memory QoS annotation holds: Koordinator's PodMemoryQOSConfig, a policy beside
// the class's parameters.
type podAnnotation struct {
	// Policy is "default" (the class's values, with the parameters given over them), "auto" (the same: the values
	// the agent computes from the pod's requests and limits by the class's percents), or "none" (no protection for
	// the pod); "" is "default".
	Policy                string `json:"policy,omitempty"`
	slov1alpha1.MemoryQOS `json:",inline"`
}

// PodMemoryQOS is the memory QoS of pod, whose class has class (nil when the class's memory QoS is off): the
// class's, narrowed by the pod's own AnnotationMemoryQOS (else Koordinator's). A pod may only narrow its class's:
// less protection (minLimitPercent and lowLimitPercent at most the class's; policy "none" for none), more
// throttling (a throttlingPercent from 1 up to the class's, any when the class sets none), and oomKillGroup 1.
// Policy "auto" asks for the class's values, as "default" does. On a pod whose class has memory QoS off every
// policy gets nothing, as the class does, and only a parameter that would turn something on is refused.
//
// partly names what of an annotation in use is left out: the fields of Koordinator's value that Gleaner does not
// read (qosmanager.DecodeAnnotation), and the Anolis OS fields, which the plugin never applies; "" when nothing is,
// and on a pod that gets nothing.
// An annotation that does not decode or would widen the class's is an error, and the class's applies.
func PodMemoryQOS(pod *corev1.Pod, class *slov1alpha1.MemoryQOSCfg) (cfg *slov1alpha1.MemoryQOSCfg, partly string, err error) {
	key, raw, ok := annotation(pod)
	if !ok {
		return class, "", nil
	}
	var a podAnnotation
	ignored, err := qosmanager.DecodeAnnotation(key, raw, &a)
	if err != nil {
		return class, "", fmt.Errorf("annotation %s=%q is not a memory QoS configuration: %w", key, raw, err)
	}
	switch a.Policy {
	case "", "default", "auto", "none":
	default:
		return class, "", fmt.Errorf("annotation %s=%q: policy %q is not default, auto or none", key, raw, a.Policy)
	}
	if class == nil {
		if on := turnsOn(&a.MemoryQOS); len(on) > 0 {
			return nil, "", fmt.Errorf("annotation %s=%q: %s would turn on memory QoS, which the pod's class has off, and a pod may only narrow its class's",
				key, raw, strings.Join(on, ", "))
		}
		return nil, "", nil // nothing applies, so nothing is left out
	}
	out := class.DeepCopy()
	var msgs []string
	if a.Policy == "none" {
		out.MinLimitPercent, out.LowLimitPercent = ptr.To[int64](0), ptr.To[int64](0)
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
		return class, "", fmt.Errorf("annotation %s=%q: %s", key, raw, strings.Join(msgs, "; "))
	}
	return out, leftOut(key, &a.MemoryQOS, ignored), nil
}

// turnsOn names the parameters of q that ask for something a pod whose class has memory QoS off does not get:
// a percent above 0, oomKillGroup 1.
func turnsOn(q *slov1alpha1.MemoryQOS) []string {
	var on []string
	for _, f := range []struct {
		name string
		v    *int64
	}{{"minLimitPercent", q.MinLimitPercent}, {"lowLimitPercent", q.LowLimitPercent}, {"throttlingPercent", q.ThrottlingPercent}} {
		if ptr.Deref(f.v, 0) > 0 {
			on = append(on, fmt.Sprintf("%s %d", f.name, *f.v))
		}
	}
	if ptr.Deref(q.OomKillGroup, 0) == 1 {
		on = append(on, "oomKillGroup 1")
	}
	return on
}

// leftOut is PodMemoryQOS's partly: the fields ignored of the annotation key, and the Anolis OS fields q sets.
func leftOut(key string, q *slov1alpha1.MemoryQOS, ignored []string) string {
	var anolis []string
	for _, f := range []struct {
		name string
		v    *int64
	}{{"wmarkRatio", q.WmarkRatio}, {"wmarkScalePermill", q.WmarkScalePermill}, {"wmarkMinAdj", q.WmarkMinAdj},
		{"priorityEnable", q.PriorityEnable}, {"priority", q.Priority}} {
		if f.v != nil {
			anolis = append(anolis, f.name)
		}
	}
	var msgs []string
	if msg := qosmanager.IgnoredFields(key, ignored); msg != "" {
		msgs = append(msgs, msg)
	}
	if len(anolis) > 0 {
		msgs = append(msgs, fmt.Sprintf("annotation %s: %s need Anolis OS memcg extensions, not applied", key, strings.Join(anolis, ", ")))
	}
	return strings.Join(msgs, "; ")
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
