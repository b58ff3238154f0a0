package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationResourceExplanation is the Node annotation in which gleaner-manager records how it derived the batch
// and mid resources it published on the node, as JSON-encoded NodeResourceExplanation. It is written in the same
// request as the resources themselves, so the numbers in it are always those on the node.
const AnnotationResourceExplanation = "noderesource.gleaner.sh/explanation"

// NodeResourceExplanation is the derivation of every reclaimed resource gleaner-manager publishes on a node.
//
// +kubebuilder:object:generate=true
type NodeResourceExplanation struct {
	// UpdateTime is when these values were published on the node.
	UpdateTime metav1.Time `json:"updateTime"`
	// Strategy says which colocation-config strategy applied to the node: "cluster", or "nodeConfigs NAME" for the
	// node override whose selector matched.
	// +optional
	Strategy string `json:"strategy,omitempty"`
	// Resources has one derivation per published (or removed) resource, in plugin order.
	Resources []ResourceDerivation `json:"resources,omitempty"`
}

// ResourceDerivation explains one resource: either the terms that add up to its value, or why it was removed.
type ResourceDerivation struct {
	// Resource is the resource name, such as kubernetes.io/batch-cpu.
	Resource corev1.ResourceName `json:"resource"`
	// Plugin is the node-resource plugin that calculated it.
	Plugin string `json:"plugin"`
	// Value is what was published; nil when the resource was removed.
	// +optional
	Value *resource.Quantity `json:"value,omitempty"`
	// Reason says why the resource was removed (colocation disabled, metric missing or stale, ...).
	// +optional
	Reason string `json:"reason,omitempty"`
	// Formula is the calculation in words, such as "capacity - safetyMargin - systemUsed - hpUsed".
	// +optional
	Formula string `json:"formula,omitempty"`
	// Terms are the inputs and intermediate results, in the order the formula uses them.
	// +optional
	Terms []DerivationTerm `json:"terms,omitempty"`
	// Zones are the per-NUMA-zone values, when the node has a NodeResourceTopology.
	// +optional
	Zones map[string]resource.Quantity `json:"zones,omitempty"`
	// MetricTime is the update time of the NodeMetric the calculation used.
	// +optional
	MetricTime *metav1.Time `json:"metricTime,omitempty"`
	// Warnings say what the calculation could not take as reported, such as NodeMetric quantities outside
	// [0, node capacity] that it clamped.
	// +optional
	Warnings []string `json:"warnings,omitempty"`
}

// DerivationTerm is one named quantity of a derivation.
type DerivationTerm struct {
	// Name identifies the term, such as capacity, safetyMargin or hpUsed. It is also the `term` label of the
	// gleaner_noderesource_term Prometheus gauge.
	Name string `json:"name"`
	// Value is the quantity, in the unit of the resource (millicores for CPU, bytes for memory).
	Value resource.Quantity `json:"value"`
	// Detail says where the value comes from, in a few words.
	// +optional
	Detail string `json:"detail,omitempty"`
}
