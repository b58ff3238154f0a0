package v1alpha1

import "k8s.io/apimachinery/pkg/api/resource"

// MaxReportedGPUs is the most GPUs a NodeMetric lists (the agent's --gpu-max-devices is at most this).
const MaxReportedGPUs = 64

// GPUMetricInfo is one GPU of the node and its usage, as the agent's gpu collector reads it through NVML.
type GPUMetricInfo struct {
	// Index is the GPU's NVML index on the node.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=63
	Index int32 `json:"index"`
	// UUID is the GPU's UUID ("GPU-8f6b...").
	// +kubebuilder:validation:MaxLength=128
	UUID string `json:"uuid"`
	// Model is the GPU's product name ("NVIDIA H100 80GB HBM3").
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Model string `json:"model,omitempty"`
	// MemoryTotal is the GPU's memory.
	// +optional
	MemoryTotal *resource.Quantity `json:"memoryTotal,omitempty"`
	// MemoryUsed is the GPU's memory in use, averaged over the aggregate duration.
	// +optional
	MemoryUsed *resource.Quantity `json:"memoryUsed,omitempty"`
	// UtilizationPercent is the share of time a kernel ran on the GPU, averaged over the aggregate duration.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	UtilizationPercent *int32 `json:"utilizationPercent,omitempty"`
}

// PodGPUUsage is what a pod's processes use of the node's GPUs, averaged over the aggregate duration.
type PodGPUUsage struct {
	// MemoryUsed is the GPU memory of the pod's processes, over all GPUs.
	// +optional
	MemoryUsed *resource.Quantity `json:"memoryUsed,omitempty"`
	// UtilizationPercent is the share of streaming multiprocessors the pod's processes used, summed over GPUs:
	// 100 is one whole GPU.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=6400
	// +optional
	UtilizationPercent int32 `json:"utilizationPercent,omitempty"`
}
