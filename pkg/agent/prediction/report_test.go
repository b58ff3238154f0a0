package prediction

import (
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestProdReclaimableReport: in the cold start the NodeMetric gets zero reclaimable resources and the cold start's
// end; once warm, the prediction's resources and terms, without a cold-start end.
func TestProdReclaimableReport(t *testing.T) {
	e := newEnv(t, testOptions(), 10*time.Second)
	addSteadyPods(e)
	rng := rand.New(rand.NewPCG(3, 4))
	e.run(30*time.Minute, steady(rng))

	cold := e.srv.ProdReclaimable(e.clk.Now())
	if cold.Resource.Cpu().MilliValue() != 0 || cold.Resource.Memory().Value() != 0 {
		t.Errorf("cold: reclaimable %v, want zero", cold.Resource)
	}
	if cold.Prediction == nil || cold.Prediction.ColdStartUntil == nil ||
		!cold.Prediction.ColdStartUntil.Time.Equal(t0.Add(time.Minute).Add(time.Hour)) {
		t.Fatalf("cold: prediction %+v, want the cold start to end an hour after the first training round", cold.Prediction)
	}
	if got := cold.Prediction.ProdRequest[corev1.ResourceCPU]; got.MilliValue() != 4000 {
		t.Errorf("cold: prodRequest cpu %s, want 4", got.String())
	}

	e.run(2*time.Hour, steady(rng))
	now := e.clk.Now()
	warm := e.srv.ProdReclaimable(now)
	p := e.srv.Prediction(now)
	if warm.Prediction.ColdStartUntil != nil || warm.Prediction.ColdPods != 0 || warm.Prediction.SafetyMarginPercent != 10 {
		t.Errorf("warm: prediction %+v, want no cold start and the 10%% margin", warm.Prediction)
	}
	if warm.Resource.Cpu().MilliValue() != p.Reclaimable.MilliCPU || warm.Resource.Memory().Value() != p.Reclaimable.MemoryBytes ||
		warm.Resource.Cpu().MilliValue() <= 0 {
		t.Errorf("warm: reported %v, want the prediction's %+v (positive)", warm.Resource, p.Reclaimable)
	}
	if got := warm.Prediction.ProdPeak[corev1.ResourceCPU]; got.MilliValue() != p.ProdPeak.MilliCPU {
		t.Errorf("warm: prodPeak cpu %s, want %dm", got.String(), p.ProdPeak.MilliCPU)
	}
}
