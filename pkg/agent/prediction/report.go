package prediction

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// ProdReclaimable is the prediction at now as the NodeMetric reports it (reporter.Predictor): the reclaimable
// resources and the terms they came from. While the node's models are in their cold start it reports zero
// reclaimable resources and when that ends, so that the manager shows why mid-* is empty instead of "no report".
func (s *Server) ProdReclaimable(now time.Time) *slov1alpha1.ReclaimableMetric {
	p := s.Prediction(now)
	info := &slov1alpha1.ReclaimablePrediction{
		ProdRequest:         p.ProdRequest.List(),
		ProdPeak:            p.ProdPeak.List(),
		SystemPeak:          p.SystemPeak.List(),
		SafetyMarginPercent: s.opts.SafetyMarginPercent,
		ColdPods:            int32(min(p.ColdPods, 1<<30)),
	}
	if !p.Warm {
		until := now.Add(s.opts.ColdStart)
		if !p.Since.IsZero() {
			until = p.Since.Add(s.opts.ColdStart)
		}
		info.ColdStartUntil = &metav1.Time{Time: until.Truncate(time.Second)}
	}
	return &slov1alpha1.ReclaimableMetric{Resource: p.Reclaimable.List(), Prediction: info}
}
