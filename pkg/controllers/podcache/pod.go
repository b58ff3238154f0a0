package podcache

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/allocation"
)

// Pod is what gleaner-manager's controllers read of a bound pod, worked out once when the pod arrives: who it is,
// where it runs, whether it holds resources, its class and its requests and limits. What pods of one workload have
// in common (the Shape) is one shared value; a Pod itself is 88 bytes and its name and UID. Pods in the cache are
// read-only for everybody.
type Pod struct {
	Namespace string
	Name      string
	UID       types.UID
	// NodeName is the node the pod is bound to (spec.nodeName, never empty in the cache).
	NodeName string
	// Phase is status.phase.
	Phase corev1.PodPhase
	*Shape
}

// GetObjectMeta names the pod to client-go's stores (meta.Accessor), which key what they hold by namespace and
// name: the reflector keeps the pods of a streamed list in one such store before it hands them to the cache. It
// makes a new ObjectMeta on each call.
func (p *Pod) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID}
}

// Shape is what decides a pod's share of its node: its class and its requests and limits, and the ColocationProfile
// that made them, if one did. Equal shapes are one value in the cache (see Cache), so every list in it is read-only.
type Shape struct {
	// Class is the pod's priority and QoS class (slov1alpha1.ClassOf).
	Class slov1alpha1.PodClass
	// Requests and Limits are what the pod adds to its node's totals as `kubectl describe node` sums them, from the
	// spec (allocation.PodRequestsAndLimits).
	Requests, Limits corev1.ResourceList
	// Effective is the pod's requests as the scheduler counts them, an in-place resize included (the requests the
	// node-resource plugins count).
	Effective corev1.ResourceList
	// Profile is the name of the ColocationProfile that made the pod a batch pod (its label
	// configv1alpha1.LabelColocationProfile), empty for a pod no profile changed. The pods of one workload share it,
	// so it costs a pod nothing.
	Profile string
}

// FromPod works out what the controllers read of pod. The result shares nothing with pod and nothing with other
// Pods; the cache interns the shapes (Cache), tests build pods with it directly.
func FromPod(pod *corev1.Pod) *Pod {
	reqs, limits := allocation.PodRequestsAndLimits(pod)
	return &Pod{
		Namespace: pod.Namespace,
		Name:      pod.Name,
		UID:       pod.UID,
		NodeName:  pod.Spec.NodeName,
		Phase:     pod.Status.Phase,
		Shape: &Shape{
			Class:     slov1alpha1.ClassOf(pod),
			Requests:  reqs,
			Limits:    limits,
			Effective: resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true}),
			Profile:   pod.Labels[configv1alpha1.LabelColocationProfile],
		},
	}
}

// FromPods is FromPod of each pod.
func FromPods(pods ...*corev1.Pod) []*Pod {
	out := make([]*Pod, len(pods))
	for i, p := range pods {
		out[i] = FromPod(p)
	}
	return out
}

// Counted reports whether `kubectl describe node` counts the pod among its node's pods (allocation.Counted):
// its phase is neither Succeeded nor Failed.
func (p *Pod) Counted() bool {
	return p.Phase != corev1.PodSucceeded && p.Phase != corev1.PodFailed
}

// Active reports whether the pod holds resources in the node-resource plugins' view: it is Pending or Running
// (terminating pods included). Succeeded, Failed and Unknown pods do not count.
func (p *Pod) Active() bool {
	return p.Phase == corev1.PodRunning || p.Phase == corev1.PodPending || p.Phase == ""
}

// key is the shape's identity for interning: every field, each quantity with its format, since the format decides
// how a node's sums print.
func (s *Shape) key() string {
	var b strings.Builder
	c := s.Class
	b.WriteString(string(c.Priority) + "/" + string(c.QoS) + "/" + string(c.KubeQoS) + "/")
	for _, f := range []bool{c.BestEffort, c.Mid} {
		if f {
			b.WriteByte('t')
		} else {
			b.WriteByte('f')
		}
	}
	for _, u := range c.Unknown {
		b.WriteString("/" + u)
	}
	for _, list := range []corev1.ResourceList{s.Requests, s.Limits, s.Effective} {
		b.WriteByte('|')
		writeList(&b, list)
	}
	// A label value has no '|'.
	b.WriteString("|" + s.Profile)
	return b.String()
}

// writeList writes list in a fixed order (resource names sorted).
func writeList(b *strings.Builder, list corev1.ResourceList) {
	names := make([]string, 0, len(list))
	for n := range list {
		names = append(names, string(n))
	}
	slices.Sort(names)
	for _, n := range names {
		q := list[corev1.ResourceName(n)]
		b.WriteString(n + "=" + q.String() + ":" + string(q.Format) + ";")
	}
}
