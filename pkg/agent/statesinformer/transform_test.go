package statesinformer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gleaner-sh/gleaner/test/testutil"
)

func TestSlimPod(t *testing.T) {
	pod := testutil.Pod("p").Priority(9000).Label("app", "web").
		InitContainer("init", true).Requests("cpu", "100m").Running("containerd://i").
		Container("app").Requests("cpu", "1").Limits("memory", "1Gi").Running("containerd://a").Obj()
	want := pod.DeepCopy()
	pod.Annotations = map[string]string{lastApplied: "{...}", "keep": "me"}
	want.Annotations = map[string]string{"keep": "me"}
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "v"}}
	for _, c := range []*corev1.Container{&pod.Spec.InitContainers[0], &pod.Spec.Containers[0]} {
		c.Command, c.Args = []string{"run"}, []string{"--fast"}
		c.Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}
		c.LivenessProbe = &corev1.Probe{}
	}
	got, err := slimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	// Everything the agent reads survives: resources, priority, labels, status with container IDs.
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("slim pod (-want +got):\n%s", d)
	}
	node := testutil.Node("n").Obj()
	if got, _ := slimPod(node); got != node {
		t.Error("a node was changed")
	}
}
