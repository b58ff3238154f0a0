package tier

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
)

// Values are the cgroup values the hook gives one pod or container cgroup. A zero field is one the hook leaves as
// the kubelet and the runtime set it: there is no such thing as zero shares, a zero quota or a zero memory limit.
type Values struct {
	// CPUShares is cpu.shares (cpu.weight on cgroup v2, converted by the writer).
	CPUShares uint64
	// CPUQuota is the CFS quota and period; a Quota of zero or less leaves the kubelet's (unlimited) one.
	CPUQuota cgroup.CPUQuota
	// MemoryLimit is the memory limit in bytes.
	MemoryLimit int64
}

// Empty reports whether v sets nothing.
func (v Values) Empty() bool { return v.CPUShares == 0 && !v.HasQuota() && v.MemoryLimit <= 0 }

// HasQuota reports whether v sets a CFS quota.
func (v Values) HasQuota() bool { return v.CPUQuota.Quota > 0 && v.CPUQuota.Period > 0 }

// Plan is what the hook sets for one pod: the pod's own cgroup and each container's, by container name (init
// containers and sidecars included; ephemeral containers have no resources and get nothing).
type Plan struct {
	// Pod are the values of the pod's cgroup.
	Pod Values
	// Containers are the values of each container's cgroup, by name.
	Containers map[string]Values
}

// The tier resources and the native resource each stands for: batch and mid pods ask for them instead of (or on
// top of) cpu and memory, so to the kubelet a pod that requests only kubernetes.io/batch-cpu: 2000 is BestEffort.
var tierCPU, tierMemory = []corev1.ResourceName{slov1alpha1.BatchCPU, slov1alpha1.MidCPU}, []corev1.ResourceName{slov1alpha1.BatchMemory, slov1alpha1.MidMemory}

// Translate returns the cgroup values of a pod that requests batch or mid resources, and false for any other pod
// (the runtime hook leaves those to the kubelet).
//
// The rule: the pod is given the cgroups the kubelet would give it if its tier resources were native ones. Each
// container's kubernetes.io/batch-cpu and mid-cpu (integer millicores) are added to its cpu, its batch-memory and
// mid-memory (bytes) to its memory, and the kubelet's own rules (cgroup.ContainerResources, cgroup.PodResources:
// shares from the request with a minimum of 2, the CFS quota from the limit over 100 ms, the memory limit from the
// limit; init containers, restartable sidecars, pod-level resources and overhead as the kubelet counts them) give
// the values. So a container asking for batch-cpu 2000 gets cpu.shares 2048 and a quota of 200 ms per 100 ms, and
// one that also asks for 100m of native CPU gets the sum. A native request without a native limit keeps that
// resource unlimited, as the kubelet would: the pod was promised more than the tier's amount.
//
// Only the resources the pod asks a tier for are set: a pod with batch-cpu but no batch-memory gets CPU values and
// keeps the kubelet's memory limit. Limits that come out unlimited are left alone (the kubelet set none).
func Translate(pod *corev1.Pod) (Plan, bool) {
	usesCPU, usesMemory := asksTier(pod, tierCPU), asksTier(pod, tierMemory)
	if !usesCPU && !usesMemory {
		return Plan{}, false
	}
	f := fold(pod)
	keep := func(r cgroup.Resources) Values {
		var v Values
		if usesCPU {
			v.CPUShares = r.CPUShares
			if !r.CPUQuota.Unlimited() {
				v.CPUQuota = r.CPUQuota
			}
		}
		if usesMemory && r.MemoryLimit > 0 {
			v.MemoryLimit = r.MemoryLimit
		}
		return v
	}
	plan := Plan{Pod: keep(cgroup.PodResources(f)), Containers: make(map[string]Values, len(f.Spec.InitContainers)+len(f.Spec.Containers))}
	for _, cs := range [][]corev1.Container{f.Spec.InitContainers, f.Spec.Containers} {
		for i := range cs {
			plan.Containers[cs[i].Name] = keep(cgroup.ContainerResources(f, &cs[i]))
		}
	}
	return plan, true
}

// asksTier reports whether any container of pod requests or limits one of the resources names.
func asksTier(pod *corev1.Pod, names []corev1.ResourceName) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			for _, n := range names {
				if tierAmount(cs[i].Resources.Requests, n) > 0 || tierAmount(cs[i].Resources.Limits, n) > 0 {
					return true
				}
			}
		}
	}
	return false
}

// tierAmount is a tier resource's amount in the native unit: millicores for the CPU ones (their integer value),
// bytes for the memory ones.
func tierAmount(list corev1.ResourceList, name corev1.ResourceName) int64 {
	q, ok := list[name]
	if !ok {
		return 0
	}
	return q.Value()
}

// fold returns a copy of pod whose containers carry their tier resources as cpu and memory, and whose Kubernetes
// QoS class is computed again from them. pod itself is not changed (it is the informer's).
func fold(pod *corev1.Pod) *corev1.Pod {
	f := *pod
	f.Status = corev1.PodStatus{}
	f.Spec.InitContainers = foldContainers(pod.Spec.InitContainers)
	f.Spec.Containers = foldContainers(pod.Spec.Containers)
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		f.Spec.Resources = foldPodLevel(pod)
	}
	return &f
}

// foldPodLevel adds the tier resources of pod's containers (as the kubelet aggregates them: init containers,
// sidecars) to its pod-level cpu and memory, which the kubelet then uses for the pod's cgroup instead of the
// containers' sum. Pod-level resources hold only native resources; the tiers come on top.
func foldPodLevel(pod *corev1.Pod) *corev1.ResourceRequirements {
	tiers := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{SkipPodLevelResources: true})
	r := pod.Spec.Resources.DeepCopy()
	for _, p := range []struct {
		native corev1.ResourceName
		tiers  []corev1.ResourceName
	}{{corev1.ResourceCPU, tierCPU}, {corev1.ResourceMemory, tierMemory}} {
		var add int64
		for _, t := range p.tiers {
			add += tierAmount(tiers, t)
		}
		if add == 0 {
			continue
		}
		for _, list := range []corev1.ResourceList{r.Requests, r.Limits} {
			q, ok := list[p.native]
			if !ok {
				continue
			}
			if p.native == corev1.ResourceCPU {
				list[p.native] = *resource.NewMilliQuantity(q.MilliValue()+add, resource.DecimalSI)
			} else {
				list[p.native] = *resource.NewQuantity(q.Value()+add, resource.BinarySI)
			}
		}
	}
	return r
}

func foldContainers(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i := range cs {
		out[i] = cs[i]
		req, lim := corev1.ResourceList{}, corev1.ResourceList{}
		foldResource(cs[i].Resources, corev1.ResourceCPU, tierCPU, req, lim)
		foldResource(cs[i].Resources, corev1.ResourceMemory, tierMemory, req, lim)
		out[i].Resources = corev1.ResourceRequirements{Requests: req, Limits: lim}
	}
	return out
}

// foldResource sets req[native] and lim[native] to the native amount plus the tiers'. The limit is set only where
// every part that is asked for has one: a native request without a native limit leaves the sum unlimited. A tier
// resource is an extended resource, whose request always equals its limit (the API server defaults and enforces
// it), so whichever of the two is present stands for both.
func foldResource(r corev1.ResourceRequirements, native corev1.ResourceName, tiers []corev1.ResourceName, req, lim corev1.ResourceList) {
	milli := native == corev1.ResourceCPU
	amount := func(q resource.Quantity) int64 {
		if milli {
			return q.MilliValue()
		}
		return q.Value()
	}
	var request, limit int64
	limited, asked := true, false
	if q, ok := r.Requests[native]; ok {
		request, asked = amount(q), true
	}
	if q, ok := r.Limits[native]; ok {
		limit, asked = amount(q), true
		if _, hasReq := r.Requests[native]; !hasReq {
			request = limit // the API server's default for a missing request
		}
	} else if asked {
		limited = false
	}
	for _, t := range tiers {
		rq, lm := tierAmount(r.Requests, t), tierAmount(r.Limits, t)
		if rq == 0 {
			rq = lm
		}
		if lm == 0 {
			lm = rq
		}
		request, limit = request+rq, limit+lm
		asked = asked || rq > 0
	}
	if !asked {
		return
	}
	if milli {
		req[native] = *resource.NewMilliQuantity(request, resource.DecimalSI)
	} else {
		req[native] = *resource.NewQuantity(request, resource.BinarySI)
	}
	if !limited || limit <= 0 {
		return
	}
	if milli {
		lim[native] = *resource.NewMilliQuantity(limit, resource.DecimalSI)
	} else {
		lim[native] = *resource.NewQuantity(limit, resource.BinarySI)
	}
}

// MemoryRequest is the memory container c requests as the kubelet would count it had its tier resources been
// native: its memory request plus its kubernetes.io/batch-memory and mid-memory requests, in bytes.
func MemoryRequest(c *corev1.Container) int64 {
	n := c.Resources.Requests.Memory().Value()
	for _, name := range tierMemory {
		n += tierAmount(c.Resources.Requests, name)
	}
	return n
}
