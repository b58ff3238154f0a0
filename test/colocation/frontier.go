package colocation

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Frontier is what colocation gives batch work against what it costs the service: one Curve per setting of the
// node (unprotected, Gleaner's defaults, suppression variants, a static split of the CPUs, ...), each a point per
// batch size.
type Frontier struct {
	// SLO is what a point must meet to count towards its curve's batch work at SLO.
	SLO SLO `json:"slo"`
	// Bootstrap is how the points' intervals were estimated.
	Bootstrap Bootstrap `json:"bootstrap"`
	Curves    []Curve   `json:"curves"`
}

// Curve is one setting's points, by batch size.
type Curve struct {
	// Setting names the node's setting: "unprotected", "defaults", "suppress-cfsQuota-60", "static-split".
	Setting string       `json:"setting"`
	Points  []CurvePoint `json:"points"`
}

// CurvePoint is one setting at one batch size, over the rounds.
type CurvePoint struct {
	// Size is the batch work asked for, as a fraction of the node's published batch-cpu (1 = all of it).
	Size float64 `json:"size"`
	// BatchWork is the median over rounds of the batch work done, in cores (see WorkScale).
	BatchWork float64 `json:"batchWorkCores"`
	// NodeBusy is the median over rounds of the node's busy share.
	NodeBusy float64 `json:"nodeBusy"`
	// P99 is the service's paired p99 ratio to alone, with its interval; its Value is 0 when it could not be
	// measured (every request of a phase failed before a timeout).
	P99 Ratio `json:"p99Ratio"`
	// P999Pooled is the service's p99.9 over all rounds pooled, as a ratio to alone's; 0 when not measured.
	P999Pooled float64 `json:"p999PooledRatio"`
	// Errors counts the service's failed requests, timeouts included, in the setting's phases of all rounds.
	Errors int `json:"errors"`
}

// NewCurvePoint measures a setting at batch size size from its rounds: the batch work (scaled by scale) and the
// node's busy share as medians over the rounds, the p99 ratio by PairedRatio with b (whose Q it overrides with
// 0.99), the p99.9 ratio by PooledRatio, and the errors. When a phase has no latency to rank it returns the point
// with the ratios left 0 and the rest filled, and an error wrapping ErrNoLatency: such a point belongs on its curve,
// as one that does not meet the SLO.
func NewCurvePoint(size float64, rounds []Round, scale WorkScale, b Bootstrap) (CurvePoint, error) {
	if len(rounds) == 0 {
		return CurvePoint{}, fmt.Errorf("measuring size %v: no rounds", size)
	}
	p := CurvePoint{Size: size}
	units, busy := make([]float64, len(rounds)), make([]float64, len(rounds))
	for i, rd := range rounds {
		units[i], busy[i] = rd.BatchUnitsPerSecond, rd.NodeBusy
		for _, s := range rd.Setting {
			if s.Err != "" {
				p.Errors++
			}
		}
	}
	p.BatchWork, p.NodeBusy = scale.MedianCores(units), median(busy)
	b.Q = 0.99
	var err error
	if p.P99, err = PairedRatio(rounds, b); err != nil {
		return p, fmt.Errorf("measuring size %v: %w", size, err)
	}
	if p.P999Pooled, err = PooledRatio(rounds, 0.999); err != nil {
		return p, fmt.Errorf("measuring size %v: %w", size, err)
	}
	return p, nil
}

// SLO is the service's objective beside batch work.
type SLO struct {
	// Ratio is the highest p99 ratio to alone that meets it, and UpperRatio the highest upper end of that ratio's
	// interval: a point must be good and known to be good.
	Ratio      float64 `json:"p99Ratio"`
	UpperRatio float64 `json:"p99UpperRatio"`
	// Errors is the most failed requests it allows.
	Errors int `json:"errors"`
}

// DefaultSLO is the benchmark's: p99 at most 1.1x alone, with the interval's upper end at most 1.2x, and no errors.
func DefaultSLO() SLO { return SLO{Ratio: 1.1, UpperRatio: 1.2, Errors: 0} }

// Meets says whether p meets slo. A point whose ratio was not measured does not.
func (slo SLO) Meets(p CurvePoint) bool {
	return p.P99.Value > 0 && p.P99.Value <= slo.Ratio && p.P99.High <= slo.UpperRatio && p.Errors <= slo.Errors
}

// errors says how many errors slo allows, in words.
func (slo SLO) errors() string {
	if slo.Errors > 0 {
		return fmt.Sprintf("at most %d errors", slo.Errors)
	}
	return "no errors"
}

// BatchWorkAtSLO is the most batch work, in cores, among c's points that meet slo; 0 when none does. It is the
// frontier's headline: how much batch work the setting gets done without costing the service its objective.
func BatchWorkAtSLO(c Curve, slo SLO) float64 {
	best := 0.0
	for _, p := range c.Points {
		if slo.Meets(p) {
			best = max(best, p.BatchWork)
		}
	}
	return best
}

// MarshalJSON writes f with each curve's batch work at f.SLO ("batchWorkAtSLO", in cores) beside its points, so
// that the report file holds the headline. Reading it back ignores that field: it is computed, never stored.
func (f Frontier) MarshalJSON() ([]byte, error) {
	type scored struct {
		Curve
		AtSLO float64 `json:"batchWorkAtSLO"`
	}
	out := struct {
		SLO       SLO       `json:"slo"`
		Bootstrap Bootstrap `json:"bootstrap"`
		Curves    []scored  `json:"curves"`
	}{SLO: f.SLO, Bootstrap: f.Bootstrap, Curves: make([]scored, len(f.Curves))}
	for i, c := range f.Curves {
		out.Curves[i] = scored{Curve: c, AtSLO: BatchWorkAtSLO(c, f.SLO)}
	}
	return json.Marshal(out)
}

// WriteTable writes f as a Markdown table, a row per setting and size in f's order, followed by each setting's
// batch work at f.SLO. A ratio not measured shows as "-".
func (f Frontier) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| setting | batch size | batch work (cores) | node busy | p99 ratio [%s interval] | p99.9 ratio (pooled) | errors |\n",
		percent(f.Bootstrap.Level))
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, c := range f.Curves {
		for _, p := range c.Points {
			p99, p999 := "-", "-"
			if p.P99.Value > 0 {
				p99 = fmt.Sprintf("%.2fx [%.2f, %.2f]", p.P99.Value, p.P99.Low, p.P99.High)
			}
			if p.P999Pooled > 0 {
				p999 = fmt.Sprintf("%.2fx", p.P999Pooled)
			}
			fmt.Fprintf(&b, "| %s | %s | %.2f | %.0f %% | %s | %s | %d |\n",
				c.Setting, percent(p.Size), p.BatchWork, 100*p.NodeBusy, p99, p999, p.Errors)
		}
	}
	fmt.Fprintf(&b, "\nBatch work at SLO (p99 at most %.2fx alone, the interval's upper end at most %.2fx, %s):\n\n",
		f.SLO.Ratio, f.SLO.UpperRatio, f.SLO.errors())
	for _, c := range f.Curves {
		fmt.Fprintf(&b, "- %s: %.2f cores\n", c.Setting, BatchWorkAtSLO(c, f.SLO))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// percent writes a share as a whole percentage: 0.95 is "95 %".
func percent(share float64) string { return fmt.Sprintf("%.0f %%", 100*share) }

// AlonePairs maps the index of each batch phase of phases (one with a Setting) to that of the alone phase last run
// before it, the one its latency is compared with: the service alone drifts over a run, so the nearest alone phase
// before a setting's phases pairs closest. A batch phase with no alone phase before it is left out.
func AlonePairs(phases []Phase) map[int]int {
	pairs := map[int]int{}
	last := -1
	for i, p := range phases {
		switch {
		case p.Name == AlonePhase:
			last = i
		case p.Setting != "" && last >= 0:
			pairs[i] = last
		}
	}
	return pairs
}
