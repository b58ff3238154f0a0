package localcluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestWithKubeletDir points config/agent's DaemonSet, as shipped, at a local kubelet directory, and leaves the
// other documents of the stream as they were.
func TestWithKubeletDir(t *testing.T) {
	ds, err := os.ReadFile(filepath.Join("..", "..", "config", "agent", "daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const other = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\ndata:\n  a: b\n"
	out, err := withKubeletDir([]byte(other+"---\n"+string(ds)), "/var/lib/gleaner-e2e/kubelet")
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(out), "---\n")
	if len(docs) != 3 || docs[1] != other {
		t.Fatalf("documents %q; want the ConfigMap unchanged, then the DaemonSet", docs)
	}
	var got appsv1.DaemonSet
	if err := yaml.UnmarshalStrict([]byte(docs[2]), &got); err != nil {
		t.Fatal(err)
	}
	expectPodResources(t, &got, "/var/lib/gleaner-e2e/kubelet")

	// Without the agent: unchanged. The agent without the volume: an error naming it.
	if out, err := withKubeletDir([]byte(other), "/k"); err != nil || string(out) != other {
		t.Errorf("no agent: %q, %v; want the input unchanged", out, err)
	}
	bare := "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: gleaner-agent\nspec:\n  template:\n    spec:\n      containers:\n        - name: agent\n"
	if _, err := withKubeletDir([]byte(bare), "/k"); err == nil || !strings.Contains(err.Error(), `no volume "pod-resources"`) {
		t.Errorf("an agent without the volume: %v", err)
	}
}

// expectPodResources checks that ds's agent is told the kubelet directory kubelet and mounts its pod-resources
// directory from there, read-only at the same path.
func expectPodResources(t *testing.T, ds *appsv1.DaemonSet, kubelet string) {
	t.Helper()
	dir := kubelet + "/pod-resources"
	var agent *corev1.Container
	for i := range ds.Spec.Template.Spec.Containers {
		if ds.Spec.Template.Spec.Containers[i].Name == "agent" {
			agent = &ds.Spec.Template.Spec.Containers[i]
		}
	}
	if agent == nil {
		t.Fatal("no agent container")
	}
	if !slices.Contains(agent.Args, "--kubelet-root-dir="+kubelet) {
		t.Errorf("args %v lack the kubelet directory", agent.Args)
	}
	mounted := false
	for _, m := range agent.VolumeMounts {
		if m.Name == "pod-resources" {
			mounted = m.MountPath == dir && m.ReadOnly
		}
	}
	if !mounted {
		t.Errorf("mounts %+v: want pod-resources read-only at %s", agent.VolumeMounts, dir)
	}
	found := false
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.Name == "pod-resources" {
			found = v.HostPath != nil && v.HostPath.Path == dir
		}
	}
	if !found {
		t.Errorf("volumes %+v: want pod-resources from %s", ds.Spec.Template.Spec.Volumes, dir)
	}
}
