package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	quotas := []struct {
		milli  int64
		period time.Duration
		want   time.Duration // -1: unlimited
	}{
		{0, CFSPeriod, -1}, {-5, CFSPeriod, -1},
		{1, CFSPeriod, time.Millisecond}, {10, CFSPeriod, time.Millisecond}, // 10m*100ms = 1 ms: the minimum
		{500, CFSPeriod, 50 * time.Millisecond}, {2500, CFSPeriod, 250 * time.Millisecond},
		{500, 50 * time.Millisecond, 25 * time.Millisecond},
		{333, CFSPeriod, 33300 * time.Microsecond}, // microsecond rounding, as in cpu.cfs_quota_us
	}
	for _, tt := range quotas {
		if got := MilliCPUToQuota(tt.milli, tt.period); got != (CPUQuota{Quota: tt.want, Period: tt.period}) {
			t.Errorf("MilliCPUToQuota(%d, %s) = %+v, want quota %s", tt.milli, tt.period, got, tt.want)
		}
	}
}

func quota(us int64) CPUQuota {
	if us < 0 {
		return CPUQuota{Quota: -1, Period: CFSPeriod}
	}
	return CPUQuota{Quota: time.Duration(us) * time.Microsecond, Period: CFSPeriod}
}

func TestContainerResources(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want Resources
	}{
		{
			// The example kubelet explanations use: requests.cpu=250m -> 256 shares, limits.cpu=500m -> 50 ms per 100 ms,
			// limits.memory=128Mi -> 134217728 bytes.
			name: "250m request, 500m limit, 128Mi",
			pod:  testutil.Pod("p").Container("c").Requests("cpu", "250m", "memory", "64Mi").Limits("cpu", "500m", "memory", "128Mi").Obj(),
			want: Resources{CPUShares: 256, CPUQuota: quota(50000), MemoryLimit: 134217728},
		},
		{
			name: "no resources",
			pod:  testutil.Pod("p").Container("c").Obj(),
			want: Resources{CPUShares: 2, CPUQuota: quota(-1), MemoryLimit: -1},
		},
		{
			name: "limit without request: shares from the limit",
			pod:  testutil.Pod("p").Container("c").Limits("cpu", "2").Obj(),
			want: Resources{CPUShares: 2048, CPUQuota: quota(200000), MemoryLimit: -1},
		},
		{
			name: "explicit zero request keeps the minimum shares",
			pod:  testutil.Pod("p").Container("c").Requests("cpu", "0").Limits("cpu", "2").Obj(),
			want: Resources{CPUShares: 2, CPUQuota: quota(200000), MemoryLimit: -1},
		},
		{
			name: "a tiny limit gets the 1 ms minimum quota",
			pod:  testutil.Pod("p").Container("c").Requests("cpu", "5m").Limits("cpu", "5m").Obj(),
			want: Resources{CPUShares: 5, CPUQuota: quota(1000), MemoryLimit: -1},
		},
		{
			name: "the pod-level limit applies where the container sets none",
			pod:  testutil.Pod("p").PodRequests("cpu", "1").PodLimits("cpu", "1500m", "memory", "1Gi").Container("c").Requests("cpu", "200m").Obj(),
			want: Resources{CPUShares: 204, CPUQuota: quota(150000), MemoryLimit: 1073741824},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diff(t, "container resources", tt.want, ContainerResources(tt.pod, &tt.pod.Spec.Containers[0]))
		})
	}
}

func TestPodResources(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want Resources
	}{
		{
			name: "best effort",
			pod:  testutil.Pod("p").Container("c").Obj(),
			want: Resources{CPUShares: 2, CPUQuota: quota(-1), MemoryLimit: -1},
		},
		{
			// (1 + 0.25) CPU -> 1280 shares and 125 ms; (1Gi + 128Mi) -> 1207959552 bytes.
			name: "guaranteed, with overhead",
			pod:  testutil.Pod("p").Container("c").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "1", "memory", "1Gi").Overhead("cpu", "250m", "memory", "128Mi").Obj(),
			want: Resources{CPUShares: 1280, CPUQuota: quota(125000), MemoryLimit: 1207959552},
		},
		{
			name: "burstable with every limit declared",
			pod:  testutil.Pod("p").Container("a").Requests("cpu", "250m").Limits("cpu", "500m", "memory", "128Mi").Container("b").Requests("cpu", "250m").Limits("cpu", "500m", "memory", "128Mi").Obj(),
			want: Resources{CPUShares: 512, CPUQuota: quota(100000), MemoryLimit: 268435456},
		},
		{
			name: "burstable with a container without limits: no pod limits",
			pod:  testutil.Pod("p").Container("a").Requests("cpu", "250m").Limits("cpu", "500m", "memory", "128Mi").Container("b").Requests("cpu", "250m").Obj(),
			want: Resources{CPUShares: 512, CPUQuota: quota(-1), MemoryLimit: -1},
		},
		{
			name: "pod-level limits declare them for the whole pod",
			pod:  testutil.Pod("p").PodRequests("cpu", "1", "memory", "1Gi").PodLimits("cpu", "2", "memory", "2Gi").Container("c").Obj(),
			want: Resources{CPUShares: 1024, CPUQuota: quota(200000), MemoryLimit: 2147483648},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diff(t, "pod resources", tt.want, PodResources(tt.pod))
		})
	}
}

// TestKubeletValuesThroughWriter: the 250m/500m/128Mi container, written through the Writer, gives the files the kubelet and
// runc give it on each cgroup version.
func TestKubeletValuesThroughWriter(t *testing.T) {
	pod := testutil.Pod("p").Container("c").Requests("cpu", "250m", "memory", "64Mi").Limits("cpu", "500m", "memory", "128Mi").Obj()
	r := ContainerResources(pod, &pod.Spec.Containers[0])
	want := map[Version]map[string]string{
		V1: {"cpu/cpu.shares": "256", "cpu/cpu.cfs_quota_us": "50000", "cpu/cpu.cfs_period_us": "100000", "memory/memory.limit_in_bytes": "134217728"},
		V2: {"cpu.weight": "10", "cpu.max": "50000 100000", "memory.max": "134217728"},
	}
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", f.name))); err != nil {
				t.Fatal(err)
			}
			rw := NewFS(root, f.version)
			dir := Layout{Driver: f.driver}.PodDir(burstablePod())
			check(t, "shares", rw.SetCPUShares(dir, r.CPUShares))
			check(t, "quota", rw.SetCPUQuota(dir, r.CPUQuota))
			check(t, "memory", rw.SetMemoryLimit(dir, r.MemoryLimit))
			for file, content := range want[f.version] {
				sub, name := "", file
				if f.version == V1 {
					sub, name, _ = strings.Cut(file, "/")
				}
				b, err := os.ReadFile(filepath.Join(rw.Dir(sub, dir), name))
				if err != nil {
					t.Fatal(err)
				}
				if string(b) != content {
					t.Errorf("%s = %q, want %q", file, b, content)
				}
			}
		})
	}
}

// TestBurstableShares: the kubelet's burstable QoS cgroup weight counts the CPU requests of Burstable pods that have
// not ended, and nothing of Guaranteed or BestEffort ones.
func TestBurstableShares(t *testing.T) {
	done := testutil.Pod("done").Container("c").Requests("cpu", "2").Obj()
	done.Status.Phase = corev1.PodSucceeded
	pods := []*corev1.Pod{
		testutil.Pod("web").Container("c").Requests("cpu", "1").Obj(),
		testutil.Pod("api").Container("c").Requests("cpu", "250m", "memory", "64Mi").Obj(),
		testutil.Pod("db").Container("c").Requests("cpu", "2", "memory", "1Gi").Limits("cpu", "2", "memory", "1Gi").Obj(),
		testutil.Pod("batch").Container("c").Obj(),
		done,
	}
	if got, want := BurstableShares(pods), MilliCPUToShares(1250); got != want {
		t.Errorf("BurstableShares = %d, want %d", got, want)
	}
	if got := BurstableShares(nil); got != MinShares {
		t.Errorf("BurstableShares of no pods = %d, want MinShares", got)
	}
}
