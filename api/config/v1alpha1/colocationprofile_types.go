package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// ColocationProfile makes the pods it selects batch pods when they are created. gleaner-manager's mutating
// admission webhook (pkg/webhook/colocationprofile) gives a selected pod the QoS class label, the batch-band
// priority class, the scheduler name, labels and annotations of the profile, and moves every container's cpu and
// memory requests and limits to kubernetes.io/batch-cpu (millicores) and kubernetes.io/batch-memory (bytes). A job
// owner then only labels the namespace; the pod templates stay as written.
//
// Profiles are read at pod creation only: changing or deleting a profile never touches running pods. When several
// profiles select a pod, the first by name decides (its probability included); the others are not applied.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cprof,categories=gleaner
// +kubebuilder:printcolumn:name="Probability",type=integer,JSONPath=`.spec.probability`
// +kubebuilder:printcolumn:name="QoS",type=string,JSONPath=`.spec.qosClass`
// +kubebuilder:printcolumn:name="PriorityClass",type=string,JSONPath=`.spec.priorityClassName`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ColocationProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which pods the profile selects and what it makes of them.
	Spec ColocationProfileSpec `json:"spec"`
}

// ColocationProfileSpec selects pods and says what they become. A pod is selected when its namespace matches
// NamespaceSelector and its own labels match Selector (an absent selector matches everything; at least one must be
// given), and then with Probability.
//
// +kubebuilder:validation:XValidation:rule="has(self.namespaceSelector) || has(self.selector)",message="set namespaceSelector, selector or both: a profile without either would select every pod of the cluster"
type ColocationProfileSpec struct {
	// NamespaceSelector selects the namespaces whose pods the profile considers, by the namespaces' labels. Absent
	// means every namespace (but kube-system, kube-public, kube-node-lease and the namespace Gleaner runs in, which
	// the webhook never sees); an empty selector ({}) matches every namespace too.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// Selector selects pods by their labels. Absent means every pod of the selected namespaces.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Probability is the percentage of the selected pods the profile applies to, 0 to 100; absent means 100. The
	// choice is a hash of the profile's name, the namespace and the pod's name, so a pod created again under the
	// same name gets the same answer; a pod whose name the API server generates later (generateName, as the pods of
	// a Deployment or Job) is hashed by its admission request's UID instead, which splits a workload's pods as the
	// percentage says.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Probability *int32 `json:"probability,omitempty"`

	// QoSClass is the Gleaner QoS class the pods get, as the label gleaner.sh/qos-class (and koordinator.sh/qosClass
	// where the pod already carries that one, so both agree). Only BE today: a pod on batch resources is
	// best-effort.
	// +optional
	// +kubebuilder:default=BE
	// +kubebuilder:validation:XValidation:rule="self == 'BE'",message="only BE: a pod on batch resources is best-effort"
	QoSClass slov1alpha1.QoSClass `json:"qosClass,omitempty"`

	// PriorityClassName is the PriorityClass the pods get; its value must be in the batch band (5000-5999), such as
	// config/priorityclasses' gleaner-batch. The webhook also sets spec.priority and spec.preemptionPolicy from it,
	// as the API server's Priority admission plugin would. A class that does not exist or lies outside the band
	// leaves the pod unchanged, with a warning.
	// +optional
	// +kubebuilder:default=gleaner-batch
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// SchedulerName, when set, replaces the pods' spec.schedulerName.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SchedulerName string `json:"schedulerName,omitempty"`

	// Labels are added to the pods, replacing a label of the same key. They may not set the QoS or priority-class
	// labels, which the profile sets itself.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="!self.exists(k, k in ['gleaner.sh/qos-class', 'koordinator.sh/qosClass', 'gleaner.sh/priority-class', 'koordinator.sh/priority-class'])",message="the QoS and priority-class labels are set from qosClass and priorityClassName, not from labels"
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are added to the pods, replacing an annotation of the same key.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ColocationProfileList is a list of ColocationProfiles.
//
// +kubebuilder:object:root=true
type ColocationProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the profiles.
	Items []ColocationProfile `json:"items"`
}

// DefaultPriorityClassName is the priority class a profile gives when it names none: config/priorityclasses'
// batch class.
const DefaultPriorityClassName = "gleaner-batch"

// DefaultProbability is the percentage of selected pods a profile applies to when it sets no probability.
const DefaultProbability = 100
