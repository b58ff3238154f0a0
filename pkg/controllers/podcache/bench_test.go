package podcache

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gleaner-sh/gleaner/test/testutil"
)

// BenchmarkCachedPodHeap reports what one pod costs the manager's heap once the cache holds it: 2,000 pods decoded
// from protobuf, as the reflector receives them, stored in a Cache (whose node lists and maps count too), then the
// live heap they add divided by their number (heap-B/pod). "bench" pods are hack/bench/noderesource's (one container, requests,
// an app label, a priority class; the API server's defaults and managed fields); "real" pods carry what workloads
// of a real cluster do (env, probes, volumes, owner references, kubectl's last-applied annotation, a kubelet's
// status).
func BenchmarkCachedPodHeap(b *testing.B) {
	for _, kind := range []string{"bench", "real"} {
		b.Run(kind, func(b *testing.B) {
			wire := make([][]byte, 2000)
			for i := range wire {
				data, err := cachedPodFixture(i, kind == "real").Marshal()
				if err != nil {
					b.Fatal(err)
				}
				wire[i] = data
			}
			var perPod float64
			for b.Loop() {
				before := liveHeap()
				c := newCache(nil)
				for _, data := range wire {
					pod := &corev1.Pod{}
					if err := pod.Unmarshal(data); err != nil {
						b.Fatal(err)
					}
					if err := c.Add(pod); err != nil {
						b.Fatal(err)
					}
				}
				perPod = float64(liveHeap()-before) / float64(len(wire))
				runtime.KeepAlive(c)
			}
			b.ReportMetric(perPod, "heap-B/pod")
		})
	}
}

func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// cachedPodFixture is the i-th pod of BenchmarkCachedPodHeap, as the API server serves it.
func cachedPodFixture(i int, real bool) *corev1.Pod {
	b := testutil.Pod(fmt.Sprintf("pod-%06d", i)).Namespace(fmt.Sprintf("bench-%d", i%10)).UID(fmt.Sprintf("5f0c1d2e-0000-4000-8000-%012d", i)).
		Node(fmt.Sprintf("node-%04d", i/30)).Label("app", fmt.Sprintf("app-%d", i%50)).
		Container("app").Image("registry.example.com/app:v1").Requests("cpu", fmt.Sprintf("%dm", 100+i%9*50), "memory", fmt.Sprintf("%dMi", 128+i%7*64))
	switch k := i % 10; {
	case k < 6:
		b = b.PriorityClass("gleaner-prod")
	case k >= 8:
		b = b.PriorityClass("gleaner-batch")
	}
	pod := b.Obj()
	pod.ResourceVersion = fmt.Sprint(100000 + i)
	pod.CreationTimestamp = metav1.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "noderesource-bench", Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:nodeName":{},"f:priorityClassName":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}`)}}
	c := &pod.Spec.Containers[0]
	c.TerminationMessagePath, c.TerminationMessagePolicy, c.ImagePullPolicy = "/dev/termination-log", corev1.TerminationMessageReadFile, corev1.PullIfNotPresent
	pod.Spec.RestartPolicy, pod.Spec.DNSPolicy, pod.Spec.SchedulerName = corev1.RestartPolicyAlways, corev1.DNSClusterFirst, corev1.DefaultSchedulerName
	pod.Spec.TerminationGracePeriodSeconds, pod.Spec.EnableServiceLinks = ptr.To(int64(30)), ptr.To(true)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
	pod.Spec.Tolerations = []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))},
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable}
	if real {
		decorate(pod)
		pod.OwnerReferences[0].UID = types.UID(fmt.Sprintf("rs-%d", i%50))
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable, HostIP: "10.0.0.1", PodIP: "10.1.0.1",
			StartTime: &pod.CreationTimestamp,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "registry.example.com/app:v1", ImageID: "registry.example.com/app@sha256:0123",
				ContainerID: "containerd://0123456789abcdef", Ready: true, Started: ptr.To(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: pod.CreationTimestamp}}}},
		}
	}
	return pod
}

// decorate gives a pod what real pods carry and no controller reads.
func decorate(p *corev1.Pod) {
	p.Spec.NodeName = "n1"
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[corev1.LastAppliedConfigAnnotation] = string(make([]byte, 2048))
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels["app"] = p.Name
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u"}}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:containers":{}}}`)}}
	p.Spec.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		c.Env = []corev1.EnvVar{{Name: "A", Value: string(make([]byte, 256))}}
		c.Command = []string{"/bin/app", "--flag=value"}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets"}}
		c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	}
}
