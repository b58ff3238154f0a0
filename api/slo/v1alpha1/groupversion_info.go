package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of every kind in this package.
var GroupVersion = schema.GroupVersion{Group: "slo.gleaner.sh", Version: "v1alpha1"}

var schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

// AddToScheme adds this package's kinds to a runtime.Scheme.
var AddToScheme = schemeBuilder.AddToScheme

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&NodeAllocation{}, &NodeAllocationList{},
		&NodeSLO{}, &NodeSLOList{},
		&NodeMetric{}, &NodeMetricList{},
		&NodeResourceExplanation{}, &NodeResourceExplanationList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
