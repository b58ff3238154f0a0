package cgroup

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/kubectl/pkg/util/qos"
)

// The kubelet's rules for turning requests and limits into cgroup values (k8s.io/kubernetes pkg/kubelet/cm
// helpers_linux.go and kuberuntime's calculateLinuxResources, v1.36). They are written out here rather than imported:
// the product never imports k8s.io/kubernetes.
const (
	// MinShares is the smallest cpu.shares the kubelet writes: what a pod or container without a CPU request gets.
	MinShares uint64 = 2
	// MaxShares is the largest cpu.shares the kernel accepts.
	MaxShares uint64 = 262144
	// SharesPerCPU is cpu.shares per whole CPU.
	SharesPerCPU = 1024
	// CFSPeriod is the kubelet's CFS period, 100 ms, unless the CPUCFSQuotaPeriod gate and --cpu-cfs-quota-period
	// change it.
	CFSPeriod = 100 * time.Millisecond
	// MinCFSQuota is the smallest non-zero CFS quota the kubelet writes, 1 ms.
	MinCFSQuota = time.Millisecond
)

// MilliCPUToShares is the kubelet's cpu.shares for a CPU request in millicores: milli*1024/1000, clamped to
// [MinShares, MaxShares]; no request (0) gives MinShares. 250m gives 256.
func MilliCPUToShares(milliCPU int64) uint64 {
	shares := milliCPU * SharesPerCPU / 1000
	switch {
	case shares < int64(MinShares):
		return MinShares
	case shares > int64(MaxShares):
		return MaxShares
	}
	return uint64(shares)
}

// MilliCPUToQuota is the kubelet's CFS quota for a CPU limit in millicores over period: milli*period/1000, at least
// MinCFSQuota. No limit (0 or less) gives an unlimited quota. 500m over 100 ms gives 50 ms.
func MilliCPUToQuota(milliCPU int64, period time.Duration) CPUQuota {
	if milliCPU <= 0 {
		return CPUQuota{Quota: -1, Period: period}
	}
	// In microseconds, as the kubelet computes it, so the rounding is the kernel file's.
	us := milliCPU * period.Microseconds() / 1000
	return CPUQuota{Quota: max(time.Duration(us)*time.Microsecond, MinCFSQuota), Period: period}
}

// Resources are the CPU and memory values of one pod or container cgroup, in the units Writer takes.
type Resources struct {
	// CPUShares is the CPU weight in v1 shares.
	CPUShares uint64
	// CPUQuota is the CFS bandwidth limit; Quota is negative when there is no CPU limit.
	CPUQuota CPUQuota
	// MemoryLimit is the memory limit in bytes; -1 when there is none.
	MemoryLimit int64
}

// ContainerResources are the values the kubelet asks the runtime to give container c of pod: shares from the CPU
// request, or from the limit when the request is unset; the quota from the CPU limit; the memory limit. Where the
// container sets no limit and the pod has pod-level resources, the pod-level limit applies. CPU quotas that the
// CPU manager lifts for exclusive CPUs are not modelled.
func ContainerResources(pod *corev1.Pod, c *corev1.Container) Resources {
	cpuLimit, memLimit := c.Resources.Limits.Cpu(), c.Resources.Limits.Memory()
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		if cpuLimit.IsZero() {
			cpuLimit = pod.Spec.Resources.Limits.Cpu()
		}
		if memLimit.IsZero() {
			memLimit = pod.Spec.Resources.Limits.Memory()
		}
	}
	r := Resources{CPUQuota: MilliCPUToQuota(cpuLimit.MilliValue(), CFSPeriod), MemoryLimit: -1}
	if req, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		r.CPUShares = MilliCPUToShares(req.MilliValue())
	} else {
		r.CPUShares = MilliCPUToShares(cpuLimit.MilliValue())
	}
	if m := memLimit.Value(); m > 0 {
		r.MemoryLimit = m
	}
	return r
}

// PodResources are the values the kubelet writes on the pod's own cgroup (ResourceConfigForPod): shares from the
// pod's total CPU request; the quota only when every container (or the pod level) declares a CPU limit, the memory
// limit only when every one declares a memory limit; BestEffort pods get MinShares and no limits.
func PodResources(pod *corev1.Pod) Resources {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	cpuDeclared, memDeclared := true, true
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{
		ContainerFn: func(res corev1.ResourceList, _ resourcehelper.ContainerType) {
			if res.Cpu().IsZero() {
				cpuDeclared = false
			}
			if res.Memory().IsZero() {
				memDeclared = false
			}
		},
	})
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		if !pod.Spec.Resources.Limits.Cpu().IsZero() {
			cpuDeclared = true
		}
		if !pod.Spec.Resources.Limits.Memory().IsZero() {
			memDeclared = true
		}
	}
	r := Resources{CPUShares: MinShares, CPUQuota: CPUQuota{Quota: -1, Period: CFSPeriod}, MemoryLimit: -1}
	class := qos.GetPodQOS(pod)
	if class == corev1.PodQOSBestEffort {
		return r
	}
	r.CPUShares = MilliCPUToShares(reqs.Cpu().MilliValue())
	guaranteed := class == corev1.PodQOSGuaranteed
	if guaranteed || cpuDeclared {
		r.CPUQuota = MilliCPUToQuota(limits.Cpu().MilliValue(), CFSPeriod)
	}
	if guaranteed || memDeclared {
		if m := limits.Memory().Value(); m > 0 {
			r.MemoryLimit = m
		}
	}
	return r
}

// BurstableShares is the cpu.shares the kubelet's QoS manager gives the burstable QoS cgroup: the CPU requests of
// the node's Burstable pods that have not ended, summed, through MilliCPUToShares (at least MinShares).
func BurstableShares(pods []*corev1.Pod) uint64 {
	var milli int64
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || qos.GetPodQOS(pod) != corev1.PodQOSBurstable {
			continue
		}
		reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		milli += reqs.Cpu().MilliValue()
	}
	return MilliCPUToShares(milli)
}
