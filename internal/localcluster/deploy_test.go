package localcluster

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestWorkloadReadiness(t *testing.T) {
	dep := func(gen, observed int64, want int32, updated, ready, available int32) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(want)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, UpdatedReplicas: updated,
				ReadyReplicas: ready, AvailableReplicas: available},
		}
	}
	deployments := []struct {
		name string
		d    *appsv1.Deployment
		want bool
	}{
		{"all ready", dep(2, 2, 2, 2, 2, 2), true},
		{"not observed yet", dep(2, 1, 2, 2, 2, 2), false},
		{"rolling", dep(2, 2, 2, 1, 2, 2), false},
		{"not available", dep(1, 1, 1, 1, 1, 0), false},
	}
	for _, tt := range deployments {
		if got := deploymentReady(tt.d); got != tt.want {
			t.Errorf("deployment %s: ready %t, want %t", tt.name, got, tt.want)
		}
	}
	ds := func(observed int64, desired, updated, ready int32) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Generation: 1},
			Status: appsv1.DaemonSetStatus{ObservedGeneration: observed, DesiredNumberScheduled: desired,
				UpdatedNumberScheduled: updated, NumberReady: ready},
		}
	}
	daemonSets := []struct {
		name string
		d    *appsv1.DaemonSet
		want bool
	}{
		{"ready", ds(1, 1, 1, 1), true},
		{"not observed", ds(0, 1, 1, 1), false},
		{"pod not ready", ds(1, 1, 1, 0), false},
	}
	for _, tt := range daemonSets {
		if got := daemonSetReady(tt.d); got != tt.want {
			t.Errorf("daemonset %s: ready %t, want %t", tt.name, got, tt.want)
		}
	}
}
