package colocation

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func phase(name string, round int, p50, p99, p999 float64, errors int, node, batch, svc, cores float64) Phase {
	return Phase{Name: name, Round: round, Latency: Latency{Requests: 1000, Errors: errors, P50: p50, P99: p99, P999: p999},
		CPU: Use{Node: node, Classes: map[string]float64{"batch": batch, "service": svc}}, BatchCoresDone: cores}
}

// Two rounds of alone (p99 4 and 6: median 5), of unprotected and of protected, alternated: each phase's summary is
// the median of its rounds, latencies as ratios to alone's median.
func TestSummarise(t *testing.T) {
	r := Report{CPUs: 2, Phases: []Phase{
		phase("alone", 1, 2, 4, 8, 0, 0.10, 0, 0.05, 0),
		phase("unprotected", 1, 3, 20, 40, 3, 0.95, 0.80, 0.05, 1.6),
		phase("protected", 1, 2, 5, 10, 0, 0.85, 0.70, 0.05, 1.4),
		phase("alone", 2, 2, 6, 12, 0, 0.12, 0, 0.05, 0),
		phase("unprotected", 2, 3, 30, 60, 1, 0.97, 0.82, 0.05, 1.64),
		phase("protected", 2, 2, 6, 12, 0, 0.87, 0.72, 0.05, 1.44),
	}}
	r.Phases[1].Actions = map[string]float64{EvictionsAction: 2, "executor_writes_total": 7}
	r.Phases[4].Actions = map[string]float64{EvictionsAction: 1}
	r.Phases[1].BatchWork, r.Phases[1].GeneratorWaitMs, r.Phases[1].Dials = 1.5, 0.02, 1
	r.Phases[4].BatchWork, r.Phases[4].GeneratorWaitMs = 1.7, 0.05
	r.Phases[1].BatchPodsGone = map[string]int{"holder": 2}
	r.Phases[1].Latency.Segments = &Breakdown{Tail: Segments{DueToSent: 1, SentToHandler: 2, Handler: 3, HandlerToDone: 4, HandlerCPU: 1.5}}
	r.Phases[4].Latency.Segments = &Breakdown{Tail: Segments{DueToSent: 3, SentToHandler: 4, Handler: 5, HandlerToDone: 6, HandlerCPU: 2.5}}
	r.Summarise("service", "batch")
	want := []Summary{
		{Name: "alone", Rounds: 2, P50: 1, P99: 1, P999: 1, P99Ms: 5, Node: 0.11, Service: 0.05},
		{Name: "unprotected", Rounds: 2, P50: 1.5, P99: 5, P999: 5, P99Ms: 25, Errors: 4, Node: 0.96, Batch: 0.81, Service: 0.05, BatchCores: 1.62, Evictions: 3,
			BatchWork: 1.6, GeneratorWaitMs: 0.05, Dials: 1, PodsGone: 2, Tail: &Segments{DueToSent: 2, SentToHandler: 3, Handler: 4, HandlerToDone: 5, HandlerCPU: 2}},
		{Name: "protected", Rounds: 2, P50: 1, P99: 1.1, P999: 1.1, P99Ms: 5.5, Node: 0.86, Batch: 0.71, Service: 0.05, BatchCores: 1.42},
	}
	if diff := cmp.Diff(want, r.Ratios, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	wantTable := `| phase | rounds | p50 | p99 | p99.9 | p99 (ms) | errors | node CPU | batch CPU | service CPU | batch cores | batch work | steal | evictions | pods evicted |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
| alone | 2 | 1.00x | 1.00x | 1.00x | 5.00 | 0 | 11 % | 0 % | 5.0 % | 0.00 | 0.00 | 0.0 % | 0 | 0 |
| unprotected | 2 | 1.50x | 5.00x | 5.00x | 25.00 | 4 | 96 % | 81 % | 5.0 % | 1.62 | 1.60 | 0.0 % | 3 | 2 |
| protected | 2 | 1.00x | 1.10x | 1.10x | 5.50 | 0 | 86 % | 71 % | 5.0 % | 1.42 | 0.00 | 0.0 % | 0 | 0 |

Where the slowest percent's time went (ms, the median over rounds of their mean; the handler's time on a CPU is
part of the handler's), and the load generator's own run-queue wait per request (the largest of the rounds) with
the connections it opened during the phases:

| phase | due → sent | sent → handler | handler | handler on CPU | handler → done | generator wait (ms) | dials |
| --- | --- | --- | --- | --- | --- | --- | --- |
| alone | 0.00 | 0.00 | 0.00 | 0.00 | 0.00 | 0.000 | 0 |
| unprotected | 2.00 | 3.00 | 4.00 | 2.00 | 5.00 | 0.050 | 1 |
| protected | 0.00 | 0.00 | 0.00 | 0.00 | 0.00 | 0.000 | 0 |
`
	if diff := cmp.Diff(wantTable, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}

	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("the JSON does not read back: %v", err)
	}
	if diff := cmp.Diff(r.Ratios, back.Ratios); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}

	none := Report{Phases: []Phase{phase("protected", 1, 2, 5, 10, 0, 0.85, 0.7, 0.05, 1.4)}}
	none.Summarise("service", "batch")
	if got := none.Ratios[0].P99; got != 0 {
		t.Errorf("without an alone phase the ratio is %v, want 0 (nothing to compare with)", got)
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// The picture is well-formed SVG with the three stacked classes, the p99 line, the limit line and a band per phase.
func TestWriteSVG(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := Report{CPUs: 2, Phases: []Phase{
		{Name: "alone", Start: t0, End: t0.Add(2 * time.Second)},
		{Name: "protected", Start: t0.Add(2 * time.Second), End: t0.Add(4 * time.Second)},
	}}
	for _, at := range []int{0, 1, 2, 10, 11, 12} { // two stretches of measurement, 8 s apart
		r.Points = append(r.Points, Point{At: t0.Add(time.Duration(at) * time.Second), P99: float64(4 + at),
			BatchQuota: 1.5, CPU: Use{Node: 0.5, Classes: map[string]float64{"service": 0.1, "batch": 0.3}, Other: 0.1}})
	}
	var b bytes.Buffer
	if err := r.WriteSVG(&b, "service", "batch"); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	var texts []string
	d := xml.NewDecoder(&b)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			count[el.Name.Local]++
		case xml.CharData:
			texts = append(texts, string(el))
		}
	}
	if count["svg"] != 1 || count["polygon"] != 6 || count["polyline"] != 4 {
		t.Errorf("elements %v: want one svg and, for each of the two stretches, 3 polygons (classes) and 2 polylines (p99, limit)", count)
	}
	for _, want := range []string{"alone", "protected", "service p99 (right axis)", "100 %"} {
		found := false
		for _, s := range texts {
			found = found || s == want
		}
		if !found {
			t.Errorf("no text %q in the picture (texts: %q)", want, texts)
		}
	}
	if err := (&Report{Points: r.Points[:1]}).WriteSVG(io.Discard, "service", "batch"); err == nil {
		t.Error("a one-point timeline was drawn")
	}
}

func TestNiceCeil(t *testing.T) {
	for in, want := range map[float64]float64{0: 1, 0.7: 1, 3: 5, 12: 20, 55: 100, 100: 100, 0.013: 0.02} {
		if got := niceCeil(in); got < want*0.999999 || got > want*1.000001 {
			t.Errorf("niceCeil(%v) = %v, want %v", in, got, want)
		}
	}
}
