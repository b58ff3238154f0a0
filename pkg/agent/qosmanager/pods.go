package qosmanager

import (
	"github.com/gleaner-sh/gleaner/pkg/agent/evictor"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

// IsBestEffort reports whether a pod is best-effort: the only kind QoS plugins suppress or evict. It is the evictor's
// own test (evictor.BestEffortClass) on the class PodMeta computed, so a plugin never picks a pod the evictor refuses.
func IsBestEffort(m *statesinformer.PodMeta) bool {
	return evictor.BestEffortClass(m.Pod, m.QoS, m.Priority)
}
