package statesinformer

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// States is the agent's view of its node, for every other module.
//
// Getters return the latest state and never block on the API server. Returned objects are shared with the
// informer and with other modules: callers must not modify them (DeepCopy first). A getter returns nil (or an
// empty list) until the first state arrived, and after the object was deleted.
type States interface {
	// GetNode returns the agent's Node.
	GetNode() *corev1.Node
	// GetAllPods returns the pods bound to the node that have not ended (pods in phase Succeeded or Failed, and
	// deleted pods, are dropped at once), sorted by namespace and name. The slice is the caller's; the PodMetas in
	// it are shared.
	GetAllPods() []*PodMeta
	// GetPod returns one pod by UID, or nil.
	GetPod(uid types.UID) *PodMeta
	// GetNodeSLO returns the node's NodeSLO.
	GetNodeSLO() *slov1alpha1.NodeSLO
	// GetNodeMetric returns the node's NodeMetric.
	GetNodeMetric() *slov1alpha1.NodeMetric
	// HasSynced reports whether every source has delivered a complete first state.
	HasSynced() bool
	// RegisterCallback calls fn after state of the given kind changed. Callbacks run on one goroutine, one at a
	// time, in registration order, after the change is visible through the getters; changes that arrive while
	// callbacks run are coalesced into one more call, so a callback is a signal to re-read, not an event log. A
	// callback must return quickly. A callback registered while the informer runs sees the changes from then on; name
	// identifies the callback in logs.
	RegisterCallback(kind Kind, name string, fn func(Kind))
}

// Kind is a kind of state.
type Kind string

// The kinds of state and what counts as a change of each.
const (
	// KindNode changes when the Node's resourceVersion changes (or it appears or goes).
	KindNode Kind = "Node"
	// KindPods changes when a pod is added, updated (new resourceVersion) or removed.
	KindPods Kind = "Pods"
	// KindNodeSLO changes when the NodeSLO's spec changes (or it appears or goes).
	KindNodeSLO Kind = "NodeSLO"
	// KindNodeMetric changes when the NodeMetric's spec changes (or it appears or goes); status writes, including
	// the agent's own, are not changes.
	KindNodeMetric Kind = "NodeMetric"
)

// Kinds lists every Kind, in the order callbacks of different kinds run.
func Kinds() []Kind { return []Kind{KindNode, KindPods, KindNodeSLO, KindNodeMetric} }

// PodMeta is a pod on the node with what the agent derives from it once per update.
type PodMeta struct {
	// Pod is the pod; shared, read-only.
	Pod *corev1.Pod
	// PodClass is who the pod is, as slov1alpha1.ClassOf decides it: its QoS and priority classes, whether it is
	// best-effort or mid-tier (the only kinds QoS plugins evict, mid only after best-effort, so a plugin never picks
	// a pod the evictor refuses)
	// and its Kubernetes QoS class, which decides its cgroup directory.
	slov1alpha1.PodClass
}

// Key is "namespace/name".
func (m *PodMeta) Key() string { return m.Pod.Namespace + "/" + m.Pod.Name }

func newPodMeta(p *corev1.Pod) *PodMeta {
	return &PodMeta{Pod: p, PodClass: slov1alpha1.ClassOf(p)}
}

// ended reports whether a pod's containers have all stopped for good.
func ended(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
