package blkio

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// ReasonBadAnnotation is the reason of the Warning event on a pod whose block I/O QoS annotation cannot be used.
const ReasonBadAnnotation = "InvalidBlkIOQOSAnnotation"

// podPlan is the block I/O plan of pod's cgroup, whose class gives it class (the zero plan where the class gives
// none): the class's, narrowed by the pod's own AnnotationBlkIOQOS (else Koordinator's), a JSON BlkIOQOS whose
// blocks name devices as the NodeSLO's do, decoded by qosmanager.DecodeAnnotation; partly names the fields of
// Koordinator's value that Gleaner does not read, "" when there are none. Koordinator's empty value asks for
// nothing, as in Koordinator. A pod may only narrow: per device and value, a cap at most the class's (any cap where
// the class sets none), and an ioWeightPercent at most the class's (100 where it sets none). An annotation that is
// not a BlkIOQOS, names a device this node lacks, a podvolume, or would widen the class's is an error, and the
// class's plan applies.
func (p *Plugin) podPlan(pod *corev1.Pod, class plan) (pl plan, partly string, err error) {
	key, raw, ok := annotation(pod)
	if !ok || raw == "" && key == slov1alpha1.AnnotationBlkIOQOSAlias {
		return class, "", nil
	}
	a := &slov1alpha1.BlkIOQOS{}
	ignored, err := qosmanager.DecodeAnnotation(key, raw, a)
	if err != nil {
		return class, "", fmt.Errorf("annotation %s=%q is not a block I/O QoS configuration: %w", key, raw, err)
	}
	own, err := resolvePlan(p.sysRoot, "", a.Blocks)
	if err != nil {
		return class, "", fmt.Errorf("annotation %s=%q: %w", key, raw, err)
	}
	out, err := narrow(class, own, a.Blocks, fmt.Sprintf("pod %s/%s's annotation %s ", pod.Namespace, pod.Name, key))
	if err != nil {
		return class, "", fmt.Errorf("annotation %s=%q: %w", key, raw, err)
	}
	return out, qosmanager.IgnoredFields(key, ignored), nil
}

// narrow lays own, resolved from blocks, over class: a value own sets replaces the class's for that device, the
// values it leaves unset stay the class's. It is an error for own to raise a cap or the weight, or to remove a cap
// (a value of 0 where the class caps); why names the annotation in the executor's audit trail.
func narrow(class, own plan, blocks []slov1alpha1.BlockCfg, why string) (plan, error) {
	out := plan{weight: class.weight, weightWhy: class.weightWhy}
	at := map[cgroup.Device]int{}
	for _, dc := range class.caps {
		at[dc.dev] = len(out.caps)
		out.caps = append(out.caps, dc)
	}
	var msgs []string
	for _, dc := range own.caps {
		cfg := blocks[dc.block].IOCfg
		var limit cgroup.IOLimit
		i, capped := at[dc.dev]
		if capped {
			limit = out.caps[i].limit
		}
		f := fmt.Sprintf("blocks[%d].ioCfg.", dc.block)
		for _, v := range []struct {
			name string
			set  *int64
			cur  *uint64
		}{
			{"readBPS", cfg.ReadBPS, &limit.ReadBPS}, {"writeBPS", cfg.WriteBPS, &limit.WriteBPS},
			{"readIOPS", cfg.ReadIOPS, &limit.ReadIOPS}, {"writeIOPS", cfg.WriteIOPS, &limit.WriteIOPS},
		} {
			switch {
			case v.set == nil:
			case *v.cur == 0 || *v.set > 0 && uint64(*v.set) <= *v.cur:
				*v.cur = uint64(*v.set)
			default:
				msgs = append(msgs, fmt.Sprintf("%s%s %d on device %s is not in 1..%d (the class's cap; a pod may only lower it)",
					f, v.name, *v.set, dc.dev, *v.cur))
			}
		}
		nc := devCap{block: dc.block, dev: dc.dev, limit: limit, why: why + dc.why}
		switch {
		case capped:
			out.caps[i] = nc
		case limit == cgroup.IOLimit{}: // a block for the weight alone: no cap to write
		default:
			at[dc.dev] = len(out.caps)
			out.caps = append(out.caps, nc)
		}
	}
	if own.weight > 0 {
		top := class.weight
		if top == 0 {
			top = defaultWeight
		}
		if own.weight > top {
			msgs = append(msgs, fmt.Sprintf("ioWeightPercent %d is above the class's %d (a pod may only lower it)",
				own.weight*100/defaultWeight, top*100/defaultWeight))
		} else {
			out.weight, out.weightWhy = own.weight, why+own.weightWhy
		}
	}
	if len(msgs) > 0 {
		return class, errors.New(strings.Join(msgs, "; "))
	}
	return out, nil
}

// annotation is the pod's own block I/O QoS annotation and its key: gleaner.sh's, else Koordinator's.
func annotation(pod *corev1.Pod) (key, raw string, ok bool) {
	for _, k := range []string{slov1alpha1.AnnotationBlkIOQOS, slov1alpha1.AnnotationBlkIOQOSAlias} {
		if v, has := pod.Annotations[k]; has {
			return k, v, true
		}
	}
	return "", "", false
}
