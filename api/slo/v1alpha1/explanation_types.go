package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LegacyAnnotationResourceExplanation is the Node annotation in which gleaner-manager before the NodeResourceExplanation recorded the
// derivation of the batch and mid resources, 2 to 5 KiB on every Node that every node watcher of the cluster
// received with each Node update. The derivation now lives in the node's NodeResourceExplanation; gleaner-manager
// removes this annotation from every Node it writes and no longer reads it.
const LegacyAnnotationResourceExplanation = "noderesource.gleaner.sh/explanation"

// NodeResourceExplanation is how gleaner-manager derived the batch and mid resources it last published on one node:
// every term of every calculation, the policy, and the values themselves. It is named after the node and owned by
// it. Only `kubectl glean explain` reads it: nothing watches it, so it costs the manager no memory, and the Node
// itself stays as small as the scheduler needs.
//
// gleaner-manager writes it after the node's resources, and only when it writes them, through a queue of its own
// that never holds up a Node write: it can lag behind the node or miss a write (a failure is logged, counted in
// controller_runtime_reconcile_errors_total{controller="noderesource-explanation"} and retried). Status.Resources
// carries the values it explains, so a reader compares them with the node's status.allocatable to tell.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nrexp,categories=gleaner
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.status.strategy`,description="colocation-config strategy that applied"
// +kubebuilder:printcolumn:name="Metric",type=string,JSONPath=`.status.conditions[?(@.type=="NodeMetricUsable")].reason`,description="whether the node's NodeMetric could be used when the values were published (Fresh), or why not"
// +kubebuilder:printcolumn:name="Published",type=date,JSONPath=`.status.updateTime`,description="when the explained values were published on the node"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeResourceExplanation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is empty: everything in a NodeResourceExplanation is observed.
	Spec NodeResourceExplanationSpec `json:"spec,omitempty"`
	// Status is the derivation.
	Status NodeResourceExplanationStatus `json:"status,omitempty"`
}

// NodeResourceExplanationSpec is empty; it exists so the kind has the usual shape.
type NodeResourceExplanationSpec struct{}

// NodeResourceExplanationList is a list of NodeResourceExplanation.
//
// +kubebuilder:object:root=true
type NodeResourceExplanationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeResourceExplanation `json:"items"`
}

// NodeResourceExplanationStatus is the derivation of every reclaimed resource gleaner-manager publishes on a node.
type NodeResourceExplanationStatus struct {
	// UpdateTime is when these values were published on the node.
	UpdateTime metav1.Time `json:"updateTime"`
	// Strategy says which colocation-config strategy applied to the node: "cluster", or "nodeConfigs NAME" for the
	// node override whose selector matched.
	// +optional
	Strategy string `json:"strategy,omitempty"`
	// Resources has one derivation per published (or removed) resource, in plugin order.
	// +optional
	Resources []ResourceDerivation `json:"resources,omitempty"`
	// Annotations explain the node annotations gleaner-manager sets besides the resources (the CPU normalization
	// and resource amplification ratios), in plugin order.
	// +optional
	Annotations []AnnotationDerivation `json:"annotations,omitempty"`
	// Conditions describe the inputs of the derivation at UpdateTime: NodeMetricUsable, whether the node's
	// NodeMetric could be used (reason Fresh) or not (Missing, NoUsage, Stale, AheadOfClock: the batch and mid
	// resources were then removed where colocation is on). They are written with the derivation, so they are as
	// of UpdateTime, not of now: a report that goes stale while the node publishes nothing new (colocation off)
	// shows here at the next publication. Its lastTransitionTime is kept across the manager's restarts.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeMetricUsable is the NodeResourceExplanationStatus condition that says whether the node's NodeMetric could be
// used when the explained values were published; its reasons are NodeMetricUsability's (ReasonNodeMetric...).
const NodeMetricUsable = "NodeMetricUsable"

// AnnotationKeptPrefix starts the Reason of an AnnotationDerivation whose plugin failed: the annotation was left on
// the node as it was, whatever it is, and the rest of the Reason is the error.
const AnnotationKeptPrefix = "left as it is: "

// AnnotationDerivation explains one node annotation: its value and where it came from, or why it was removed or
// left as it was.
type AnnotationDerivation struct {
	// Annotation is the annotation's key, such as node.koordinator.sh/cpu-normalization-ratio.
	Annotation string `json:"annotation"`
	// Plugin is the node-resource plugin that owns it.
	Plugin string `json:"plugin"`
	// Value is what was set; nil when the annotation was removed, or left as it was after an error (Reason says).
	// +optional
	Value *string `json:"value,omitempty"`
	// Source names the configuration the value came from, such as "cpu-normalization-config: nodeConfigs old", or the
	// node label that decided.
	// +optional
	Source string `json:"source,omitempty"`
	// Reason says how the value came about ("ratioModel[MODEL].hyperThreadTurboEnabledRatio: hyper-threading on,
	// turbo on"), or why the annotation was removed or left as it was.
	// +optional
	Reason string `json:"reason,omitempty"`
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
