package qosmanager

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/slostatus"
)

// record keeps what the NodeSLO's status says of r after a Run with spec that returned err; r.mu is held, so
// that the plugin's own fields are read between its runs.
func (r *running) record(spec *slov1alpha1.NodeSLOSpec, err error) {
	var asks bool
	if rp, ok := r.p.(ReportingPlugin); ok {
		asks = rp.Asks(spec)
	}
	var aside string
	if sa, ok := r.p.(SteppingAside); ok {
		aside = sa.Unsupported()
	}
	var generation int64
	if r.seen != nil {
		generation = r.seen.Generation
	}
	r.cond.Lock()
	defer r.cond.Unlock()
	r.ran, r.err, r.asks, r.aside, r.refusal, r.generation = true, err, asks, aside, r.refused, generation
}

// NodeSLOConditions implements slostatus.QoS: for each enabled plugin with a condition whose strategy the spec of
// its last run turns on (or that refused the NodeSLO), in registry order, True when that run applied it; False when
// the plugin refused the NodeSLO, stepped aside (the node lacks the feature) or failed (the kind of failure is the
// reason: a privilege, the kernel, anything else); Unknown before its first run, when the node's spec now turns
// it on. The generation is the oldest of the NodeSLOs the plugins last ran with: 0 until every plugin has run.
func (m *Manager) NodeSLOConditions() ([]metav1.Condition, int64) {
	var conds []metav1.Condition
	generation := int64(-1) // the oldest so far
	for _, r := range m.running {
		r.cond.Lock()
		ran, err, asks, aside, refusal, gen := r.ran, r.err, r.asks, r.aside, r.refusal, r.generation
		r.cond.Unlock()
		if !ran {
			gen = 0
		}
		if generation < 0 || gen < generation {
			generation = gen
		}
		rp, reports := r.p.(ReportingPlugin)
		if !reports || r.condition == "" {
			continue
		}
		switch {
		case !ran:
			if rp.Asks(m.currentSpec()) {
				conds = append(conds, metav1.Condition{Type: r.condition, Status: metav1.ConditionUnknown, Reason: slov1alpha1.NodeSLOReasonPending,
					Message: "QoS plugin " + r.name + " has not run yet"})
			}
		case refusal != "":
			conds = append(conds, metav1.Condition{Type: r.condition, Status: metav1.ConditionFalse, Reason: slov1alpha1.NodeSLOReasonRefused,
				Message: "QoS plugin " + r.name + " refused this NodeSLO and enforces the last one it accepted: " + refusal})
		case !asks:
		case err != nil:
			conds = append(conds, slostatus.Failure(r.condition, err))
		case aside != "":
			conds = append(conds, metav1.Condition{Type: r.condition, Status: metav1.ConditionFalse, Reason: slov1alpha1.NodeSLOReasonUnsupported, Message: aside})
		default:
			conds = append(conds, metav1.Condition{Type: r.condition, Status: metav1.ConditionTrue, Reason: slov1alpha1.NodeSLOReasonApplied,
				Message: "QoS plugin " + r.name + " applies it"})
		}
	}
	return conds, max(generation, 0)
}

// currentSpec is the node's NodeSLO spec now, defaults filled in.
func (m *Manager) currentSpec() *slov1alpha1.NodeSLOSpec {
	var spec *slov1alpha1.NodeSLOSpec
	if slo := m.deps.States.GetNodeSLO(); slo != nil {
		spec = &slo.Spec
	}
	return spec.WithDefaults()
}
