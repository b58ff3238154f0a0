package cpuburst

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
)

// knobs are the mechanisms a policy turns on.
type knobs struct {
	burst bool // cpu.cfs_burst_us / cpu.max.burst
	quota bool // raising cpu.cfs_quota_us / cpu.max while throttled
}

func (k knobs) any() bool { return k.burst || k.quota }

// knobsOf is what policy turns on; ok is false for a policy this version does not know.
func knobsOf(policy slov1alpha1.CPUBurstPolicy) (k knobs, ok bool) {
	switch policy {
	case slov1alpha1.CPUBurstNone:
		return knobs{}, true
	case slov1alpha1.CPUBurstOnly:
		return knobs{burst: true}, true
	case slov1alpha1.CFSQuotaBurstOnly:
		return knobs{quota: true}, true
	case slov1alpha1.CPUBurstAuto:
		return knobs{burst: true, quota: true}, true
	}
	return knobs{}, false
}

// checkConfig lists what is wrong with c, each message starting with prefix (where c came from). partial allows
// unset fields, as in a pod's annotation, which inherits them from the node.
func checkConfig(prefix string, c *slov1alpha1.CPUBurstConfig, partial bool) []string {
	var msgs []string
	if _, ok := knobsOf(c.Policy); !ok && (c.Policy != "" || !partial) {
		msgs = append(msgs, fmt.Sprintf("%spolicy is %q, want one of %s, %s, %s, %s", prefix, c.Policy,
			slov1alpha1.CPUBurstNone, slov1alpha1.CPUBurstOnly, slov1alpha1.CFSQuotaBurstOnly, slov1alpha1.CPUBurstAuto))
	}
	inRange := func(field string, v *int64, lo, hi int64) {
		switch {
		case v == nil && !partial:
			msgs = append(msgs, fmt.Sprintf("%s%s is unset", prefix, field))
		case v != nil && (*v < lo || *v > hi):
			msgs = append(msgs, fmt.Sprintf("%s%s is %d, outside [%d, %d]", prefix, field, *v, lo, hi))
		}
	}
	// The CRD's bounds (slov1alpha1.MaxCPUBurstPercent, MaxCFSQuotaBurstPeriodSeconds), checked again here: a pod's
	// annotation has no schema, and a NodeSLO may have been stored under an older one. The period's bound also keeps
	// its multiplication into a time.Duration from overflowing.
	inRange("cpuBurstPercent", c.CPUBurstPercent, 0, slov1alpha1.MaxCPUBurstPercent)
	inRange("cfsQuotaBurstPercent", c.CFSQuotaBurstPercent, 100, slov1alpha1.MaxCPUBurstPercent)
	switch v := c.CFSQuotaBurstPeriodSeconds; {
	case v == nil && !partial:
		msgs = append(msgs, prefix+"cfsQuotaBurstPeriodSeconds is unset")
	case v != nil && (*v < -1 || *v > slov1alpha1.MaxCFSQuotaBurstPeriodSeconds):
		msgs = append(msgs, fmt.Sprintf("%scfsQuotaBurstPeriodSeconds is %d, want -1 (no limit) or 0 to %d", prefix, *v, slov1alpha1.MaxCFSQuotaBurstPeriodSeconds))
	}
	return msgs
}

// podConfig is the CPU burst configuration of pod under the node's: the node's, with what the pod's
// AnnotationCPUBurst (or Koordinator's AnnotationCPUBurstAlias) sets over it; its policy only narrows the node's.
// partly names the fields of Koordinator's value that Gleaner does not read (qosmanager.DecodeAnnotation), "" when
// there are none. An annotation that is not a valid CPUBurstConfig is an error (the caller then uses the node's).
func podConfig(pod *corev1.Pod, node *slov1alpha1.CPUBurstConfig) (cfg *slov1alpha1.CPUBurstConfig, k knobs, partly string, err error) {
	nodeKnobs, _ := knobsOf(node.Policy)
	key, raw, ok := annotation(pod)
	if !ok {
		return node, nodeKnobs, "", nil
	}
	own, ignored, err := parseAnnotation(key, raw)
	if err != nil {
		return node, nodeKnobs, "", err
	}
	merged := slov1alpha1.MergeStrategy(node, own)
	k = nodeKnobs
	if own.Policy != "" {
		podKnobs, _ := knobsOf(own.Policy)
		k = knobs{burst: k.burst && podKnobs.burst, quota: k.quota && podKnobs.quota}
	}
	return merged, k, qosmanager.IgnoredFields(key, ignored), nil
}

// annotation is the pod's own CPU burst annotation and its key: gleaner.sh's, else Koordinator's.
func annotation(pod *corev1.Pod) (key, raw string, ok bool) {
	for _, k := range []string{slov1alpha1.AnnotationCPUBurst, slov1alpha1.AnnotationCPUBurstAlias} {
		if v, has := pod.Annotations[k]; has {
			return k, v, true
		}
	}
	return "", "", false
}

// parseAnnotation reads a pod's CPU burst annotation key: a JSON CPUBurstConfig with values in range, decoded by
// qosmanager.DecodeAnnotation (ignored are the fields of Koordinator's value that Gleaner does not read).
func parseAnnotation(key, raw string) (*slov1alpha1.CPUBurstConfig, []string, error) {
	var c slov1alpha1.CPUBurstConfig
	ignored, err := qosmanager.DecodeAnnotation(key, raw, &c)
	if err != nil {
		return nil, nil, fmt.Errorf("annotation %s=%q is not a CPU burst configuration: %w", key, raw, err)
	}
	if msgs := checkConfig("", &c, true); len(msgs) > 0 {
		return nil, nil, fmt.Errorf("annotation %s=%q: %s", key, raw, strings.Join(msgs, "; "))
	}
	return &c, ignored, nil
}
