package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeAllocation is the "Allocated resources" summary of one node: what the pods bound to it request and limit, as
// `kubectl describe node` computes it, kept current by gleaner-manager. It is named after the node and owned by it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nalloc,categories=gleaner
// +kubebuilder:printcolumn:name="CPU Req%",type=integer,JSONPath=`.status.requestsPercent.cpu`,description="CPU requests, percent of allocatable"
// +kubebuilder:printcolumn:name="CPU Lim%",type=integer,JSONPath=`.status.limitsPercent.cpu`,description="CPU limits, percent of allocatable"
// +kubebuilder:printcolumn:name="Mem Req%",type=integer,JSONPath=`.status.requestsPercent.memory`,description="memory requests, percent of allocatable"
// +kubebuilder:printcolumn:name="Mem Lim%",type=integer,JSONPath=`.status.limitsPercent.memory`,description="memory limits, percent of allocatable"
// +kubebuilder:printcolumn:name="Pods",type=integer,JSONPath=`.status.podCount`,description="pods counted"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeAllocation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is empty: everything in a NodeAllocation is observed.
	Spec NodeAllocationSpec `json:"spec,omitempty"`
	// Status is the node's allocation summary.
	Status NodeAllocationStatus `json:"status,omitempty"`
}

// NodeAllocationSpec is empty; it exists so the kind has the usual shape and can grow settings later.
type NodeAllocationSpec struct{}

// NodeAllocationStatus is the allocation summary of a node.
//
// Which pods count: every pod bound to the node (spec.nodeName) whose phase is neither Succeeded nor Failed,
// terminating pods included. A pod's requests and limits follow the Kubernetes rules (largest init container,
// restartable sidecars, overhead, pod-level resources, in-place resize).
type NodeAllocationStatus struct {
	// Allocatable is the node's status.allocatable, or status.capacity when allocatable is empty: the denominator of
	// the percentages.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`

	// Requests is the sum of the counted pods' requests: for cpu, memory and ephemeral-storage always, for every
	// other resource the node offers except pods (PodCount counts those), and for every resource a pod requests.
	// A resource no pod requests appears with quantity 0.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`

	// Limits is the sum of the counted pods' limits, for the same resources as Requests. A pod without a limit adds
	// nothing, so the total can be lower than Requests.
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`

	// RequestsPercent is Requests as a percentage of Allocatable, truncated to a whole number the way
	// `kubectl describe node` prints it. Only resources with a non-zero allocatable appear.
	// +optional
	RequestsPercent map[corev1.ResourceName]int64 `json:"requestsPercent,omitempty"`

	// LimitsPercent is Limits as a percentage of Allocatable, truncated like RequestsPercent. It may exceed 100 when
	// the node is overcommitted.
	// +optional
	LimitsPercent map[corev1.ResourceName]int64 `json:"limitsPercent,omitempty"`

	// PodCount is the number of pods counted.
	// +optional
	PodCount int32 `json:"podCount"`

	// UpdateTime is when the summary last changed.
	// +optional
	UpdateTime *metav1.Time `json:"updateTime,omitempty"`
}

// NodeAllocationList is a list of NodeAllocation.
//
// +kubebuilder:object:root=true
type NodeAllocationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeAllocation `json:"items"`
}
