package statesinformer

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=slo.gleaner.sh,resources=nodeslos;nodemetrics,verbs=get;list;watch

// Informer fills a Store from the API server (and optionally the kubelet) for one node. It is a Runnable.
type Informer struct {
	*Store
	nodeName string
	cache    crcache.Cache
	kubelet  *KubeletPods
	synced   chan struct{}
}

// New returns an Informer for the node nodeName. Pods come from a watch on the API server, or from kubelet when it
// is not nil. scheme must know the core and slo.gleaner.sh kinds.
func New(cfg *rest.Config, scheme *runtime.Scheme, nodeName string, kubelet *KubeletPods) (*Informer, error) {
	if nodeName == "" {
		return nil, errors.New("creating the states informer: the node name is empty")
	}
	onNode := fields.OneTermEqualSelector("metadata.name", nodeName)
	byObject := map[client.Object]crcache.ByObject{
		&corev1.Node{}:            {Field: onNode},
		&slov1alpha1.NodeSLO{}:    {Field: onNode},
		&slov1alpha1.NodeMetric{}: {Field: onNode},
	}
	if kubelet == nil {
		byObject[&corev1.Pod{}] = crcache.ByObject{
			Field:     fields.OneTermEqualSelector("spec.nodeName", nodeName),
			Transform: slimPod,
		}
	}
	c, err := crcache.New(cfg, crcache.Options{
		Scheme:                      scheme,
		ByObject:                    byObject,
		DefaultTransform:            crcache.TransformStripManagedFields(),
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the states informer's cache: %w", err)
	}
	return &Informer{Store: NewStore(), nodeName: nodeName, cache: c, kubelet: kubelet, synced: make(chan struct{})}, nil
}

// Name is the informer's name as a Runnable.
func (i *Informer) Name() string { return "states-informer" }

// Start watches until ctx ends. It returns an error only when it cannot set up its watches; an unreachable API
// server is retried by the watches while the Store serves the last state.
func (i *Informer) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("node", i.nodeName)
	ctx = klog.NewContext(ctx, log)
	handlers := []handler{
		{&corev1.Node{}, KindNode, func(o client.Object) { i.SetNode(o.(*corev1.Node)) }, func(client.Object) { i.SetNode(nil) }},
		{&slov1alpha1.NodeSLO{}, KindNodeSLO, func(o client.Object) { i.SetNodeSLO(o.(*slov1alpha1.NodeSLO)) }, func(client.Object) { i.SetNodeSLO(nil) }},
		{&slov1alpha1.NodeMetric{}, KindNodeMetric, func(o client.Object) { i.SetNodeMetric(o.(*slov1alpha1.NodeMetric)) }, func(client.Object) { i.SetNodeMetric(nil) }},
	}
	if i.kubelet == nil {
		handlers = append(handlers, handler{&corev1.Pod{}, KindPods, func(o client.Object) { i.SetPod(o.(*corev1.Pod)) }, func(o client.Object) { i.DeletePod(o.GetUID()) }})
	}
	for _, h := range handlers {
		inf, err := i.cache.GetInformer(ctx, h.obj)
		if err != nil {
			return fmt.Errorf("watching %T on node %q: %w", h.obj, i.nodeName, err)
		}
		if _, err := inf.AddEventHandler(eventHandler(h.set, h.unset)); err != nil {
			return fmt.Errorf("watching %T on node %q: %w", h.obj, i.nodeName, err)
		}
	}

	errc := make(chan error, 2)
	go func() { errc <- i.cache.Start(ctx) }()
	if i.kubelet != nil {
		go func() { errc <- i.kubelet.Run(ctx, i.Store) }()
	}
	go i.RunCallbacks(ctx)
	go func() {
		if !i.cache.WaitForCacheSync(ctx) {
			return
		}
		for _, h := range handlers {
			i.MarkSynced(h.kind)
		}
		if i.kubelet != nil {
			if !i.kubelet.WaitForFirstList(ctx) {
				return
			}
			i.MarkSynced(KindPods)
		}
		log.Info("states informer synced", "pods", len(i.GetAllPods()))
		close(i.synced)
	}()
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
}

// WaitForSync blocks until every source has delivered its first state (true) or ctx ends (false).
func (i *Informer) WaitForSync(ctx context.Context) bool {
	select {
	case <-i.synced:
		return true
	case <-ctx.Done():
		return false
	}
}

// handler routes one watched kind into the Store.
type handler struct {
	obj   client.Object
	kind  Kind
	set   func(client.Object)
	unset func(client.Object)
}

func eventHandler(set, unset func(client.Object)) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(client.Object); ok {
				set(o)
			}
		},
		UpdateFunc: func(_, obj any) {
			if o, ok := obj.(client.Object); ok {
				set(o)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if o, ok := obj.(client.Object); ok {
				unset(o)
			}
		},
	}
}
