package testutil

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// NodeMetricBuilder builds a NodeMetric with the status an agent would report.
type NodeMetricBuilder struct{ m *slov1alpha1.NodeMetric }

// NodeMetric starts a NodeMetric for a node with empty node usage, updated at the zero time.
func NodeMetric(node string) *NodeMetricBuilder {
	return &NodeMetricBuilder{m: &slov1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Status: slov1alpha1.NodeMetricStatus{NodeMetric: &slov1alpha1.NodeMetricInfo{
			NodeUsage: corev1.ResourceList{}, SystemUsage: corev1.ResourceList{},
		}},
	}}
}

// Updated sets status.updateTime.
func (b *NodeMetricBuilder) Updated(t time.Time) *NodeMetricBuilder {
	mt := metav1.NewTime(t)
	b.m.Status.UpdateTime = &mt
	return b
}

// NodeUsage sets status.nodeMetric.nodeUsage from name/quantity pairs.
func (b *NodeMetricBuilder) NodeUsage(pairs ...string) *NodeMetricBuilder {
	setPairs(b.m.Status.NodeMetric.NodeUsage, pairs)
	return b
}

// SystemUsage sets status.nodeMetric.systemUsage from name/quantity pairs.
func (b *NodeMetricBuilder) SystemUsage(pairs ...string) *NodeMetricBuilder {
	setPairs(b.m.Status.NodeMetric.SystemUsage, pairs)
	return b
}

// Pod adds a pod's usage, with the pod's identity, priority class and QoS class as the agent reports them.
func (b *NodeMetricBuilder) Pod(pod *corev1.Pod, pairs ...string) *NodeMetricBuilder {
	c := slov1alpha1.ClassOf(pod)
	return b.PodRecord(pod.Namespace, pod.Name, string(pod.UID), c.Priority, c.QoS, pairs...)
}

// PodRecord adds the usage of a pod that need not exist, with the identity, priority and QoS class given.
func (b *NodeMetricBuilder) PodRecord(namespace, name, uid string, priority slov1alpha1.PriorityClass, qos slov1alpha1.QoSClass, pairs ...string) *NodeMetricBuilder {
	usage := corev1.ResourceList{}
	setPairs(usage, pairs)
	b.m.Status.PodsMetric = append(b.m.Status.PodsMetric, slov1alpha1.PodMetricInfo{
		Name: name, Namespace: namespace, UID: uid, Priority: priority, QoS: qos, Usage: usage,
	})
	return b
}

// HostApp adds a host application's usage.
func (b *NodeMetricBuilder) HostApp(name string, priority slov1alpha1.PriorityClass, pairs ...string) *NodeMetricBuilder {
	return b.HostAppQoS(name, priority, "", pairs...)
}

// HostAppQoS adds a host application's usage, with its QoS class.
func (b *NodeMetricBuilder) HostAppQoS(name string, priority slov1alpha1.PriorityClass, qos slov1alpha1.QoSClass, pairs ...string) *NodeMetricBuilder {
	usage := corev1.ResourceList{}
	setPairs(usage, pairs)
	b.m.Status.HostApplicationMetric = append(b.m.Status.HostApplicationMetric, slov1alpha1.HostApplicationMetricInfo{
		Name: name, Priority: priority, QoS: qos, Usage: usage,
	})
	return b
}

// ProdReclaimable sets status.prodReclaimableMetric from name/quantity pairs.
func (b *NodeMetricBuilder) ProdReclaimable(pairs ...string) *NodeMetricBuilder {
	r := corev1.ResourceList{}
	setPairs(r, pairs)
	b.m.Status.ProdReclaimableMetric = &slov1alpha1.ReclaimableMetric{Resource: r}
	return b
}

// MemoryPressure sets status.memoryPressure as the agent writes it: pressure since since, last seen then, a hold of
// five minutes, with the UIDs of the pods evicted for it.
func (b *NodeMetricBuilder) MemoryPressure(since time.Time, evicted ...string) *NodeMetricBuilder {
	b.m.Status.MemoryPressure = &slov1alpha1.MemoryPressure{
		Since: metav1.NewTime(since), LastPressureTime: metav1.NewTime(since), HoldSeconds: slov1alpha1.DefaultMemoryEvictHoldSeconds,
		EvictedPods: evicted,
	}
	return b
}

// AsPodUsages returns a copy of m with its pod records moved from status.podsMetric (the form agents wrote before
// the compact report, and what the builder writes) to status.podUsages, as a current agent writes them: UID, priority class,
// CPU and memory. Tests run a report both ways to check that a manager reads an old agent's report as it reads a
// new one's.
func AsPodUsages(m *slov1alpha1.NodeMetric) *slov1alpha1.NodeMetric {
	out := m.DeepCopy()
	out.Status.PodUsages = nil
	for _, pm := range out.Status.PodsMetric {
		out.Status.PodUsages = append(out.Status.PodUsages, slov1alpha1.NewPodUsage(pm.UID, pm.EffectivePriority(), pm.Usage, pm.GPU))
	}
	out.Status.PodsMetric = nil
	return out
}

// Obj returns the NodeMetric.
func (b *NodeMetricBuilder) Obj() *slov1alpha1.NodeMetric { return b.m }
