package runtimehook

import (
	"path"

	"k8s.io/utils/cpuset"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/pkg/cpulist"
)

// fitter keeps the hook's values within what the cgroups above allow. On cgroup v1 the kernel refuses a CFS quota
// larger than an ancestor's (per period) and a cpuset outside the parent's: runc would fail to create the container,
// the executor to write the value. CPU suppression puts exactly such limits on the besteffort QoS cgroup (a quota,
// or a cpuset that it also writes to best-effort pods), so a batch pod asking for more than suppression leaves gets
// the ancestors' quota, and a container whose runtime asks for a wider cpuset (the kubelet's static CPU manager
// sends one) gets its pod's. On cgroup v2 the kernel takes the smaller of the two on its own and fitter does nothing.
type fitter struct {
	cgroups cgroup.Reader
	layout  cgroup.Layout
	v1      bool
}

// quotaCap is the smallest CFS quota of dirs (limited ones only), and false when none is limited or on cgroup v2.
// Quotas are compared as the v1 kernel compares them (cgroup.CPUQuota.Exceeds); an unreadable dir is skipped (the
// write will tell).
func (f fitter) quotaCap(dirs ...string) (cgroup.CPUQuota, bool) {
	if !f.v1 {
		return cgroup.CPUQuota{}, false
	}
	var limit cgroup.CPUQuota
	found := false
	for _, d := range dirs {
		q, err := f.cgroups.CPUQuota(d)
		if err != nil || q.Unlimited() {
			continue
		}
		if !found || limit.Exceeds(q) {
			limit, found = q, true
		}
	}
	return limit, found
}

// ancestors are the cgroups above a pod's that may hold a quota: the kubepods cgroup and the pod's QoS class's.
func (f fitter) ancestors(podDir string) []string {
	qos := path.Dir(podDir)
	if kp := f.layout.Kubepods(); qos != kp {
		return []string{kp, qos}
	}
	return []string{qos}
}

// fitQuota lowers v's quota to limit when the kernel would refuse it below limit: to limit itself, period and all
// (cgroup.CPUQuota.Within), so that no rounding and no other period can put it above. v without a quota stays
// without.
func fitQuota(v Values, limit cgroup.CPUQuota, ok bool) Values {
	if ok && v.HasQuota() {
		v.CPUQuota = v.CPUQuota.Within(limit)
	}
	return v
}

// podValues are the pod values v fitted under the pod cgroup's ancestors.
func (f fitter) podValues(podDir string, v Values) Values {
	limit, ok := f.quotaCap(f.ancestors(podDir)...)
	return fitQuota(v, limit, ok)
}

// containerValues are v fitted under the pod cgroup and its ancestors. pod is the pod cgroup's quota as it will be
// when the container's values are written (the reconciler writes both in one batch); nil means as it is now (at
// creation the pod cgroup holds the hook's values from RunPodSandbox, or the kubelet's if that failed).
func (f fitter) containerValues(podDir string, pod *Values, v Values) Values {
	dirs := f.ancestors(podDir)
	if pod == nil {
		dirs = append(dirs, podDir)
	}
	limit, ok := f.quotaCap(dirs...)
	if pod != nil && pod.HasQuota() && f.v1 && (!ok || limit.Exceeds(pod.CPUQuota)) {
		limit, ok = pod.CPUQuota, true
	}
	return fitQuota(v, limit, ok)
}

// cpuSet is the cpuset a container asking for requested (the runtime's, "" for none) must get instead, and false
// when requested is fine: empty (runc copies the parent's), unparsable (left to the runtime), within the pod
// cgroup's, or on cgroup v2.
func (f fitter) cpuSet(podDir, requested string) (cpuset.CPUSet, bool) {
	if !f.v1 || requested == "" {
		return cpuset.CPUSet{}, false
	}
	want, err := cpulist.Parse(requested)
	if err != nil {
		return cpuset.CPUSet{}, false
	}
	parent, err := f.cgroups.CPUSet(podDir)
	if err != nil || parent.IsEmpty() || want.IsSubsetOf(parent) {
		return cpuset.CPUSet{}, false
	}
	if in := want.Intersection(parent); !in.IsEmpty() {
		return in, true
	}
	return parent, true
}
