package colocation

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// AlonePhase is the name of the phase the others are compared with: the service without batch work.
const AlonePhase = "alone"

// Phase is one measured stretch of a run.
type Phase struct {
	// Name says what ran (AlonePhase, or a batch phase's name); Round counts the phase's repetitions from 1.
	Name  string `json:"name"`
	Round int    `json:"round"`
	// Setting and Size say what a batch phase ran: Gleaner's setting, and the batch pods' share of the batch-cpu the
	// node published.
	Setting string  `json:"setting,omitempty"`
	Size    float64 `json:"size,omitempty"`
	// Start and End bound the measurement.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Latency is the service's, from the load generator.
	Latency Latency `json:"latency"`
	// CPU is the node's and the classes' CPU use.
	CPU Use `json:"cpu"`
	// BatchCoresDone is the CPU the batch class got, in cores.
	BatchCoresDone float64 `json:"batchCoresDone"`
	// BatchWork is the work the batch burners did, in cores of work as if alone: their units of work per second
	// over their units per CPU-second with the batch work running alone. Beside a service whose caches they share it
	// can fall below the CPU they got.
	BatchWork float64 `json:"batchWorkCores"`
	// GeneratorWaitMs is the load generator's own run-queue wait per request (its process's threads' schedstat),
	// which must stay far below the latencies it measures; Dials counts the connections it opened during the phase.
	GeneratorWaitMs float64 `json:"generatorWaitMs"`
	Dials           int64   `json:"dials"`
	// BatchPodsGone counts, by work, the batch pods that went away during the measurement (evicted).
	BatchPodsGone map[string]int `json:"batchPodsGone,omitempty"`
	// Actions are what Gleaner did in the phase, by counter (evictions, suppression changes, ...).
	Actions map[string]float64 `json:"actions,omitempty"`
	// SchedWait is where the service's threads waited for a CPU, when the phase traced the scheduler.
	SchedWait *SchedWaitResult `json:"schedWait,omitempty"`
}

// Point is one moment of a run's timeline, for the picture.
type Point struct {
	At time.Time `json:"at"`
	// CPU is the use over the second before At.
	CPU Use `json:"cpu"`
	// P99 is the service's p99 latency in ms over the window before At (0: no requests).
	P99 float64 `json:"p99Ms"`
	// BatchQuota is the batch class's CPU limit in cores (CPU suppression), 0 when unlimited.
	BatchQuota float64 `json:"batchQuotaCores"`
}

// Report is a run: its phases in the order they ran, the timeline, and the comparison with the alone phases.
type Report struct {
	// CPUs is the node's CPU count; Rate the service's requests per second.
	CPUs   int       `json:"cpus"`
	Rate   float64   `json:"rate"`
	Phases []Phase   `json:"phases"`
	Points []Point   `json:"timeline"`
	Ratios []Summary `json:"summary"`
}

// Summary is one phase name's result over its rounds, against the alone phases of the same run: the median of each
// round's value, and the latencies as ratios to the alone phases' median.
type Summary struct {
	Name   string `json:"name"`
	Rounds int    `json:"rounds"`
	// P50, P99 and P999 are ratios to alone (1 = no change).
	P50  float64 `json:"p50Ratio"`
	P99  float64 `json:"p99Ratio"`
	P999 float64 `json:"p999Ratio"`
	// P99Ms is the median p99 in milliseconds.
	P99Ms float64 `json:"p99Ms"`
	// Errors sums the rounds' failed requests.
	Errors int `json:"errors"`
	// Node is the node's median busy share, Batch the batch class's, Service the service's.
	Node    float64 `json:"node"`
	Batch   float64 `json:"batch"`
	Service float64 `json:"service"`
	// BatchCores is the median CPU the batch class got, in cores.
	BatchCores float64 `json:"batchCores"`
	// Steal is the median share of the node's CPU time the hypervisor took.
	Steal float64 `json:"steal"`
	// Evictions sums the rounds' EvictionsAction counts: the agent's eviction requests, granted or refused.
	Evictions float64 `json:"evictions"`
	// BatchWork is the median batch work, in cores of work as if alone (Phase.BatchWork).
	BatchWork float64 `json:"batchWorkCores"`
	// GeneratorWaitMs is the largest of the rounds' load generator waits per request; Dials sums their dials.
	GeneratorWaitMs float64 `json:"generatorWaitMs"`
	Dials           int64   `json:"dials"`
	// Tail is each segment's median over the rounds of the slowest percent's mean (Breakdown.Tail), nil without
	// segments.
	Tail *Segments `json:"tailSegments,omitempty"`
	// PodsGone sums the batch pods that went away during the rounds' measurements.
	PodsGone int `json:"batchPodsGone"`
	// SchedWait is the median over the rounds that traced the scheduler of the service's threads' wait for a CPU,
	// in ms per second of the phase, by what ran instead (SchedWaitResult's classes, and SchedWaitTotal and
	// SchedWaitRunDelay); nil when none traced.
	SchedWait map[string]float64 `json:"schedWaitMsPerSecond,omitempty"`
	// SchedWaitLost sums the trace's lost events; SchedWaitTracerCPU is the tracer's largest CPU share of a core.
	SchedWaitLost      int64   `json:"schedWaitLost,omitempty"`
	SchedWaitTracerCPU float64 `json:"schedWaitTracerCpu,omitempty"`
	// SchedBegan is the same waits by how they began (SchedWait.Began), nil when none traced.
	SchedBegan map[string]BeganSummary `json:"schedWaitBegan,omitempty"`
}

// EvictionsAction is the Phase.Actions key of the agent's evictions.
const EvictionsAction = "evictions_total"

// Summarise fills r.Ratios from r.Phases: one Summary per phase name, in first-run order. Without an alone phase
// the ratios are 0.
func (r *Report) Summarise(serviceClass, batchClass string) {
	var names []string
	byName := map[string][]Phase{}
	for _, p := range r.Phases {
		if _, ok := byName[p.Name]; !ok {
			names = append(names, p.Name)
		}
		byName[p.Name] = append(byName[p.Name], p)
	}
	field := func(ps []Phase, f func(Phase) float64) float64 {
		v := make([]float64, len(ps))
		for i, p := range ps {
			v[i] = f(p)
		}
		return median(v)
	}
	alone := byName[AlonePhase]
	base := [3]float64{
		field(alone, func(p Phase) float64 { return p.Latency.P50 }),
		field(alone, func(p Phase) float64 { return p.Latency.P99 }),
		field(alone, func(p Phase) float64 { return p.Latency.P999 }),
	}
	r.Ratios = nil
	for _, n := range names {
		ps := byName[n]
		s := Summary{
			Name:       n,
			Rounds:     len(ps),
			P50:        ratio(field(ps, func(p Phase) float64 { return p.Latency.P50 }), base[0]),
			P99:        ratio(field(ps, func(p Phase) float64 { return p.Latency.P99 }), base[1]),
			P999:       ratio(field(ps, func(p Phase) float64 { return p.Latency.P999 }), base[2]),
			P99Ms:      field(ps, func(p Phase) float64 { return p.Latency.P99 }),
			Node:       field(ps, func(p Phase) float64 { return p.CPU.Node }),
			Batch:      field(ps, func(p Phase) float64 { return p.CPU.Classes[batchClass] }),
			Service:    field(ps, func(p Phase) float64 { return p.CPU.Classes[serviceClass] }),
			BatchCores: field(ps, func(p Phase) float64 { return p.BatchCoresDone }),
			Steal:      field(ps, func(p Phase) float64 { return p.CPU.Steal }),
		}
		s.BatchWork = field(ps, func(p Phase) float64 { return p.BatchWork })
		for _, p := range ps {
			s.Errors += p.Latency.Errors
			s.Evictions += p.Actions[EvictionsAction]
			s.GeneratorWaitMs = max(s.GeneratorWaitMs, p.GeneratorWaitMs)
			s.Dials += p.Dials
			for _, n := range p.BatchPodsGone {
				s.PodsGone += n
			}
		}
		s.Tail = tailOf(ps)
		s.SchedWait, s.SchedWaitLost, s.SchedWaitTracerCPU = schedWaitOf(ps)
		s.SchedBegan = schedBeganOf(ps)
		r.Ratios = append(r.Ratios, s)
	}
}

// tailOf is each tail segment's median over the phases that have segments, nil when none has.
func tailOf(ps []Phase) *Segments {
	var v [segmentCount][]float64
	for _, p := range ps {
		if b := p.Latency.Segments; b != nil {
			for i, x := range b.Tail.values() {
				v[i] = append(v[i], x)
			}
		}
	}
	if len(v[0]) == 0 {
		return nil
	}
	var med [segmentCount]float64
	for i := range v {
		med[i] = median(v[i])
	}
	s := segmentsOfValues(med)
	return &s
}

// median is the median of v (the mean of the middle two for an even count), 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ratio(v, base float64) float64 {
	if base <= 0 {
		return 0
	}
	return v / base
}

// WriteTable writes the summary as a Markdown table.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| phase | rounds | p50 | p99 | p99.9 | p99 (ms) | errors | node CPU | batch CPU | service CPU | batch cores | batch work | steal | evictions | pods evicted |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, s := range r.Ratios {
		fmt.Fprintf(&b, "| %s | %d | %.2fx | %.2fx | %.2fx | %.2f | %d | %.0f %% | %.0f %% | %.1f %% | %.2f | %.2f | %.1f %% | %.0f | %d |\n",
			s.Name, s.Rounds, s.P50, s.P99, s.P999, s.P99Ms, s.Errors, 100*s.Node, 100*s.Batch, 100*s.Service, s.BatchCores, s.BatchWork,
			100*s.Steal, s.Evictions, s.PodsGone)
	}
	b.WriteString("\nWhere the slowest percent's time went (ms, the median over rounds of their mean; the handler's time on a CPU is\n")
	b.WriteString("part of the handler's), and the load generator's own run-queue wait per request (the largest of the rounds) with\n")
	b.WriteString("the connections it opened during the phases:\n\n")
	b.WriteString("| phase | due → sent | sent → handler | handler | handler on CPU | handler → done | generator wait (ms) | dials |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, s := range r.Ratios {
		t := Segments{}
		if s.Tail != nil {
			t = *s.Tail
		}
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.3f | %d |\n", s.Name, t.DueToSent, t.SentToHandler, t.Handler, t.HandlerCPU,
			t.HandlerToDone, s.GeneratorWaitMs, s.Dials)
	}
	r.writeSchedWait(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSchedWait writes the table of the service's threads' waits for a CPU, when a phase traced them.
func (r *Report) writeSchedWait(b *strings.Builder) {
	traced := false
	for _, s := range r.Ratios {
		traced = traced || s.SchedWait != nil
	}
	if !traced {
		return
	}
	b.WriteString("\nWhile the service's threads waited for a CPU, what ran on it (ms a second of the phase, the median over rounds;\n")
	b.WriteString("\"run delay\" is the same threads' own schedstat count, which the charges should add up to), the events the\n")
	b.WriteString("trace lost and the tracer's own CPU:\n\n")
	b.WriteString("| phase |")
	for _, c := range SchedWaitClasses {
		fmt.Fprintf(b, " %s |", c)
	}
	b.WriteString(" total | run delay | lost | tracer CPU |\n|" + strings.Repeat(" --- |", len(SchedWaitClasses)+5) + "\n")
	for _, s := range r.Ratios {
		if s.SchedWait == nil {
			continue
		}
		fmt.Fprintf(b, "| %s |", s.Name)
		for _, c := range SchedWaitClasses {
			fmt.Fprintf(b, " %.2f |", s.SchedWait[c])
		}
		fmt.Fprintf(b, " %.2f | %.2f | %d | %.1f %% |\n", s.SchedWait[SchedWaitTotal], s.SchedWait[SchedWaitRunDelay], s.SchedWaitLost,
			100*s.SchedWaitTracerCPU)
	}
	r.writeSchedBegan(b)
}

// writeSchedBegan writes how the service's threads' waits began: woken onto a CPU that ran what, or preempted by
// what; a cell is the waits a second, their mean length and the share over LongWait.
func (r *Report) writeSchedBegan(b *strings.Builder) {
	keys := beganOrder(func(k string) bool {
		for _, s := range r.Ratios {
			if _, ok := s.SchedBegan[k]; ok {
				return true
			}
		}
		return false
	})
	if len(keys) == 0 {
		return
	}
	fmt.Fprintf(b, "\nHow those waits began, by what ran on the thread's CPU then: waits a second (the median over rounds), their\n")
	fmt.Fprintf(b, "mean length and the share over %v (pooled over rounds):\n\n| phase |", LongWait)
	for _, k := range keys {
		fmt.Fprintf(b, " %s |", k)
	}
	b.WriteString("\n|" + strings.Repeat(" --- |", len(keys)+1) + "\n")
	for _, s := range r.Ratios {
		if s.SchedBegan == nil {
			continue
		}
		fmt.Fprintf(b, "| %s |", s.Name)
		for _, k := range keys {
			c := s.SchedBegan[k]
			fmt.Fprintf(b, " %.0f/s, %.0f µs, %.1f %% |", c.PerSecond, c.MeanUs, 100*c.Long)
		}
		b.WriteString("\n")
	}
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
