package runtimehook

import "github.com/gleaner-sh/gleaner/pkg/agent/tier"

// TierFeatureName is the feature that gives batch and mid pods the cgroup values of their tier resources.
const TierFeatureName = "tier-resources"

// tierFeature gives a pod that requests batch or mid resources the values tier.Translate gives it, fitted under
// the cgroups above on cgroup v1 (see fitter). Other pods get nothing.
type tierFeature struct{ fit fitter }

var (
	_ PodFeature       = tierFeature{}
	_ ContainerFeature = tierFeature{}
)

func newTierFeature(d Deps) (Feature, error) { return tierFeature{fit: d.fitter()}, nil }

// Name implements Feature.
func (tierFeature) Name() string { return TierFeatureName }

// PodValues implements PodFeature: the pod's translation, fitted under the pod cgroup's ancestors.
func (f tierFeature) PodValues(t Target) (Values, error) {
	plan, ok := tier.Translate(t.Pod.Pod)
	if !ok {
		return Values{}, nil
	}
	return f.fit.podValues(t.PodDir, fromTier(plan.Pod)), nil
}

// ContainerValues implements ContainerFeature: the container's translation, fitted under the pod cgroup and its
// ancestors — the pod cgroup as it is, or in the reconciler's batch as it will be once written with it.
func (f tierFeature) ContainerValues(t Target) (Values, error) {
	plan, ok := tier.Translate(t.Pod.Pod)
	if !ok {
		return Values{}, nil
	}
	cv, ok := plan.Containers[t.Container]
	if !ok {
		return Values{}, ErrContainerUnknown
	}
	var pod *Values
	if t.Stage == StageReconcile {
		pv := f.fit.podValues(t.PodDir, fromTier(plan.Pod))
		pod = &pv
	}
	return f.fit.containerValues(t.PodDir, pod, fromTier(cv)), nil
}

func fromTier(v tier.Values) Values {
	return Values{CPUShares: v.CPUShares, CPUQuota: v.CPUQuota, MemoryLimit: v.MemoryLimit}
}
