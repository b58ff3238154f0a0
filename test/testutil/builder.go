// Package testutil has small builders for the objects tests create, so a test states only what matters to it:
//
//	pod := testutil.Pod("web").Node("n1").Requests("cpu", "250m").Limits("memory", "128Mi").Obj()
//	node := testutil.Node("n1").Allocatable("cpu", "4", "memory", "8Gi").Obj()
//
// Quantities are strings parsed with resource.MustParse; a bad one is a programmer's error and panics.
package testutil

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// PodBuilder builds a Pod. Its zero-argument methods act on the last container added (a container "c0" is added
// when the pod has none).
type PodBuilder struct {
	pod  *corev1.Pod
	last *corev1.Container
}

// Pod starts a pod in namespace "default", phase Running, with no containers yet.
func Pod(name string) *PodBuilder {
	return &PodBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}}
}

// Namespace sets the namespace.
func (b *PodBuilder) Namespace(ns string) *PodBuilder { b.pod.Namespace = ns; return b }

// UID sets the UID.
func (b *PodBuilder) UID(uid string) *PodBuilder { b.pod.UID = types.UID(uid); return b }

// Node binds the pod to a node.
func (b *PodBuilder) Node(name string) *PodBuilder { b.pod.Spec.NodeName = name; return b }

// Phase sets status.phase.
func (b *PodBuilder) Phase(p corev1.PodPhase) *PodBuilder { b.pod.Status.Phase = p; return b }

// Priority sets spec.priority. A real API server accepts it only with the matching priorityClassName: use
// PriorityClass for pods that go to one.
func (b *PodBuilder) Priority(p int32) *PodBuilder { b.pod.Spec.Priority = &p; return b }

// PriorityClass sets spec.priorityClassName to one of PriorityClasses and spec.priority to its value.
func (b *PodBuilder) PriorityClass(name string) *PodBuilder {
	for _, pc := range PriorityClasses() {
		if pc.Name == name {
			b.pod.Spec.PriorityClassName = name
			return b.Priority(pc.Value)
		}
	}
	panic("testutil: unknown priority class " + name)
}

// Label adds a label.
func (b *PodBuilder) Label(k, v string) *PodBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[k] = v
	return b
}

// Annotation adds an annotation.
func (b *PodBuilder) Annotation(k, v string) *PodBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[k] = v
	return b
}

// Terminating sets a deletion timestamp.
func (b *PodBuilder) Terminating() *PodBuilder {
	now := metav1.Now()
	b.pod.DeletionTimestamp = &now
	return b
}

// Container adds a container and makes it the one Requests and Limits act on.
func (b *PodBuilder) Container(name string) *PodBuilder {
	b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{Name: name, Image: "pause"})
	b.last = &b.pod.Spec.Containers[len(b.pod.Spec.Containers)-1]
	return b
}

// InitContainer adds an init container and makes it current; restartable makes it a sidecar
// (restartPolicy: Always).
func (b *PodBuilder) InitContainer(name string, restartable bool) *PodBuilder {
	c := corev1.Container{Name: name, Image: "pause"}
	if restartable {
		always := corev1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, c)
	b.last = &b.pod.Spec.InitContainers[len(b.pod.Spec.InitContainers)-1]
	return b
}

// Image sets the image and arguments of the current container, with pull policy Never: the local cluster's images
// (gleaner.local/NAME:dev, test/workloads) are imported, never pulled.
func (b *PodBuilder) Image(image string, args ...string) *PodBuilder {
	c := b.current()
	c.Image, c.Args, c.ImagePullPolicy = image, args, corev1.PullNever
	return b
}

// Requests sets requests of the current container from name/quantity pairs.
func (b *PodBuilder) Requests(pairs ...string) *PodBuilder {
	c := b.current()
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	setPairs(c.Resources.Requests, pairs)
	return b
}

// Limits sets limits of the current container from name/quantity pairs.
func (b *PodBuilder) Limits(pairs ...string) *PodBuilder {
	c := b.current()
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	setPairs(c.Resources.Limits, pairs)
	return b
}

// PodRequests sets pod-level requests (spec.resources.requests).
func (b *PodBuilder) PodRequests(pairs ...string) *PodBuilder {
	if b.pod.Spec.Resources == nil {
		b.pod.Spec.Resources = &corev1.ResourceRequirements{}
	}
	if b.pod.Spec.Resources.Requests == nil {
		b.pod.Spec.Resources.Requests = corev1.ResourceList{}
	}
	setPairs(b.pod.Spec.Resources.Requests, pairs)
	return b
}

// PodLimits sets pod-level limits (spec.resources.limits).
func (b *PodBuilder) PodLimits(pairs ...string) *PodBuilder {
	if b.pod.Spec.Resources == nil {
		b.pod.Spec.Resources = &corev1.ResourceRequirements{}
	}
	if b.pod.Spec.Resources.Limits == nil {
		b.pod.Spec.Resources.Limits = corev1.ResourceList{}
	}
	setPairs(b.pod.Spec.Resources.Limits, pairs)
	return b
}

// Overhead sets spec.overhead.
func (b *PodBuilder) Overhead(pairs ...string) *PodBuilder {
	if b.pod.Spec.Overhead == nil {
		b.pod.Spec.Overhead = corev1.ResourceList{}
	}
	setPairs(b.pod.Spec.Overhead, pairs)
	return b
}

// Running reports the current container as running in the pod's status, with the container ID the runtime gave it
// ("containerd://<id>", "cri-o://<id>", "docker://<id>"), as the kubelet does.
func (b *PodBuilder) Running(containerID string) *PodBuilder {
	c := b.current()
	st := corev1.ContainerStatus{
		Name: c.Name, ContainerID: containerID, Ready: true, Started: ptr.To(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
	}
	for i := range b.pod.Spec.InitContainers {
		if &b.pod.Spec.InitContainers[i] == c {
			b.pod.Status.InitContainerStatuses = append(b.pod.Status.InitContainerStatuses, st)
			return b
		}
	}
	b.pod.Status.ContainerStatuses = append(b.pod.Status.ContainerStatuses, st)
	return b
}

// StatusRequests records in status.containerStatuses that container runs with these requests, allocated and
// actuated: the state of an in-place resize the kubelet has applied while the spec may still ask for more or less.
func (b *PodBuilder) StatusRequests(container string, pairs ...string) *PodBuilder {
	list := corev1.ResourceList{}
	setPairs(list, pairs)
	b.pod.Status.ContainerStatuses = append(b.pod.Status.ContainerStatuses, corev1.ContainerStatus{
		Name:               container,
		AllocatedResources: list,
		Resources:          &corev1.ResourceRequirements{Requests: list.DeepCopy()},
	})
	return b
}

// Obj returns the pod.
func (b *PodBuilder) Obj() *corev1.Pod { return b.pod }

func (b *PodBuilder) current() *corev1.Container {
	if b.last == nil {
		b.Container("c0")
	}
	return b.last
}

// NodeBuilder builds a Node.
type NodeBuilder struct{ node *corev1.Node }

// Node starts a Ready node.
func Node(name string) *NodeBuilder {
	return &NodeBuilder{node: &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
		}},
	}}
}

// Label adds a label.
func (b *NodeBuilder) Label(k, v string) *NodeBuilder {
	if b.node.Labels == nil {
		b.node.Labels = map[string]string{}
	}
	b.node.Labels[k] = v
	return b
}

// Annotation adds an annotation.
func (b *NodeBuilder) Annotation(k, v string) *NodeBuilder {
	if b.node.Annotations == nil {
		b.node.Annotations = map[string]string{}
	}
	b.node.Annotations[k] = v
	return b
}

// Capacity sets status.capacity from name/quantity pairs.
func (b *NodeBuilder) Capacity(pairs ...string) *NodeBuilder {
	if b.node.Status.Capacity == nil {
		b.node.Status.Capacity = corev1.ResourceList{}
	}
	setPairs(b.node.Status.Capacity, pairs)
	return b
}

// Allocatable sets status.allocatable from name/quantity pairs.
func (b *NodeBuilder) Allocatable(pairs ...string) *NodeBuilder {
	if b.node.Status.Allocatable == nil {
		b.node.Status.Allocatable = corev1.ResourceList{}
	}
	setPairs(b.node.Status.Allocatable, pairs)
	return b
}

// Obj returns the node.
func (b *NodeBuilder) Obj() *corev1.Node { return b.node }

func setPairs(list corev1.ResourceList, pairs []string) {
	if len(pairs)%2 != 0 {
		panic("testutil: resource pairs must be name, quantity, name, quantity, ...")
	}
	for i := 0; i < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
}

// PriorityClasses returns one PriorityClass per colocation band, for tests against a real API server, with the
// names and values config/priorityclasses installs: gleaner-prod (9000), gleaner-mid (7000), gleaner-batch (5000),
// gleaner-free (3000). A pod built with PriorityClass is then accepted by the local cluster too.
func PriorityClasses() []*schedulingv1.PriorityClass {
	pc := func(name string, v int32) *schedulingv1.PriorityClass {
		return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v}
	}
	return []*schedulingv1.PriorityClass{pc("gleaner-prod", 9000), pc("gleaner-mid", 7000), pc("gleaner-batch", 5000), pc("gleaner-free", 3000)}
}
