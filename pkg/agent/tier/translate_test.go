package tier

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/gleaner-sh/gleaner/pkg/agent/system/cgroup"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// quota is a CFS quota of ms milliseconds per the kubelet's 100 ms period.
func quota(ms float64) cgroup.CPUQuota {
	return cgroup.CPUQuota{Quota: time.Duration(ms * float64(time.Millisecond)), Period: 100 * time.Millisecond}
}

const gi, mi = int64(1) << 30, int64(1) << 20

// The golden values are the kubelet's rules applied by hand: shares = millicores * 1024 / 1000 (at least 2), quota =
// millicores * 100 ms / 1000 (at least 1 ms), memory limit = bytes.
func TestTranslate(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want *Plan // nil: the hook leaves the pod alone
	}{
		{
			name: "batch pod: cpu shares, quota and memory limit from batch-cpu and batch-memory",
			pod:  testutil.Pod("b").Container("main").Requests("kubernetes.io/batch-cpu", "2000", "kubernetes.io/batch-memory", "4Gi").Limits("kubernetes.io/batch-cpu", "2000", "kubernetes.io/batch-memory", "4Gi").Obj(),
			want: &Plan{
				Pod:        Values{CPUShares: 2048, CPUQuota: quota(200), MemoryLimit: 4 * gi},
				Containers: map[string]Values{"main": {CPUShares: 2048, CPUQuota: quota(200), MemoryLimit: 4 * gi}},
			},
		},
		{
			name: "a limit alone stands for the request (extended resources have equal requests and limits)",
			pod:  testutil.Pod("b").Container("main").Limits("kubernetes.io/batch-cpu", "1500", "kubernetes.io/batch-memory", "1Gi").Obj(),
			want: &Plan{
				Pod:        Values{CPUShares: 1536, CPUQuota: quota(150), MemoryLimit: gi},
				Containers: map[string]Values{"main": {CPUShares: 1536, CPUQuota: quota(150), MemoryLimit: gi}},
			},
		},
		{
			name: "mid pod",
			pod:  testutil.Pod("m").Container("main").Requests("kubernetes.io/mid-cpu", "500", "kubernetes.io/mid-memory", "256Mi").Limits("kubernetes.io/mid-cpu", "500", "kubernetes.io/mid-memory", "256Mi").Obj(),
			want: &Plan{
				Pod:        Values{CPUShares: 512, CPUQuota: quota(50), MemoryLimit: 256 * mi},
				Containers: map[string]Values{"main": {CPUShares: 512, CPUQuota: quota(50), MemoryLimit: 256 * mi}},
			},
		},
		{
			name: "batch-cpu only: CPU values, the kubelet's memory stays",
			pod:  testutil.Pod("b").Container("main").Requests("kubernetes.io/batch-cpu", "1000").Limits("kubernetes.io/batch-cpu", "1000").Obj(),
			want: &Plan{
				Pod:        Values{CPUShares: 1024, CPUQuota: quota(100)},
				Containers: map[string]Values{"main": {CPUShares: 1024, CPUQuota: quota(100)}},
			},
		},
		{
			name: "batch-memory only: the memory limit, the kubelet's CPU stays",
			pod:  testutil.Pod("b").Container("main").Requests("kubernetes.io/batch-memory", "512Mi").Limits("kubernetes.io/batch-memory", "512Mi").Obj(),
			want: &Plan{
				Pod:        Values{MemoryLimit: 512 * mi},
				Containers: map[string]Values{"main": {MemoryLimit: 512 * mi}},
			},
		},
		{
			name: "tiny request: the kubelet's minimums, 2 shares and 1 ms",
			pod:  testutil.Pod("b").Container("main").Requests("kubernetes.io/batch-cpu", "1").Limits("kubernetes.io/batch-cpu", "1").Obj(),
			want: &Plan{
				Pod:        Values{CPUShares: 2, CPUQuota: quota(1)},
				Containers: map[string]Values{"main": {CPUShares: 2, CPUQuota: quota(1)}},
			},
		},
		{
			name: "init container larger than the app: the pod gets the init container's",
			pod: testutil.Pod("b").
				InitContainer("setup", false).Requests("kubernetes.io/batch-cpu", "4000").Limits("kubernetes.io/batch-cpu", "4000").
				Container("main").Requests("kubernetes.io/batch-cpu", "1000").Limits("kubernetes.io/batch-cpu", "1000").Obj(),
			want: &Plan{
				Pod: Values{CPUShares: 4096, CPUQuota: quota(400)},
				Containers: map[string]Values{
					"setup": {CPUShares: 4096, CPUQuota: quota(400)},
					"main":  {CPUShares: 1024, CPUQuota: quota(100)},
				},
			},
		},
		{
			name: "sidecar: runs beside the app, so the pod gets the sum",
			pod: testutil.Pod("b").
				InitContainer("proxy", true).Requests("kubernetes.io/batch-cpu", "500", "kubernetes.io/batch-memory", "128Mi").Limits("kubernetes.io/batch-cpu", "500", "kubernetes.io/batch-memory", "128Mi").
				Container("main").Requests("kubernetes.io/batch-cpu", "1000", "kubernetes.io/batch-memory", "1Gi").Limits("kubernetes.io/batch-cpu", "1000", "kubernetes.io/batch-memory", "1Gi").Obj(),
			want: &Plan{
				Pod: Values{CPUShares: 1536, CPUQuota: quota(150), MemoryLimit: gi + 128*mi},
				Containers: map[string]Values{
					"proxy": {CPUShares: 512, CPUQuota: quota(50), MemoryLimit: 128 * mi},
					"main":  {CPUShares: 1024, CPUQuota: quota(100), MemoryLimit: gi},
				},
			},
		},
		{
			name: "a container without resources in a batch pod: minimum shares, and no pod limits (as the kubelet would)",
			pod: testutil.Pod("b").
				InitContainer("log", true).
				Container("main").Requests("kubernetes.io/batch-cpu", "1000", "kubernetes.io/batch-memory", "1Gi").Limits("kubernetes.io/batch-cpu", "1000", "kubernetes.io/batch-memory", "1Gi").Obj(),
			want: &Plan{
				Pod: Values{CPUShares: 1024},
				Containers: map[string]Values{
					"log":  {CPUShares: 2},
					"main": {CPUShares: 1024, CPUQuota: quota(100), MemoryLimit: gi},
				},
			},
		},
		{
			name: "native and batch in one container: the sum; a native request without a limit stays unlimited",
			pod: testutil.Pod("b").Container("main").
				Requests("cpu", "100m", "memory", "64Mi", "kubernetes.io/batch-cpu", "1000", "kubernetes.io/batch-memory", "1Gi").
				Limits("cpu", "200m", "kubernetes.io/batch-cpu", "1000", "kubernetes.io/batch-memory", "1Gi").Obj(),
			want: &Plan{
				Pod:        Values{CPUShares: 1126, CPUQuota: quota(120)},
				Containers: map[string]Values{"main": {CPUShares: 1126, CPUQuota: quota(120)}},
			},
		},
		{
			name: "pod-level resources: the pod's cgroup gets them plus the tiers; containers their own",
			pod: testutil.Pod("b").PodRequests("cpu", "1", "memory", "1Gi").PodLimits("cpu", "2", "memory", "1Gi").
				Container("main").Requests("kubernetes.io/batch-cpu", "1000", "kubernetes.io/batch-memory", "512Mi").Limits("kubernetes.io/batch-cpu", "1000", "kubernetes.io/batch-memory", "512Mi").Obj(),
			want: &Plan{
				Pod:        Values{CPUShares: 2048, CPUQuota: quota(300), MemoryLimit: gi + 512*mi},
				Containers: map[string]Values{"main": {CPUShares: 1024, CPUQuota: quota(100), MemoryLimit: 512 * mi}},
			},
		},
		{
			name: "overhead: the pod's cgroup counts it, as the kubelet's does",
			pod: testutil.Pod("b").Overhead("cpu", "100m", "memory", "32Mi").
				Container("main").Requests("kubernetes.io/batch-cpu", "1000", "kubernetes.io/batch-memory", "1Gi").Limits("kubernetes.io/batch-cpu", "1000", "kubernetes.io/batch-memory", "1Gi").Obj(),
			want: &Plan{
				Pod:        Values{CPUShares: 1126, CPUQuota: quota(110), MemoryLimit: gi + 32*mi},
				Containers: map[string]Values{"main": {CPUShares: 1024, CPUQuota: quota(100), MemoryLimit: gi}},
			},
		},
		{
			name: "LS pod: nothing",
			pod:  testutil.Pod("ls").Container("main").Requests("cpu", "1", "memory", "1Gi").Limits("cpu", "2", "memory", "1Gi").Obj(),
		},
		{
			name: "BestEffort pod without tier resources: nothing",
			pod:  testutil.Pod("be").Container("main").Obj(),
		},
		{
			name: "a zero tier request is no request",
			pod:  testutil.Pod("z").Container("main").Requests("kubernetes.io/batch-cpu", "0").Limits("kubernetes.io/batch-cpu", "0").Obj(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.pod.DeepCopy()
			got, ok := Translate(tt.pod)
			if tt.want == nil {
				if ok {
					t.Fatalf("Translate gave %+v for a pod without batch or mid resources", got)
				}
				return
			}
			if !ok {
				t.Fatal("Translate left a batch/mid pod alone")
			}
			if diff := cmp.Diff(*tt.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.pod); diff != "" {
				t.Errorf("Translate changed the informer's pod:\n%s", diff)
			}
		})
	}
}

// The status's QoS class is the kubelet's (BestEffort for a batch pod): the translation must not let it make the
// folded pod BestEffort too, which would drop every limit.
func TestTranslateIgnoresTheStatusQoSClass(t *testing.T) {
	pod := testutil.Pod("b").Container("main").Requests("kubernetes.io/batch-cpu", "1000").Limits("kubernetes.io/batch-cpu", "1000").Obj()
	pod.Status.QOSClass = corev1.PodQOSBestEffort
	got, _ := Translate(pod)
	if want := (Values{CPUShares: 1024, CPUQuota: quota(100)}); got.Pod != want {
		t.Errorf("pod values = %+v, want %+v", got.Pod, want)
	}
}
