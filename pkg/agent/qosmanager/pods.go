package qosmanager

import (
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

// IsBestEffort reports whether a pod is best-effort: the only kind QoS plugins suppress or evict. A pod is when its
// QoS class is BE or its priority is in the batch or free band.
func IsBestEffort(m *statesinformer.PodMeta) bool {
	return m.QoS == slov1alpha1.QoSBE || m.Priority == slov1alpha1.PriorityBatch || m.Priority == slov1alpha1.PriorityFree
}
