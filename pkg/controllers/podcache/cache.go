// Package podcache is gleaner-manager's cache of the cluster's bound pods: every pod as a Pod, the few words the
// controllers read of it, instead of a corev1.Pod. The manager holds every pod of the cluster, so what one costs
// decides its footprint at scale: a corev1.Pod struct alone is 1.2 KB however much of it is emptied, a Pod is 88
// bytes, its name and UID, and a shared Shape.
//
// A reflector of its own lists and watches the pods (by spec.nodeName != "", in protobuf) straight into the cache:
// no informer store of full pods, no delta queue. Controllers read one node's pods (OnNode), or how many pods a
// ColocationProfile made batch pods (ProfilePods), and watch changes through Source, which maps a change to the
// nodes it touches, or SourceFunc, which maps it to what the controller says.
package podcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
)

// Cache holds the cluster's bound pods. It is a manager runnable (Start) and the reflector's store (the
// toolscache.ReflectorStore methods); everything else reads it.
type Cache struct {
	lw toolscache.ListerWatcher

	mu     sync.RWMutex
	pods   map[podKey]*Pod
	byNode map[string][]*Pod
	// profilePods counts, by Shape.Profile, the pods of a ColocationProfile that have not finished (Counted).
	profilePods map[string]int
	handlers    []func(old, new *Pod)
	synced      chan struct{} // closed by the first Replace

	// internMu guards the tables of shared shapes and strings, apart from mu: a pod is made a Pod outside mu, so
	// that readers of the cache do not wait on it (a relist makes 60,000 of them).
	internMu sync.Mutex
	shapes   internTable[*Shape]
	strings  internTable[string]
}

// podKey is a pod's identity in the cache: namespace and name, as the API server's.
type podKey struct{ namespace, name string }

// The reflector lists with a streaming watch where the API server serves one (client-go's WatchListClient, on by
// default): it gathers the stream in a store of its own and hands it over at the end. As a TransformingStore the cache
// has the reflector make each pod a Pod as it arrives, so the cluster's pods never sit in memory whole. Where it
// cannot stream (WatchListClient off, or an API server without streaming lists), the reflector's own list would be
// one response of every pod, decoded whole before the cache sees a pod (a list from the watch cache ignores the
// page size); the cache's lister pages it instead (pagedList).
var _ toolscache.TransformingStore = &Cache{}

// listPageSize is how many pods one page of a list holds when the pods cannot be streamed.
const listPageSize = 500

// New returns the cache of the pods cfg's API server holds, empty until Start has listed them.
func New(cfg *rest.Config) (*Cache, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("pod cache: %w", err)
	}
	bound := func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName!=" }
	lw := toolscache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "pods", metav1.NamespaceAll, bound)
	c := newCache(nil)
	c.lw = &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			return c.pagedList(ctx, listPageSize, func(ctx context.Context, o metav1.ListOptions) (*corev1.PodList, error) {
				bound(&o)
				return cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
			})
		},
		WatchFuncWithContext: lw.WatchFuncWithContext,
	}
	return c, nil
}

// pagedList lists the pods page by page, pageSize at a time, in one consistent read (the API server's current
// state: resource version "" and its continue tokens; the reflector's "0" would be served whole from the watch cache),
// and makes each page's pods Pods before it asks for the next, so that at most one page is held as corev1.Pods. It
// returns them as a list the reflector hands to Replace. A continue token that expired mid-way fails the list, and the
// reflector lists again.
func (c *Cache) pagedList(ctx context.Context, pageSize int64, list func(context.Context, metav1.ListOptions) (*corev1.PodList, error)) (runtime.Object, error) {
	out := &podList{}
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		page, err := list(ctx, opts)
		if err != nil {
			return nil, err
		}
		if out.ResourceVersion == "" {
			out.ResourceVersion = page.ResourceVersion
		}
		for i := range page.Items {
			out.Items = append(out.Items, &listedPod{Pod: c.slim(&page.Items[i])})
		}
		if page.Continue == "" {
			return out, nil
		}
		opts.Continue = page.Continue
	}
}

// podList is a list of Pods as the reflector takes a list (meta.ExtractList): a runtime.Object with list metadata
// and items that are runtime.Objects.
type podList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []runtime.Object
}

func (l *podList) DeepCopyObject() runtime.Object {
	cp := *l
	cp.Items = slices.Clone(l.Items)
	return &cp
}

// listedPod is a Pod in a podList; the Pod is shared, as every Pod of the cache is read-only.
type listedPod struct {
	metav1.TypeMeta
	*Pod
}

func (p *listedPod) DeepCopyObject() runtime.Object {
	return &listedPod{TypeMeta: p.TypeMeta, Pod: p.Pod}
}

func newCache(lw toolscache.ListerWatcher) *Cache {
	return &Cache{
		lw:          lw,
		pods:        map[podKey]*Pod{},
		byNode:      map[string][]*Pod{},
		profilePods: map[string]int{},
		shapes:      internTable[*Shape]{max: 4096},
		strings:     internTable[string]{max: 65536},
		synced:      make(chan struct{}),
	}
}

// Start lists and watches the pods until ctx ends.
func (c *Cache) Start(ctx context.Context) error {
	r := toolscache.NewReflectorWithOptions(c.lw, &corev1.Pod{}, c, toolscache.ReflectorOptions{Name: "podcache"})
	r.RunWithContext(ctx)
	return nil
}

// NeedLeaderElection is false: like the manager's informers, the cache fills on every replica, so a new leader
// starts with it warm.
func (c *Cache) NeedLeaderElection() bool { return false }

// WaitForSync waits until the pods have been listed once, or ctx ends.
func (c *Cache) WaitForSync(ctx context.Context) error {
	select {
	case <-c.synced:
		return nil
	case <-ctx.Done():
		return errors.New("pod cache: not synced: " + context.Cause(ctx).Error())
	}
}

// HasSynced reports whether the pods have been listed once.
func (c *Cache) HasSynced() bool {
	select {
	case <-c.synced:
		return true
	default:
		return false
	}
}

// OnNode returns the pods bound to node. The slice is the caller's; the pods are the cache's, read-only.
func (c *Cache) OnNode(node string) []*Pod {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]*Pod(nil), c.byNode[node]...)
}

// ProfilePods is the number of pods in the cache that the ColocationProfile named profile made batch pods
// (Shape.Profile) and that have not finished (Counted): the bound part of the profile's status.matchedPods.
func (c *Cache) ProfilePods(profile string) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.profilePods[profile]
}

// Len is the number of pods in the cache.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.pods)
}

// subscribe calls f with every change from now on: old nil for a new pod, new nil for one gone. f runs on the
// reflector's goroutine and must not block.
func (c *Cache) subscribe(f func(old, new *Pod)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handlers = append(c.handlers, f)
}

// Transformer makes the cache's Pod of a pod, for the reflector's own store (see TransformingStore).
func (c *Cache) Transformer() toolscache.TransformFunc {
	return func(obj any) (any, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil
		}
		return c.slim(pod), nil
	}
}

// Add stores a pod the watch reports created.
func (c *Cache) Add(obj any) error { return c.Update(obj) }

// Update stores a pod the watch reports changed (or created).
func (c *Cache) Update(obj any) error {
	p, err := c.pod(obj)
	if err != nil {
		return err
	}
	c.mu.Lock()
	old := c.put(p)
	handlers := c.handlers
	c.mu.Unlock()
	notify(handlers, old, p)
	return nil
}

// Delete forgets a pod the watch reports deleted.
func (c *Cache) Delete(obj any) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("pod cache: got a %T", obj)
	}
	c.mu.Lock()
	old := c.remove(podKey{pod.Namespace, pod.Name})
	handlers := c.handlers
	c.mu.Unlock()
	if old != nil {
		notify(handlers, old, nil)
	}
	return nil
}

// Replace makes the cache hold exactly list (a fresh list after a start or a watch that expired), reporting what
// changed against what it held.
func (c *Cache) Replace(list []any, _ string) error {
	type change struct{ old, new *Pod }
	pods := make([]*Pod, len(list))
	for i, obj := range list {
		p, err := c.pod(obj)
		if err != nil {
			return err
		}
		pods[i] = p
	}
	var changes []change
	c.mu.Lock()
	seen := make(map[podKey]bool, len(pods))
	for _, p := range pods {
		seen[podKey{p.Namespace, p.Name}] = true
		changes = append(changes, change{c.put(p), p})
	}
	for k := range c.pods {
		if !seen[k] {
			changes = append(changes, change{c.remove(k), nil})
		}
	}
	handlers := c.handlers
	c.mu.Unlock()
	for _, ch := range changes {
		notify(handlers, ch.old, ch.new)
	}
	select {
	case <-c.synced:
	default:
		close(c.synced)
	}
	return nil
}

// Resync does nothing: the cache has no queue to refill.
func (c *Cache) Resync() error { return nil }

func notify(handlers []func(old, new *Pod), old, new *Pod) {
	for _, h := range handlers {
		h(old, new)
	}
}

// pod is the cache's Pod of obj: a pod from the API server, or one the reflector has had Transformer make already.
func (c *Cache) pod(obj any) (*Pod, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return c.slim(o), nil
	case *Pod:
		return o, nil
	case *listedPod:
		return o.Pod, nil
	default:
		return nil, fmt.Errorf("pod cache: got a %T", obj)
	}
}

// slim makes the cache's Pod of pod, sharing its shape and short strings with the pods before it.
func (c *Cache) slim(pod *corev1.Pod) *Pod {
	p := FromPod(pod)
	key := p.key()
	c.internMu.Lock()
	defer c.internMu.Unlock()
	p.Namespace = c.shared(p.Namespace)
	p.NodeName = c.shared(p.NodeName)
	p.Phase = corev1.PodPhase(c.shared(string(p.Phase)))
	s := p.Shape
	p.Shape = c.shapes.get(key, func() *Shape { return s })
	return p
}

// shared returns the shared copy of v. Under c.internMu.
func (c *Cache) shared(v string) string {
	if v == "" {
		return ""
	}
	return c.strings.get(v, func() string { return v })
}

// put stores p in place of the pod of its key and returns that pod, nil when there was none. Under c.mu.
func (c *Cache) put(p *Pod) *Pod {
	k := podKey{p.Namespace, p.Name}
	old := c.pods[k]
	if old != nil {
		c.unlink(old)
	}
	c.pods[k] = p
	c.byNode[p.NodeName] = append(c.byNode[p.NodeName], p)
	c.countProfile(p, 1)
	return old
}

// remove forgets the pod of k and returns it, nil when there was none. Under c.mu.
func (c *Cache) remove(k podKey) *Pod {
	old := c.pods[k]
	if old != nil {
		delete(c.pods, k)
		c.unlink(old)
	}
	return old
}

// countProfile adds n to the count of p's profile, when p has one and counts. Under c.mu.
func (c *Cache) countProfile(p *Pod, n int) {
	if p.Profile == "" || !p.Counted() {
		return
	}
	if c.profilePods[p.Profile] += n; c.profilePods[p.Profile] == 0 {
		delete(c.profilePods, p.Profile)
	}
}

// unlink takes p out of its node's list and its profile's count. Under c.mu.
func (c *Cache) unlink(p *Pod) {
	c.countProfile(p, -1)
	on := c.byNode[p.NodeName]
	for i, q := range on {
		if q == p {
			on[i] = on[len(on)-1]
			on[len(on)-1] = nil
			on = on[:len(on)-1]
			break
		}
	}
	if len(on) == 0 {
		delete(c.byNode, p.NodeName)
	} else {
		c.byNode[p.NodeName] = on
	}
}

// internTable holds the shared copy of values by key. Full (max entries), it starts again empty: sharing is lost for
// a while, nothing else.
type internTable[T any] struct {
	max int
	m   map[string]T
}

// get returns the shared value of key, made by newValue and kept when there is none.
func (t *internTable[T]) get(key string, newValue func() T) T {
	if v, ok := t.m[key]; ok {
		return v
	}
	if t.m == nil || len(t.m) >= t.max {
		t.m = map[string]T{}
	}
	v := newValue()
	t.m[key] = v
	return v
}
