package v1alpha1

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet's resource managers, as gleaner-agent reads them from the kubelet and publishes them on the node's
// NodeResourceTopology. gleaner-manager reads them to leave alone what the kubelet admits against real CPUs and
// bytes: a node's allocatable cpu is never amplified under the static CPU manager, nor its memory under the Static
// memory manager (docs/qos.md, "Resource amplification and the kubelet"). The CPU key and its JSON are
// Koordinator's, so koord-scheduler reads it unchanged; Koordinator publishes nothing about the memory manager.
const (
	// AnnotationKubeletCPUManagerPolicy, on a NodeResourceTopology, is the kubelet's CPU manager policy as JSON:
	// {"policy":"static"} or {"policy":"none"}.
	AnnotationKubeletCPUManagerPolicy = "kubelet.koordinator.sh/cpu-manager-policy"
	// AnnotationKubeletMemoryManagerPolicy, on a NodeResourceTopology, is the kubelet's memory manager policy as
	// JSON: {"policy":"Static"} or {"policy":"None"} (the kubelet's own spellings).
	AnnotationKubeletMemoryManagerPolicy = "gleaner.sh/kubelet-memory-manager-policy"
)

// The policies, spelled as the kubelet's configuration spells them.
const (
	KubeletCPUManagerPolicyNone      = "none"
	KubeletCPUManagerPolicyStatic    = "static"
	KubeletMemoryManagerPolicyNone   = "None"
	KubeletMemoryManagerPolicyStatic = "Static"
)

// KubeletResourceManagers are the kubelet's CPU and memory manager policies; "" is not known.
//
// +kubebuilder:object:generate=false
type KubeletResourceManagers struct {
	CPUManagerPolicy    string
	MemoryManagerPolicy string
}

// kubeletManagerPolicy is the JSON of both annotations.
type kubeletManagerPolicy struct {
	Policy string `json:"policy"`
}

// Annotations are the two annotations of m; a policy not known has none.
func (m KubeletResourceManagers) Annotations() map[string]string {
	out := map[string]string{}
	for key, policy := range map[string]string{AnnotationKubeletCPUManagerPolicy: m.CPUManagerPolicy, AnnotationKubeletMemoryManagerPolicy: m.MemoryManagerPolicy} {
		if policy == "" {
			continue
		}
		b, err := json.Marshal(kubeletManagerPolicy{Policy: policy})
		if err != nil {
			panic(fmt.Sprintf("encoding a kubelet manager policy: %v", err)) // a string always encodes
		}
		out[key] = string(b)
	}
	return out
}

// KubeletResourceManagersOf reads the policies from a NodeResourceTopology's annotations; a policy whose annotation
// is absent is "".
func KubeletResourceManagersOf(annotations map[string]string) (KubeletResourceManagers, error) {
	var m KubeletResourceManagers
	for key, policy := range map[string]*string{AnnotationKubeletCPUManagerPolicy: &m.CPUManagerPolicy, AnnotationKubeletMemoryManagerPolicy: &m.MemoryManagerPolicy} {
		s, ok := annotations[key]
		if !ok {
			continue
		}
		var p kubeletManagerPolicy
		if err := json.Unmarshal([]byte(s), &p); err != nil {
			return KubeletResourceManagers{}, fmt.Errorf("parsing annotation %s: %w", key, err)
		}
		*policy = p.Policy
	}
	return m, nil
}

// Exclusive says whether the kubelet admits r against the node's real capacity (its static CPU manager for cpu, its
// Static memory manager for memory), so that an amplified allocatable of r would let the scheduler place pods the
// kubelet then refuses.
func (m KubeletResourceManagers) Exclusive(r corev1.ResourceName) bool {
	switch r {
	case corev1.ResourceCPU:
		return m.CPUManagerPolicy == KubeletCPUManagerPolicyStatic
	case corev1.ResourceMemory:
		return m.MemoryManagerPolicy == KubeletMemoryManagerPolicyStatic
	}
	return false
}
