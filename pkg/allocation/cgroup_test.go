package allocation

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/gleaner-sh/gleaner/test/testutil"
)

func TestKubeletFormulas(t *testing.T) {
	shares := []struct {
		milli int64
		want  uint64
	}{
		{0, 2}, {1, 2}, {2, 2}, {100, 102}, {250, 256}, {1000, 1024}, {256000, 262144}, {300000, 262144},
	}
	for _, tt := range shares {
		if got := MilliCPUToShares(tt.milli); got != tt.want {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", tt.milli, got, tt.want)
		}
	}
	quotas := []struct{ milli, period, want int64 }{
		{0, CFSPeriod, 0}, {1, CFSPeriod, 1000}, {10, CFSPeriod, 1000}, {500, CFSPeriod, 50000}, {2500, CFSPeriod, 250000}, {500, 50000, 25000},
	}
	for _, tt := range quotas {
		if got := MilliCPUToQuota(tt.milli, tt.period); got != tt.want {
			t.Errorf("MilliCPUToQuota(%d, %d) = %d, want %d", tt.milli, tt.period, got, tt.want)
		}
	}
	weights := []struct{ shares, want uint64 }{{0, 1}, {2, 1}, {256, 10}, {1024, 39}, {262143, 9999}, {262144, 10000}}
	for _, tt := range weights {
		if got := SharesToWeight(tt.shares); got != tt.want {
			t.Errorf("SharesToWeight(%d) = %d, want %d", tt.shares, got, tt.want)
		}
	}
}

// cgroupFiles is what a cgroup's files would read, v1 and v2, for readable wants.
type cgroupFiles struct {
	Shares, Quota, Period, MemLimit int64
	Weight                          uint64
	CPUMax, MemoryMax               string
}

func filesOf(v CgroupValues) cgroupFiles {
	return cgroupFiles{int64(v.CPUShares), v.CFSQuota, v.CFSPeriod, v.MemoryLimit, v.CPUWeight(), v.CPUMax(), v.MemoryMax()}
}

func TestContainerCgroupValues(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want cgroupFiles
	}{
		{
			// The seed's example: requests.cpu=250m -> 256 shares, limits.cpu=500m -> 50 ms per 100 ms,
			// limits.memory=128Mi -> 134217728 bytes.
			name: "seed 003",
			pod:  testutil.Pod("p").Container("c").Requests("cpu", "250m", "memory", "64Mi").Limits("cpu", "500m", "memory", "128Mi").Obj(),
			want: cgroupFiles{256, 50000, 100000, 134217728, 10, "50000 100000", "134217728"},
		},
		{
			name: "no resources",
			pod:  testutil.Pod("p").Container("c").Obj(),
			want: cgroupFiles{2, -1, 100000, -1, 1, "max 100000", "max"},
		},
		{
			name: "limit without request: shares from the limit",
			pod:  testutil.Pod("p").Container("c").Limits("cpu", "2").Obj(),
			want: cgroupFiles{2048, 200000, 100000, -1, 79, "200000 100000", "max"},
		},
		{
			name: "explicit zero request keeps the minimum shares",
			pod:  testutil.Pod("p").Container("c").Requests("cpu", "0").Limits("cpu", "2").Obj(),
			want: cgroupFiles{2, 200000, 100000, -1, 1, "200000 100000", "max"},
		},
		{
			name: "a tiny limit gets the 1 ms minimum quota",
			pod:  testutil.Pod("p").Container("c").Requests("cpu", "5m").Limits("cpu", "5m").Obj(),
			want: cgroupFiles{5, 1000, 100000, -1, 1, "1000 100000", "max"},
		},
		{
			name: "the pod-level limit applies where the container sets none",
			pod:  testutil.Pod("p").PodRequests("cpu", "1").PodLimits("cpu", "1500m", "memory", "1Gi").Container("c").Requests("cpu", "200m").Obj(),
			want: cgroupFiles{204, 150000, 100000, 1073741824, 8, "150000 100000", "1073741824"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := filesOf(ContainerCgroupValues(tt.pod, &tt.pod.Spec.Containers[0]))
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("cgroup values (-want +got):\n%s", d)
			}
		})
	}
}

func TestPodCgroupValues(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want cgroupFiles
	}{
		{
			name: "best effort",
			pod:  testutil.Pod("p").Container("c").Obj(),
			want: cgroupFiles{2, -1, 100000, -1, 1, "max 100000", "max"},
		},
		{
			name: "guaranteed, with overhead",
			pod:  testutil.Pod("p").Container("c").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Overhead("cpu", "250m", "memory", "128Mi").Obj(),
			want: cgroupFiles{1280, 125000, 100000, 1207959552, 49, "125000 100000", "1207959552"},
		},
		{
			name: "burstable with every limit declared",
			pod:  testutil.Pod("p").Container("a").Requests("cpu", "250m").Limits("cpu", "500m", "memory", "128Mi").Container("b").Requests("cpu", "250m").Limits("cpu", "500m", "memory", "128Mi").Obj(),
			want: cgroupFiles{512, 100000, 100000, 268435456, 20, "100000 100000", "268435456"},
		},
		{
			name: "burstable with a container without limits: no pod limits",
			pod:  testutil.Pod("p").Container("a").Requests("cpu", "250m").Limits("cpu", "500m", "memory", "128Mi").Container("b").Requests("cpu", "250m").Obj(),
			want: cgroupFiles{512, -1, 100000, -1, 20, "max 100000", "max"},
		},
		{
			name: "pod-level limits declare them for the whole pod",
			pod:  testutil.Pod("p").PodRequests("cpu", "1", "memory", "1Gi").PodLimits("cpu", "2", "memory", "2Gi").Container("c").Obj(),
			want: cgroupFiles{1024, 200000, 100000, 2147483648, 39, "200000 100000", "2147483648"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, filesOf(PodCgroupValues(tt.pod))); d != "" {
				t.Errorf("cgroup values (-want +got):\n%s", d)
			}
		})
	}
}

func TestPodCgroupDir(t *testing.T) {
	const uid = "8dbc8a3e-1a2b-4c5d-9e8f-0123456789ab"
	guaranteed := testutil.Pod("g").UID(uid).Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Obj()
	burstable := testutil.Pod("b").UID(uid).Requests("cpu", "1").Obj()
	bestEffort := testutil.Pod("e").UID(uid).Container("c").Obj()
	tests := []struct {
		pod    *corev1.Pod
		driver CgroupDriver
		want   string
	}{
		{guaranteed, CgroupfsDriver, "/kubepods/pod" + uid},
		{burstable, CgroupfsDriver, "/kubepods/burstable/pod" + uid},
		{bestEffort, CgroupfsDriver, "/kubepods/besteffort/pod" + uid},
		{guaranteed, SystemdDriver, "/kubepods.slice/kubepods-pod8dbc8a3e_1a2b_4c5d_9e8f_0123456789ab.slice"},
		{burstable, SystemdDriver, "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8dbc8a3e_1a2b_4c5d_9e8f_0123456789ab.slice"},
		{bestEffort, SystemdDriver, "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod8dbc8a3e_1a2b_4c5d_9e8f_0123456789ab.slice"},
	}
	for _, tt := range tests {
		got, err := PodCgroupDir(tt.pod, tt.driver)
		if err != nil || got != tt.want {
			t.Errorf("PodCgroupDir(%s, %s) = %q, %v; want %q", tt.pod.Name, tt.driver, got, err, tt.want)
		}
	}
	if _, err := PodCgroupDir(burstable, "docker"); err == nil || !strings.Contains(err.Error(), `unknown cgroup driver "docker"`) {
		t.Errorf("unknown driver: err = %v", err)
	}
	if _, err := PodCgroupDir(testutil.Pod("x").UID("").Obj(), CgroupfsDriver); err == nil || !strings.Contains(err.Error(), "has no UID") {
		t.Errorf("no UID: err = %v", err)
	}
}
