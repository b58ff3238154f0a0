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
// Every pod the webhook makes a batch pod carries the label LabelColocationProfile with the profile's name, which is
// why a profile's name is at most 63 characters (a label value). gleaner-manager's colocationprofile controller
// counts those pods into the status, and says there whether the webhook can apply the profile at all.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cprof,categories=gleaner
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.matchedPods`
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Valid")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Valid")].message`
// +kubebuilder:printcolumn:name="Probability",type=integer,JSONPath=`.spec.probability`
// +kubebuilder:printcolumn:name="QoS",type=string,JSONPath=`.spec.qosClass`
// +kubebuilder:printcolumn:name="PriorityClass",type=string,JSONPath=`.spec.priorityClassName`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || size(self.metadata.name) <= 63",optionalOldSelf=true,message="a profile's name is at most 63 characters: the pods it makes batch pods carry it as the value of the label gleaner.sh/colocation-profile"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.labels) || !('gleaner.sh/colocation-profile' in self.spec.labels) || self.spec.labels['gleaner.sh/colocation-profile'] == self.metadata.name",message="spec.labels may set gleaner.sh/colocation-profile only to the profile's own name, which the webhook sets anyway"
type ColocationProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which pods the profile selects and what it makes of them.
	Spec ColocationProfileSpec `json:"spec"`

	// Status is what gleaner-manager observes of the profile: the pods it applies to now and whether the webhook
	// can apply it.
	// +optional
	Status ColocationProfileStatus `json:"status,omitempty"`
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
	// labels, which the profile sets itself, nor LabelColocationProfile to anything but the profile's name.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="!self.exists(k, k in ['gleaner.sh/qos-class', 'koordinator.sh/qosClass', 'gleaner.sh/priority-class', 'koordinator.sh/priority-class'])",message="the QoS and priority-class labels are set from qosClass and priorityClassName, not from labels"
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are added to the pods, replacing an annotation of the same key.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ColocationProfileStatus is what gleaner-manager's colocationprofile controller observes of a profile. Only that
// controller writes it; the webhook never does (it runs at every pod creation, on every replica).
type ColocationProfileStatus struct {
	// ObservedGeneration is the metadata.generation of the spec the conditions describe. 0 until the controller
	// has looked at the profile.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// MatchedPods is the number of pods the profile applies to now: the pods that carry LabelColocationProfile with
	// the profile's name (the webhook sets it on every pod it makes a batch pod) and have not finished (phase
	// neither Succeeded nor Failed), bound to a node or still waiting for one. Pods it selected but left unchanged
	// (not sampled, or not translatable) are not among them; gleaner_colocation_profile_pods_total counts those.
	// +optional
	MatchedPods int32 `json:"matchedPods"`
	// Conditions hold ColocationProfileValid: True when the webhook can apply the profile, False with a reason
	// (ColocationProfileReason...) and a message saying what stops it (a selector that does not parse, a priority
	// class that does not exist or lies outside the batch band, labels or annotations the API server would refuse).
	// A pod that cannot be translated on its own account (pod-level resources, say) does not make the profile
	// invalid: that is a Warning event on the profile.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ColocationProfileValid is the condition type of ColocationProfileStatus that says whether the webhook can apply
// the profile.
const ColocationProfileValid = "Valid"

// The reasons of the ColocationProfileValid condition.
const (
	// ColocationProfileReasonValid: the webhook can apply the profile (status True).
	ColocationProfileReasonValid = "Valid"
	// ColocationProfileReasonInvalidSelector: selector or namespaceSelector does not parse (an operator the schema
	// cannot check, say In without values); the profile selects no pod.
	ColocationProfileReasonInvalidSelector = "InvalidSelector"
	// ColocationProfileReasonPriorityClassNotFound: the priority class the profile names does not exist; every pod
	// it selects is admitted unchanged.
	ColocationProfileReasonPriorityClassNotFound = "PriorityClassNotFound"
	// ColocationProfileReasonPriorityClassNotBatch: the priority class's value lies outside the batch band
	// 5000-5999; every pod it selects is admitted unchanged.
	ColocationProfileReasonPriorityClassNotBatch = "PriorityClassNotBatch"
	// ColocationProfileReasonInvalidMetadata: a label or annotation of the profile, or its name as the value of
	// LabelColocationProfile, would be refused by the API server; every pod it selects is admitted unchanged.
	ColocationProfileReasonInvalidMetadata = "InvalidMetadata"
)

// LabelColocationProfile is the pod label the webhook sets, to the profile's name, on every pod a profile makes a
// batch pod, replacing a value the pod had. The status counts pods by it (ColocationProfileStatus.MatchedPods), and
// `kubectl get pods -l gleaner.sh/colocation-profile=NAME` lists them. Pods created before Gleaner set it, and pods
// the webhook never saw (created while no manager answered), do not carry it.
const LabelColocationProfile = "gleaner.sh/colocation-profile"

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
