package runtimehook

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/tier"
)

// OOMScoreFeatureName is the feature that orders the kernel's OOM killer by class: best-effort work first, the mid
// tier next, services last.
const OOMScoreFeatureName = "oom-score-order"

// The bands of oom_score_adj the feature puts each class in. The kernel kills the process with the highest
// rss/memory x 1000 + oom_score_adj, so a band's distance from the next is how much more of the memory a process
// of the lower band must use before it is chosen first (see OOMScoreAdj).
const (
	// oomBestEffort is batch and free pods': the highest the kernel takes, what the kubelet gives BestEffort pods.
	oomBestEffort = 1000
	// oomMidLow and oomMidHigh bound the mid tier's band, a third of the range below best-effort work.
	oomMidLow, oomMidHigh = 334, 666
	// oomServiceLow and oomServiceHigh bound the band of services and every other pod that is not Guaranteed;
	// above 0, the default of the host's own processes, which stay below every pod as the kubelet ranks them.
	oomServiceLow, oomServiceHigh = 1, 333
	// kubeletBurstableLow and kubeletBurstableHigh bound what the kubelet gives a Burstable container.
	kubeletBurstableLow, kubeletBurstableHigh = 3, 999
)

// OOMScoreAdj is the oom_score_adj the hook gives container c of a pod of class class on a node of memCapacity
// bytes, and whether it gives one. Where the kubelet gives every pod without a memory request 1000 and a Burstable
// container 1000 - 1000 x request/capacity (within [3, 999]), so that the OOM killer picks the container most over
// its request, a batch pod (BestEffort to the kubelet) is no more likely to die than a service a few dozen MiB
// over its request. The feature moves the classes into bands, keeping the kubelet's order within each:
//
//   - batch and free pods (best-effort work): 1000;
//   - mid pods: the kubelet's value with their mid-memory counted as a memory request, scaled into [334, 666];
//   - every other pod that is not Guaranteed (services, system pods, a BestEffort pod labelled prod): the kubelet's
//     Burstable value for its memory request scaled into [1, 333];
//   - Guaranteed pods and node-critical ones keep the kubelet's -997 (given explicitly, so that it comes back when
//     an annotation that set another value goes).
//
// The OOM killer weighs memory in thousandths of what it chooses within (the node's, or a cgroup's whose limit was
// hit). So a mid process dies before a batch process only when it uses a third of that memory more than the batch
// process, and a service only when it uses two thirds more; a service dies before a mid process when it uses more
// than the difference of their values beyond it (a third of the memory when both request little). A node whose
// memory capacity is unknown gets nothing (the kubelet's values stay).
func OOMScoreAdj(class slov1alpha1.PodClass, pod *corev1.Pod, c *corev1.Container, memCapacity int64) (int, bool) {
	switch {
	case class.BestEffort:
		return oomBestEffort, true
	case class.KubeQoS == corev1.PodQOSGuaranteed || pod.Spec.PriorityClassName == nodeCritical:
		// The kubelet's own, given explicitly: a pod whose annotation set another gets it back when the annotation
		// goes.
		return kubeletGuaranteed, true
	case memCapacity <= 0:
		return 0, false
	case class.Mid:
		return band(kubeletBurstable(tier.MemoryRequest(c), memCapacity), oomMidLow, oomMidHigh), true
	}
	return band(kubeletBurstable(c.Resources.Requests.Memory().Value(), memCapacity), oomServiceLow, oomServiceHigh), true
}

// nodeCritical is the priority class whose pods the kubelet gives -997 whatever their resources.
const nodeCritical = "system-node-critical"

// kubeletGuaranteed is what the kubelet gives Guaranteed and node-critical pods' containers.
const kubeletGuaranteed = -997

// kubeletBurstable is the kubelet's oom_score_adj for a Burstable container requesting request bytes of memory.
func kubeletBurstable(request, capacity int64) int {
	return min(max(int(1000-1000*request/capacity), kubeletBurstableLow), kubeletBurstableHigh)
}

// band maps k, one of the kubelet's Burstable values, linearly onto [low, high].
func band(k, low, high int) int {
	return low + (k-kubeletBurstableLow)*(high-low)/(kubeletBurstableHigh-kubeletBurstableLow)
}

// oomFeature gives containers their class's oom_score_adj, or the one their pod's annotations set within what the
// class allows: to the runtime at creation, so the container's first process has it, and to every process of the
// container's cgroup at each reconciler round. An annotation it cannot use is said once per pod and value, by the
// reconciler (an NRI request must not wait for the API server), with a Warning event.
type oomFeature struct {
	d Deps

	mu     sync.Mutex
	warned map[types.UID]string // pod -> the annotations it was warned about
}

var _ ContainerFeature = (*oomFeature)(nil)

func newOOMFeature(d Deps) (Feature, error) {
	return &oomFeature{d: d, warned: map[types.UID]string{}}, nil
}

// Name implements Feature.
func (*oomFeature) Name() string { return OOMScoreFeatureName }

// ContainerValues implements ContainerFeature.
func (f *oomFeature) ContainerValues(t Target) (Values, error) {
	if t.Stage != StageCreateContainer && t.Stage != StageReconcile {
		return Values{}, nil
	}
	c := specContainer(t.Pod.Pod, t.Container)
	if c == nil {
		return Values{}, ErrContainerUnknown
	}
	adj, ok, err := AnnotatedOOMScoreAdj(t.Pod.PodClass, t.Pod.Pod, t.Container)
	if t.Stage == StageReconcile {
		f.warn(t.Pod.Pod, err)
	}
	if err == nil && ok {
		return f.values(t, adj), nil
	}
	var capacity int64
	if n := f.d.States.GetNode(); n != nil {
		capacity = n.Status.Capacity.Memory().Value()
	}
	adj, ok = OOMScoreAdj(t.Pod.PodClass, t.Pod.Pod, c, capacity)
	if !ok {
		return Values{}, nil
	}
	return f.values(t, adj), nil
}

// values are the Values that give a container adj at t.Stage. A negative value is given at creation only where the
// runtime can start a process below 0 (Deps.RuntimeLowersOOMScores). On the local node, whose root cannot lower a
// score, every Guaranteed container created with the kubelet's own -997 as an adjustment failed
// TestPodCgroupsFollowRequestsAndLimits, four times in four (its cgroup was not where the kubelet's layout puts it);
// the likeliest cause is runc, which writes the value in the container's init and fails the start when the kernel
// refuses it. Where the runtime cannot, negative values (Guaranteed pods, an annotation) reach the container's
// processes through the reconciler instead, within its interval, if the agent itself holds CAP_SYS_RESOURCE.
func (f *oomFeature) values(t Target, adj int) Values {
	if adj < 0 && t.Stage == StageCreateContainer && !f.d.RuntimeLowersOOMScores {
		return Values{}
	}
	return Values{OOMScoreAdj: &adj}
}

// warn says err, once per pod and annotation values, when pod's OOM annotations are not used; a nil err forgets
// the pod, so that a bad value that comes back is said again.
func (f *oomFeature) warn(pod *corev1.Pod, err error) {
	if err == nil {
		f.mu.Lock()
		delete(f.warned, pod.UID)
		f.mu.Unlock()
		return
	}
	key := pod.Annotations[slov1alpha1.AnnotationOOMScoreAdj] + "\x00" + pod.Annotations[slov1alpha1.AnnotationOOMScoreAdjAlias] +
		"\x00" + pod.Annotations[slov1alpha1.AnnotationOOMScoreAdjSpec] + "\x00" + pod.Annotations[slov1alpha1.AnnotationOOMScoreAdjSpecAlias]
	f.mu.Lock()
	said := f.warned[pod.UID] == key
	if !said && len(f.warned) >= warnedPrune {
		for uid := range f.warned {
			if f.d.States.GetPod(uid) == nil {
				delete(f.warned, uid)
			}
		}
	}
	f.warned[pod.UID] = key
	f.mu.Unlock()
	if said {
		return
	}
	klog.Background().Info("ignoring a pod's oom_score_adj annotation; its class's value applies", "pod", klog.KObj(pod), "err", err.Error())
	if f.d.Events != nil {
		f.d.Events.Eventf(pod, corev1.EventTypeWarning, ReasonBadOOMScoreAnnotation, "%v; the class's oom_score_adj applies", err)
	}
}

// warnedPrune is how many pods the feature remembers warnings about before it forgets those that left the node.
const warnedPrune = 256

// ReasonBadOOMScoreAnnotation is the reason of the Warning event on a pod whose OOM annotations cannot be used.
const ReasonBadOOMScoreAnnotation = "InvalidOOMScoreAdj"

// AnnotatedOOMScoreAdj is the oom_score_adj pod's annotations set for its container named container, and whether
// they set one: the per-container spec's entry, else the pod's value, each from gleaner.sh's annotation, else from
// Koordinator's. A value that does not parse, or is outside what the pod's class allows (a batch or free pod only
// 1000, a mid pod 334 to 1000, any other -997 to 1000: no pod may make itself safer than the band below it, nor
// safer than the kubelet's Guaranteed pods), is an error.
func AnnotatedOOMScoreAdj(class slov1alpha1.PodClass, pod *corev1.Pod, container string) (int, bool, error) {
	key, raw, ok := "", "", false
	for _, k := range []string{slov1alpha1.AnnotationOOMScoreAdjSpec, slov1alpha1.AnnotationOOMScoreAdjSpecAlias} {
		spec, has := pod.Annotations[k]
		if !has {
			continue
		}
		var perContainer map[string]json.Number
		if err := json.Unmarshal([]byte(spec), &perContainer); err != nil {
			return 0, false, fmt.Errorf("annotation %s is not a JSON object of container names and integers: %w", k, err)
		}
		if n, has := perContainer[container]; has {
			key, raw, ok = k, n.String(), true
		}
		break
	}
	if !ok {
		for _, k := range []string{slov1alpha1.AnnotationOOMScoreAdj, slov1alpha1.AnnotationOOMScoreAdjAlias} {
			if v, has := pod.Annotations[k]; has {
				key, raw, ok = k, v, true
				break
			}
		}
	}
	if !ok {
		return 0, false, nil
	}
	v, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil {
		return 0, false, fmt.Errorf("annotation %s: %q is not an integer", key, raw)
	}
	low, what := -997, "a pod"
	switch {
	case class.BestEffort:
		low, what = oomBestEffort, "a best-effort pod"
	case class.Mid:
		low, what = oomMidLow, "a mid pod"
	}
	if v < low || v > oomBestEffort {
		return 0, false, fmt.Errorf("annotation %s: %d is outside what %s may set, %d to %d", key, v, what, low, oomBestEffort)
	}
	return v, true, nil
}

// specContainer is the container, init container or ephemeral container (kubectl debug) of pod named name, nil if
// it has none.
func specContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if ec := &pod.Spec.EphemeralContainers[i]; ec.Name == name {
			c := corev1.Container(ec.EphemeralContainerCommon)
			return &c
		}
	}
	return nil
}
