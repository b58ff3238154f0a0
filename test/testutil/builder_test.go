package testutil

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// TestPriorityClassesMatchTheManifests: the test classes are the ones config/priorityclasses installs.
func TestPriorityClassesMatchTheManifests(t *testing.T) {
	b, err := os.ReadFile("../../config/priorityclasses/priorityclasses.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int32{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		pc := &schedulingv1.PriorityClass{}
		if err := dec.Decode(pc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		want[pc.Name] = pc.Value
	}
	got := map[string]int32{}
	for _, pc := range PriorityClasses() {
		got[pc.Name] = pc.Value
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("PriorityClasses() against config/priorityclasses (-manifests +test):\n%s", d)
	}
}

func TestPodBuilder(t *testing.T) {
	pod := Pod("p").Node("n").Priority(5500).
		InitContainer("init", false).Requests("cpu", "1").
		Container("app").Requests("cpu", "250m", "memory", "64Mi").Limits("memory", "128Mi").
		Overhead("cpu", "10m").Obj()
	if pod.Spec.NodeName != "n" || *pod.Spec.Priority != 5500 {
		t.Fatalf("node/priority not set: %+v", pod.Spec)
	}
	if got := pod.Spec.InitContainers[0].Resources.Requests.Cpu().String(); got != "1" {
		t.Errorf("init container cpu request = %s, want 1", got)
	}
	app := pod.Spec.Containers[0]
	if app.Resources.Requests.Cpu().MilliValue() != 250 || app.Resources.Limits.Memory().Value() != 128<<20 {
		t.Errorf("app resources = %+v", app.Resources)
	}
	if pod.Spec.Overhead.Cpu().MilliValue() != 10 {
		t.Errorf("overhead = %v", pod.Spec.Overhead)
	}
	// Requests with no container added first creates c0.
	if p := Pod("q").Requests("cpu", "1").Obj(); len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Name != "c0" {
		t.Errorf("implicit container: %+v", p.Spec.Containers)
	}
	if p := Pod("r").InitContainer("side", true).Obj(); *p.Spec.InitContainers[0].RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Error("sidecar restart policy not set")
	}
}

func TestPodBuilderRunning(t *testing.T) {
	pod := Pod("p").InitContainer("sidecar", true).Running("containerd://s").Container("app").Running("containerd://a").Obj()
	if len(pod.Status.InitContainerStatuses) != 1 || pod.Status.InitContainerStatuses[0].ContainerID != "containerd://s" {
		t.Errorf("init statuses = %+v", pod.Status.InitContainerStatuses)
	}
	if len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].Name != "app" || pod.Status.ContainerStatuses[0].State.Running == nil {
		t.Errorf("statuses = %+v", pod.Status.ContainerStatuses)
	}
}

func TestPodBuilderImage(t *testing.T) {
	c := Pod("p").Container("burn").Image("gleaner.local/burner:dev", "--load=500m").Obj().Spec.Containers[0]
	if c.Image != "gleaner.local/burner:dev" || len(c.Args) != 1 || c.Args[0] != "--load=500m" || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("container = %+v, want the burner image, its argument and pull policy Never", c)
	}
}
