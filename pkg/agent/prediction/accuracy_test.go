package prediction

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
)

// TestAccuracyDiurnal replays five simulated days of a diurnal CPU and memory pattern with noise, one sample per
// collector step (1 s), through the real training path (metric cache, Train every minute, fake clock). After the
// one-day cold start, every simulated hour it compares the predicted p95 CPU and p98 memory of the prod band (margin
// not applied) with the true percentile of the samples replayed in the trailing 24 hours: one daily cycle, the
// window an operator reads a "daily peak" from. The prediction must be within 10 % and under the truth on at most
// 5 % of the evaluated hours.
//
// Where the true percentile falls within a 5 % histogram bucket decides whether a small bias shows, so the workload
// is replayed at four base levels spanning two buckets.
func TestAccuracyDiurnal(t *testing.T) {
	for _, base := range []float64{1.0, 1.1, 1.2, 1.3} {
		t.Run(fmt.Sprintf("base %.1f cores", base), func(t *testing.T) {
			t.Parallel()
			testAccuracy(t, base)
		})
	}
}

func testAccuracy(t *testing.T, base float64) {
	const (
		days     = 5
		step     = time.Second
		window   = 24 * time.Hour
		maxError = 0.10
		maxUnder = 0.05
	)
	o := DefaultOptions() // ColdStart 24 h: the evaluation starts after the first simulated day
	e := newEnv(t, o, step)
	e.states.SetPod(prodPod("web", "4", "8Gi"))
	rng := rand.New(rand.NewPCG(16, 2026))

	n := int(days * 24 * time.Hour / step)
	cpu, mem := make([]float64, 0, n), make([]float64, 0, n)
	diurnal := func(t time.Time) float64 { return math.Sin(2 * math.Pi * float64(t.Sub(t0)) / float64(24*time.Hour)) }
	u := func(t time.Time) []metriccache.Sample {
		// CPU: base ± 0.6 cores over the day, a second harmonic for an asymmetric day, 10 % noise.
		d := diurnal(t)
		c := max(base+0.6*d+0.15*math.Sin(4*math.Pi*float64(t.Sub(t0))/float64(24*time.Hour))+0.12*rng.NormFloat64(), 0)
		// Memory: 4 GiB ± 1 GiB over the day, 64 MiB noise.
		m := 4*gib + 1*gib*d + 64<<20*rng.NormFloat64()
		cpu, mem = append(cpu, c), append(mem, m)
		return podSamples("uid-web", c, m)
	}

	type eval struct {
		hour                         int
		predCPU, trueCPU             float64
		predMem, trueMem             float64
		errCPU, errMem               float64
		underCPU, underMem, warmSeen bool
	}
	var evals []eval
	for h := 1; h <= days*24; h++ {
		e.run(time.Hour, u)
		if h <= 24 {
			continue
		}
		p := e.srv.Prediction(e.clk.Now())
		last := len(cpu)
		first := last - int(window/step)
		trueCPU := percentile(cpu[first:last], 0.95)
		trueMem := percentile(mem[first:last], 0.98)
		ev := eval{hour: h, predCPU: float64(p.ProdPeak.MilliCPU) / 1000, trueCPU: trueCPU,
			predMem: float64(p.ProdPeak.MemoryBytes), trueMem: trueMem, warmSeen: p.Warm || p.ColdPods == 0}
		ev.errCPU = (ev.predCPU - trueCPU) / trueCPU
		ev.errMem = (ev.predMem - trueMem) / trueMem
		ev.underCPU, ev.underMem = ev.predCPU < trueCPU, ev.predMem < trueMem
		evals = append(evals, ev)
	}

	var underCPU, underMem int
	var worstCPU, worstMem, sumCPU, sumMem float64
	for _, ev := range evals {
		if ev.underCPU {
			underCPU++
		}
		if ev.underMem {
			underMem++
		}
		worstCPU, worstMem = max(worstCPU, math.Abs(ev.errCPU)), max(worstMem, math.Abs(ev.errMem))
		sumCPU, sumMem = sumCPU+ev.errCPU, sumMem+ev.errMem
		if !ev.warmSeen {
			t.Errorf("hour %d: the pod model is still cold", ev.hour)
		}
	}
	k := float64(len(evals))
	t.Logf("%d hours evaluated (days 2-%d), trailing window %s, %d samples replayed at %s", len(evals), days, window, len(cpu), step)
	t.Logf("CPU p95:    mean error %+.1f %%, worst |error| %.1f %%, under-predicted %d hours (%.1f %%)",
		100*sumCPU/k, 100*worstCPU, underCPU, 100*float64(underCPU)/k)
	t.Logf("memory p98: mean error %+.1f %%, worst |error| %.1f %%, under-predicted %d hours (%.1f %%)",
		100*sumMem/k, 100*worstMem, underMem, 100*float64(underMem)/k)
	for _, ev := range evals {
		if testing.Verbose() && (ev.hour%12 == 0 || ev.underCPU || ev.underMem) {
			t.Logf("hour %3d: CPU p95 predicted %.3f true %.3f (%+.1f %%); memory p98 predicted %.2f GiB true %.2f GiB (%+.1f %%)",
				ev.hour, ev.predCPU, ev.trueCPU, 100*ev.errCPU, ev.predMem/gib, ev.trueMem/gib, 100*ev.errMem)
		}
	}
	if worstCPU > maxError {
		t.Errorf("CPU p95 off by up to %.1f %%, want within %.0f %%", 100*worstCPU, 100*maxError)
	}
	if float64(underCPU)/k > maxUnder {
		t.Errorf("CPU p95 under-predicted on %d of %d hours, want at most %.0f %%", underCPU, len(evals), 100*maxUnder)
	}
	if worstMem > maxError {
		t.Errorf("memory p98 off by up to %.1f %%, want within %.0f %%", 100*worstMem, 100*maxError)
	}
	if float64(underMem)/k > maxUnder {
		t.Errorf("memory p98 under-predicted on %d of %d hours, want at most %.0f %%", underMem, len(evals), 100*maxUnder)
	}
}

// percentile is the nearest-rank p-th percentile of vs: the smallest sample with at least p of them at or below it.
func percentile(vs []float64, p float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[max(int(math.Ceil(p*float64(len(s))))-1, 0)]
}
