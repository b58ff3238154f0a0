package colocationprofile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
)

// profileIndex is the pending cache's index of pods by their profile label.
const profileIndex = "profile"

// pendingFields selects the pods that wait for a node and have not finished. The pod cache holds the bound ones
// (spec.nodeName != ""); a pod leaves this selection as it is bound, and its watch reports it deleted.
var pendingFields = fields.SelectorFromSet(fields.Set{"spec.nodeName": ""}).String() +
	",status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed)

// newPendingCache returns a cache, added to mgr's runnables, of the pods a profile made batch pods that wait for a
// node: those carrying configv1alpha1.LabelColocationProfile and pendingFields, each cut down to its name, that
// label and its phase, and indexed by the label's value (profileIndex). Only they are listed and watched, so its
// size is the profiles' pods waiting to be scheduled, not the cluster's pods.
func newPendingCache(mgr ctrl.Manager) (cache.Cache, error) {
	marked, err := labels.NewRequirement(configv1alpha1.LabelColocationProfile, selection.Exists, nil)
	if err != nil {
		return nil, fmt.Errorf("selecting the pods of colocation profiles: %w", err)
	}
	sel, err := fields.ParseSelector(pendingFields)
	if err != nil {
		return nil, fmt.Errorf("selecting the pods of colocation profiles: %w", err)
	}
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient:                  mgr.GetHTTPClient(),
		Scheme:                      mgr.GetScheme(),
		Mapper:                      mgr.GetRESTMapper(),
		ReaderFailOnMissingInformer: true,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: labels.NewSelector().Add(*marked), Field: sel, Transform: slimPod},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the cache of colocation profiles' pending pods: %w", err)
	}
	if err := c.IndexField(context.Background(), &corev1.Pod{}, profileIndex, func(obj client.Object) []string {
		return []string{obj.GetLabels()[configv1alpha1.LabelColocationProfile]}
	}); err != nil {
		return nil, fmt.Errorf("indexing the colocation profiles' pending pods: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the cache of colocation profiles' pending pods to the manager: %w", err)
	}
	return c, nil
}

// slimPod keeps of a pod what the controller reads: its identity, its profile label and its phase.
func slimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
			Labels: map[string]string{configv1alpha1.LabelColocationProfile: pod.Labels[configv1alpha1.LabelColocationProfile]},
		},
		Status: corev1.PodStatus{Phase: pod.Status.Phase},
	}, nil
}

// pendingProfile maps a pending pod to its profile.
func pendingProfile(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[configv1alpha1.LabelColocationProfile]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}
