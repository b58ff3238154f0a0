package allocation

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// The kubelet's CPU constants (k8s.io/kubernetes pkg/kubelet/cm, helpers_linux.go, v1.36).
const (
	// MinShares is the smallest cpu.shares the kubelet writes: what a pod or container without a CPU request gets.
	MinShares uint64 = 2
	// MaxShares is the largest cpu.shares the kernel accepts.
	MaxShares uint64 = 262144
	// SharesPerCPU is cpu.shares per whole CPU.
	SharesPerCPU = 1024
	// CFSPeriod is cpu.cfs_period_us, 100 ms: the kubelet's period unless the CPUCFSQuotaPeriod gate and
	// --cpu-cfs-quota-period change it.
	CFSPeriod int64 = 100000
	// MinCFSQuota is the smallest non-zero cpu.cfs_quota_us the kubelet writes, 1 ms.
	MinCFSQuota int64 = 1000
	// Unlimited is the value of CFSQuota and MemoryLimit when there is no limit (the cgroup v1 files read -1 then;
	// memory.limit_in_bytes reads a large page-aligned number, which the kernel treats the same).
	Unlimited int64 = -1
)

// MilliCPUToShares is the kubelet's cpu.shares for a CPU request in millicores: milli*1024/1000, clamped to
// [MinShares, MaxShares]; no request (0) gives MinShares. 250m gives 256.
func MilliCPUToShares(milliCPU int64) uint64 {
	if milliCPU == 0 {
		return MinShares
	}
	shares := milliCPU * SharesPerCPU / 1000
	switch {
	case shares < int64(MinShares):
		return MinShares
	case shares > int64(MaxShares):
		return MaxShares
	}
	return uint64(shares)
}

// MilliCPUToQuota is the kubelet's cpu.cfs_quota_us for a CPU limit in millicores over period microseconds:
// milli*period/1000, at least MinCFSQuota. No limit (0) gives 0, which the runtime leaves unset (unlimited). 500m
// over 100 ms gives 50000.
func MilliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	return max(milliCPU*period/1000, MinCFSQuota)
}

// SharesToWeight is the cgroup v2 cpu.weight the kubelet writes for cpu.shares on a pod cgroup: the linear map of
// [2, 262144] onto [1, 10000] (pkg/kubelet/cm, cgroup_manager_linux.go getCPUWeight). OCI runtimes convert container
// shares themselves; runc 1.3.2 and later use a different, non-linear curve for container cgroups.
func SharesToWeight(shares uint64) uint64 {
	if shares >= MaxShares {
		return 10000
	}
	if shares < MinShares {
		shares = MinShares
	}
	return 1 + (shares-2)*9999/262142
}

// CgroupValues are the CPU and memory values of one pod or container cgroup.
type CgroupValues struct {
	// CPUShares is cpu.shares (cgroup v1).
	CPUShares uint64
	// CFSQuota is cpu.cfs_quota_us in microseconds per CFSPeriod; Unlimited when there is no CPU limit.
	CFSQuota int64
	// CFSPeriod is cpu.cfs_period_us in microseconds.
	CFSPeriod int64
	// MemoryLimit is memory.limit_in_bytes; Unlimited when there is no memory limit.
	MemoryLimit int64
}

// CPUWeight is cpu.weight, the cgroup v2 form of CPUShares (SharesToWeight).
func (v CgroupValues) CPUWeight() uint64 { return SharesToWeight(v.CPUShares) }

// CPUMax is the content of cpu.max, the cgroup v2 form of the quota and period: "50000 100000", or "max 100000"
// without a limit.
func (v CgroupValues) CPUMax() string {
	if v.CFSQuota == Unlimited {
		return "max " + strconv.FormatInt(v.CFSPeriod, 10)
	}
	return strconv.FormatInt(v.CFSQuota, 10) + " " + strconv.FormatInt(v.CFSPeriod, 10)
}

// MemoryMax is the content of memory.max, the cgroup v2 form of MemoryLimit: bytes, or "max" without a limit.
func (v CgroupValues) MemoryMax() string {
	if v.MemoryLimit == Unlimited {
		return "max"
	}
	return strconv.FormatInt(v.MemoryLimit, 10)
}

// ContainerCgroupValues are the values the kubelet asks the runtime to give container c of pod (kuberuntime,
// calculateLinuxResources): shares from the CPU request, or from the limit when the request is unset; the quota
// from the CPU limit; the memory limit. Where the container sets no limit and the pod has pod-level resources, the
// pod-level limit applies. CPU quotas the CPU manager lifts for exclusive CPUs are not modelled.
func ContainerCgroupValues(pod *corev1.Pod, c *corev1.Container) CgroupValues {
	cpuLimit, memLimit := c.Resources.Limits.Cpu(), c.Resources.Limits.Memory()
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		if cpuLimit.IsZero() {
			cpuLimit = pod.Spec.Resources.Limits.Cpu()
		}
		if memLimit.IsZero() {
			memLimit = pod.Spec.Resources.Limits.Memory()
		}
	}
	v := CgroupValues{CFSPeriod: CFSPeriod, CFSQuota: Unlimited, MemoryLimit: Unlimited}
	if req, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		v.CPUShares = MilliCPUToShares(req.MilliValue())
	} else {
		v.CPUShares = MilliCPUToShares(cpuLimit.MilliValue())
	}
	if q := MilliCPUToQuota(cpuLimit.MilliValue(), CFSPeriod); q != 0 {
		v.CFSQuota = q
	}
	if m := memLimit.Value(); m != 0 {
		v.MemoryLimit = m
	}
	return v
}

// PodCgroupValues are the values the kubelet writes on the pod's own cgroup (pkg/kubelet/cm ResourceConfigForPod):
// shares from the pod's total CPU request; the quota only when every container (or the pod level) declares a CPU
// limit, the memory limit only when every one declares a memory limit; BestEffort pods get MinShares and no limits.
func PodCgroupValues(pod *corev1.Pod) CgroupValues {
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
	v := CgroupValues{CPUShares: MinShares, CFSQuota: Unlimited, CFSPeriod: CFSPeriod, MemoryLimit: Unlimited}
	qosClass := QoSClass(pod)
	if qosClass == corev1.PodQOSBestEffort {
		return v
	}
	v.CPUShares = MilliCPUToShares(milli(reqs, corev1.ResourceCPU))
	guaranteed := qosClass == corev1.PodQOSGuaranteed
	if guaranteed || cpuDeclared {
		if q := MilliCPUToQuota(milli(limits, corev1.ResourceCPU), CFSPeriod); q != 0 {
			v.CFSQuota = q
		}
	}
	if guaranteed || memDeclared {
		if q, ok := limits[corev1.ResourceMemory]; ok && q.Value() != 0 {
			v.MemoryLimit = q.Value()
		}
	}
	return v
}

func milli(list corev1.ResourceList, name corev1.ResourceName) int64 {
	q, ok := list[name]
	if !ok {
		return 0
	}
	return q.MilliValue()
}

// CgroupDriver is how the kubelet names cgroups: plain directories (cgroupfs) or systemd slices.
type CgroupDriver string

// The kubelet's cgroup drivers.
const (
	// CgroupfsDriver names cgroups as plain paths: /kubepods/burstable/pod<uid>.
	CgroupfsDriver CgroupDriver = "cgroupfs"
	// SystemdDriver names cgroups as nested slices: /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice.
	SystemdDriver CgroupDriver = "systemd"
)

// PodCgroupDir returns the directory of pod's cgroup relative to the root of a cgroup hierarchy, for the kubelet's
// defaults (--cgroup-root=/, --cgroups-per-qos=true): under kubepods directly for Guaranteed pods, under
// kubepods/burstable or kubepods/besteffort otherwise. The systemd driver turns every "-" of the UID into "_".
func PodCgroupDir(pod *corev1.Pod, driver CgroupDriver) (string, error) {
	if pod.UID == "" {
		return "", fmt.Errorf("pod %s/%s has no UID", pod.Namespace, pod.Name)
	}
	parts := []string{"kubepods"}
	switch QoSClass(pod) {
	case corev1.PodQOSBurstable:
		parts = append(parts, "burstable")
	case corev1.PodQOSBestEffort:
		parts = append(parts, "besteffort")
	}
	parts = append(parts, "pod"+string(pod.UID))
	switch driver {
	case CgroupfsDriver:
		return "/" + path.Join(parts...), nil
	case SystemdDriver:
		// Each level is a slice named by all the levels above it joined with "-", after "-" in a name became "_".
		dir, prefix := "", ""
		for _, p := range parts {
			p = strings.ReplaceAll(p, "-", "_")
			dir += "/" + prefix + p + ".slice"
			prefix += p + "-"
		}
		return dir, nil
	default:
		return "", fmt.Errorf("unknown cgroup driver %q (want %q or %q)", driver, CgroupfsDriver, SystemdDriver)
	}
}
