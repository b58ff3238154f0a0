package qosmanager

import (
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// ClassQOS is the QoS one class of pods gets from the NodeSLO's resourceQOSStrategy.
type ClassQOS struct {
	// Field is the class's path in the NodeSLO spec, for messages: "resourceQOSStrategy.beClass".
	Field string
	// Class is the Gleaner QoS class the entry is named after (LSR also covers LSE).
	Class slov1alpha1.QoSClass
	// QOS is the class's settings; nil when the strategy leaves the class out.
	QOS *slov1alpha1.ResourceQOS
}

// ResourceQOSClasses lists the classes of s in the order LSR, LS, BE, SYSTEM; s may be nil (every QOS nil).
func ResourceQOSClasses(s *slov1alpha1.ResourceQOSStrategy) []ClassQOS {
	if s == nil {
		s = &slov1alpha1.ResourceQOSStrategy{}
	}
	const f = "resourceQOSStrategy."
	return []ClassQOS{
		{Field: f + "lsrClass", Class: slov1alpha1.QoSLSR, QOS: s.LSRClass},
		{Field: f + "lsClass", Class: slov1alpha1.QoSLS, QOS: s.LSClass},
		{Field: f + "beClass", Class: slov1alpha1.QoSBE, QOS: s.BEClass},
		{Field: f + "systemClass", Class: slov1alpha1.QoSSystem, QOS: s.SystemClass},
	}
}

// ResourceQOSOf is the entry of s that applies to pods of Gleaner QoS class q: lsrClass for LSE (which the
// strategy has no entry of its own for) and LSR, lsClass, beClass, systemClass. It is nil when s or the entry is
// nil, or q is no class.
func ResourceQOSOf(s *slov1alpha1.ResourceQOSStrategy, q slov1alpha1.QoSClass) *slov1alpha1.ResourceQOS {
	if s == nil {
		return nil
	}
	switch q {
	case slov1alpha1.QoSLSE, slov1alpha1.QoSLSR:
		return s.LSRClass
	case slov1alpha1.QoSLS:
		return s.LSClass
	case slov1alpha1.QoSBE:
		return s.BEClass
	case slov1alpha1.QoSSystem:
		return s.SystemClass
	}
	return nil
}
