package localcluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The local kubelet's --root-dir is under the cluster's state directory, not /var/lib/kubelet, and config/default
// (like the chart's default) mounts the kubelet's pod-resources directory from /var/lib/kubelet. Apply points the
// agent at this cluster's kubelet instead, as an operator whose kubelet has another --root-dir would: the flag
// --kubelet-root-dir and the pod-resources volume, both set to the layout's kubelet directory, so the agent runs
// with exactly config/default's mounts and privileges against the real kubelet. InstallChart does the same with the
// chart's value agent.flags.kubelet-root-dir.
const (
	agentDaemonSet      = "gleaner-agent"
	podResourcesVolume  = "pod-resources"
	kubeletRootDirFlag  = "--kubelet-root-dir"
	podResourcesSubpath = "pod-resources"
)

// withKubeletDir returns the rendered manifests with the agent's DaemonSet pointed at kubeletDir; every other
// document is passed through as it was. Manifests without the agent come back unchanged.
func withKubeletDir(rendered []byte, kubeletDir string) ([]byte, error) {
	if !bytes.Contains(rendered, []byte("name: "+agentDaemonSet)) {
		return rendered, nil
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(rendered)))
	var out bytes.Buffer
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out.Bytes(), nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the rendered manifests: %w", err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("decoding a rendered manifest: %w", err)
		}
		if u.GetKind() == "DaemonSet" && u.GetName() == agentDaemonSet {
			if err := pointAtKubelet(u, kubeletDir); err != nil {
				return nil, err
			}
			if doc, err = yaml.Marshal(u.Object); err != nil {
				return nil, fmt.Errorf("encoding the agent's DaemonSet: %w", err)
			}
		}
		out.WriteString("---\n")
		out.Write(doc)
		if !bytes.HasSuffix(doc, []byte("\n")) {
			out.WriteByte('\n')
		}
	}
}

// pointAtKubelet sets the agent container's --kubelet-root-dir and the pod-resources volume and mount.
func pointAtKubelet(ds *unstructured.Unstructured, kubeletDir string) error {
	dir := filepath.Join(kubeletDir, podResourcesSubpath)
	spec, _, _ := unstructured.NestedMap(ds.Object, "spec", "template", "spec")
	volumes, _, _ := unstructured.NestedSlice(spec, "volumes")
	found := false
	for _, v := range volumes {
		if m, ok := v.(map[string]any); ok && m["name"] == podResourcesVolume {
			if err := unstructured.SetNestedField(m, dir, "hostPath", "path"); err != nil {
				return err
			}
			found = true
		}
	}
	if !found {
		return fmt.Errorf("DaemonSet %s has no volume %q to point at the local kubelet", agentDaemonSet, podResourcesVolume)
	}
	containers, _, _ := unstructured.NestedSlice(spec, "containers")
	for _, c := range containers {
		m, ok := c.(map[string]any)
		if !ok || m["name"] != "agent" {
			continue
		}
		args, _, _ := unstructured.NestedStringSlice(m, "args")
		if err := unstructured.SetNestedStringSlice(m, append(args, kubeletRootDirFlag+"="+kubeletDir), "args"); err != nil {
			return err
		}
		mounts, _, _ := unstructured.NestedSlice(m, "volumeMounts")
		for _, mt := range mounts {
			if mm, ok := mt.(map[string]any); ok && mm["name"] == podResourcesVolume {
				mm["mountPath"] = dir
			}
		}
		if err := unstructured.SetNestedSlice(m, mounts, "volumeMounts"); err != nil {
			return err
		}
	}
	if err := unstructured.SetNestedSlice(spec, volumes, "volumes"); err != nil {
		return err
	}
	if err := unstructured.SetNestedSlice(spec, containers, "containers"); err != nil {
		return err
	}
	return unstructured.SetNestedMap(ds.Object, spec, "spec", "template", "spec")
}
