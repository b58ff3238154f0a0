package statesinformer

import (
	"context"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// Store holds the state and runs the callbacks. Sources write it with the Set/Delete/Replace methods; modules
// read it through States. A Store is usable without an Informer (tests fill it directly); callbacks run only while
// RunCallbacks does.
type Store struct {
	mu         sync.RWMutex
	node       *corev1.Node
	pods       map[types.UID]*PodMeta
	sorted     []*PodMeta // pods by namespace/name, rebuilt on change
	nodeSLO    *slov1alpha1.NodeSLO
	nodeMetric *slov1alpha1.NodeMetric
	synced     map[Kind]bool

	cbMu      sync.Mutex
	callbacks map[Kind][]namedCallback
	pending   map[Kind]bool
	signal    chan struct{}
}

type namedCallback struct {
	name string
	fn   func(Kind)
}

var _ States = &Store{}

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{
		pods:      map[types.UID]*PodMeta{},
		synced:    map[Kind]bool{},
		callbacks: map[Kind][]namedCallback{},
		pending:   map[Kind]bool{},
		signal:    make(chan struct{}, 1),
	}
}

// GetNode implements States.
func (s *Store) GetNode() *corev1.Node {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.node
}

// GetAllPods implements States.
func (s *Store) GetAllPods() []*PodMeta {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.sorted)
}

// GetPod implements States.
func (s *Store) GetPod(uid types.UID) *PodMeta {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.pods[uid]
}

// GetNodeSLO implements States.
func (s *Store) GetNodeSLO() *slov1alpha1.NodeSLO {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.nodeSLO
}

// GetNodeMetric implements States.
func (s *Store) GetNodeMetric() *slov1alpha1.NodeMetric {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.nodeMetric
}

// HasSynced implements States: every Kind has been marked synced.
func (s *Store) HasSynced() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, k := range Kinds() {
		if !s.synced[k] {
			return false
		}
	}
	return true
}

// MarkSynced records that the source of kind delivered its first complete state.
func (s *Store) MarkSynced(kind Kind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.synced[kind] = true
}

// SetNode stores the Node; nil means it was deleted.
func (s *Store) SetNode(n *corev1.Node) {
	s.mu.Lock()
	changed := (s.node == nil) != (n == nil) || (n != nil && n.ResourceVersion != s.node.ResourceVersion)
	s.node = n
	s.mu.Unlock()
	if changed {
		s.notify(KindNode)
	}
}

// SetPod adds or updates a pod; a pod that ended is removed instead.
func (s *Store) SetPod(p *corev1.Pod) {
	if ended(p) {
		s.DeletePod(p.UID)
		return
	}
	s.mu.Lock()
	old, ok := s.pods[p.UID]
	changed := !ok || old.Pod.ResourceVersion != p.ResourceVersion || p.ResourceVersion == ""
	if changed {
		s.pods[p.UID] = newPodMeta(p)
		s.resort()
	}
	s.mu.Unlock()
	if changed {
		s.notify(KindPods)
	}
}

// DeletePod removes a pod.
func (s *Store) DeletePod(uid types.UID) {
	s.mu.Lock()
	_, ok := s.pods[uid]
	if ok {
		delete(s.pods, uid)
		s.resort()
	}
	s.mu.Unlock()
	if ok {
		s.notify(KindPods)
	}
}

// sameKubeletPod says whether two copies of a pod from the kubelet's list are the same. The kubelet serves its own,
// newer status under the API server's resourceVersion (a static pod has none at all), so the phase and the
// containers' IDs are compared too: a started or restarted container has a new ID, and a new cgroup directory.
func sameKubeletPod(a, b *corev1.Pod) bool {
	if a.ResourceVersion != b.ResourceVersion || a.Status.Phase != b.Status.Phase {
		return false
	}
	ids := func(p *corev1.Pod) []string {
		var out []string
		for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for _, c := range list {
				out = append(out, c.ContainerID)
			}
		}
		return out
	}
	return slices.Equal(ids(a), ids(b))
}

// ReplacePods replaces every pod with pods (those that ended left out), as a full list from the kubelet does.
func (s *Store) ReplacePods(pods []*corev1.Pod) {
	next := make(map[types.UID]*PodMeta, len(pods))
	for _, p := range pods {
		if !ended(p) {
			next[p.UID] = newPodMeta(p)
		}
	}
	s.mu.Lock()
	changed := len(next) != len(s.pods)
	for uid, m := range next {
		if old, ok := s.pods[uid]; !ok || !sameKubeletPod(old.Pod, m.Pod) {
			changed = true
		} else {
			next[uid] = old
		}
	}
	s.pods = next
	s.resort()
	s.mu.Unlock()
	if changed {
		s.notify(KindPods)
	}
}

// resort rebuilds the sorted pod list; s.mu is held.
func (s *Store) resort() {
	s.sorted = s.sorted[:0]
	for _, m := range s.pods {
		s.sorted = append(s.sorted, m)
	}
	slices.SortFunc(s.sorted, func(a, b *PodMeta) int {
		if c := strings.Compare(a.Pod.Namespace, b.Pod.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Pod.Name, b.Pod.Name)
	})
}

// SetNodeSLO stores the NodeSLO; nil means it was deleted.
func (s *Store) SetNodeSLO(n *slov1alpha1.NodeSLO) {
	s.mu.Lock()
	changed := (s.nodeSLO == nil) != (n == nil) || (n != nil && !equality.Semantic.DeepEqual(n.Spec, s.nodeSLO.Spec))
	s.nodeSLO = n
	s.mu.Unlock()
	if changed {
		s.notify(KindNodeSLO)
	}
}

// SetNodeMetric stores the NodeMetric; nil means it was deleted.
func (s *Store) SetNodeMetric(n *slov1alpha1.NodeMetric) {
	s.mu.Lock()
	changed := (s.nodeMetric == nil) != (n == nil) || (n != nil && !equality.Semantic.DeepEqual(n.Spec, s.nodeMetric.Spec))
	s.nodeMetric = n
	s.mu.Unlock()
	if changed {
		s.notify(KindNodeMetric)
	}
}

// RegisterCallback implements States.
func (s *Store) RegisterCallback(kind Kind, name string, fn func(Kind)) {
	s.cbMu.Lock()
	defer s.cbMu.Unlock()
	s.callbacks[kind] = append(s.callbacks[kind], namedCallback{name: name, fn: fn})
}

func (s *Store) notify(kind Kind) {
	s.cbMu.Lock()
	s.pending[kind] = true
	s.cbMu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default: // a signal is already pending; it will pick this kind up
	}
}

// RunCallbacks runs the registered callbacks as changes arrive, until ctx ends.
func (s *Store) RunCallbacks(ctx context.Context) {
	log := klog.FromContext(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.signal:
		}
		s.cbMu.Lock()
		pending := s.pending
		s.pending = map[Kind]bool{}
		cbs := map[Kind][]namedCallback{}
		for k, v := range s.callbacks {
			cbs[k] = slices.Clone(v)
		}
		s.cbMu.Unlock()
		for _, k := range Kinds() {
			if !pending[k] {
				continue
			}
			for _, cb := range cbs[k] {
				log.V(5).Info("running states callback", "kind", k, "callback", cb.name)
				cb.fn(k)
			}
		}
	}
}
