package colocation

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// curvePoint is a CurvePoint of size, work cores and p99 ratio value [low, high].
func curvePoint(size, work, value, low, high float64, errs int) CurvePoint {
	return CurvePoint{Size: size, BatchWork: work, NodeBusy: 0.5 + work/4, P99: Ratio{Value: value, Low: low, High: high},
		P999Pooled: value + 0.1, Errors: errs}
}

func TestBatchWorkAtSLO(t *testing.T) {
	tests := []struct {
		name   string
		points []CurvePoint
		slo    SLO
		want   float64
	}{{
		name: "the most work among the points that meet it, not the last",
		points: []CurvePoint{
			curvePoint(1.0/3, 0.5, 1.02, 0.98, 1.06, 0),
			curvePoint(2.0/3, 1.0, 1.08, 1.01, 1.15, 0),
			curvePoint(1, 1.4, 1.35, 1.2, 1.5, 0),
			curvePoint(1.5, 1.7, 1.9, 1.6, 2.3, 0),
		},
		slo:  DefaultSLO(),
		want: 1.0,
	}, {
		name:   "on the thresholds meets it",
		points: []CurvePoint{curvePoint(1.0/3, 0.5, 1.0, 0.9, 1.1, 0), curvePoint(2.0/3, 1.0, 1.1, 1.0, 1.2, 0)},
		slo:    DefaultSLO(),
		want:   1.0,
	}, {
		name:   "an interval reaching above 1.2 does not, however good the ratio",
		points: []CurvePoint{curvePoint(1.0/3, 0.5, 1.0, 0.9, 1.1, 0), curvePoint(2.0/3, 1.0, 1.05, 0.95, 1.21, 0)},
		slo:    DefaultSLO(),
		want:   0.5,
	}, {
		name:   "a ratio above 1.1 does not, however narrow its interval",
		points: []CurvePoint{curvePoint(1.0/3, 0.5, 1.0, 0.9, 1.1, 0), curvePoint(2.0/3, 1.0, 1.11, 1.1, 1.12, 0)},
		slo:    DefaultSLO(),
		want:   0.5,
	}, {
		name:   "a point with errors does not",
		points: []CurvePoint{curvePoint(1.0/3, 0.5, 1.0, 0.9, 1.1, 0), curvePoint(2.0/3, 1.0, 1.0, 0.95, 1.05, 1)},
		slo:    DefaultSLO(),
		want:   0.5,
	}, {
		name:   "unless the SLO allows them",
		points: []CurvePoint{curvePoint(1.0/3, 0.5, 1.0, 0.9, 1.1, 0), curvePoint(2.0/3, 1.0, 1.0, 0.95, 1.05, 1)},
		slo:    SLO{Ratio: 1.1, UpperRatio: 1.2, Errors: 1},
		want:   1.0,
	}, {
		name:   "a ratio not measured does not",
		points: []CurvePoint{curvePoint(1.0/3, 0.5, 1.0, 0.9, 1.1, 0), {Size: 2.0 / 3, BatchWork: 1.0}},
		slo:    DefaultSLO(),
		want:   0.5,
	}, {
		name:   "none meets it",
		points: []CurvePoint{curvePoint(1.0/3, 0.5, 1.3, 1.2, 1.4, 0), curvePoint(2.0/3, 1.0, 1.5, 1.4, 1.6, 0)},
		slo:    DefaultSLO(),
		want:   0,
	}, {
		name: "no points",
		slo:  DefaultSLO(),
		want: 0,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BatchWorkAtSLO(Curve{Setting: "s", Points: tt.points}, tt.slo); got != tt.want {
				t.Errorf("%v cores, want %v", got, tt.want)
			}
		})
	}
}

// Three rounds of 300 requests a phase: alone at 2, 4 and 8 ms, the setting at 1.5x each (so the pooled p99.9 is
// 12 / 8 too), 3,000, 4,000 and 5,000 units/s on a scale of 2,500 units per core-second (median 1.6 cores), and 2
// failed requests in the last round.
func TestNewCurvePoint(t *testing.T) {
	t0 := time.Unix(0, 0)
	scale := WorkScale{UnitsPerCoreSecond: 2500}
	var rounds []Round
	for i, alone := range []time.Duration{2 * time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond} {
		rounds = append(rounds, Round{Alone: constantSamples(t0, 300, alone), Setting: constantSamples(t0, 300, alone*3/2),
			BatchUnitsPerSecond: float64(3000 + 1000*i), NodeBusy: 0.8 + 0.05*float64(i)})
	}
	rounds[2].Setting[7].Err, rounds[2].Setting[9].Err = "connection reset", "connection refused"
	b := DefaultBootstrap()
	b.Q, b.Iterations = 0.5, 100 // Q is overridden: the point's ratio is p99's
	got, err := NewCurvePoint(2.0/3, rounds, scale, b)
	if err != nil {
		t.Fatal(err)
	}
	want := CurvePoint{Size: 2.0 / 3, BatchWork: 1.6, NodeBusy: 0.85,
		P99: Ratio{Value: 1.5, Low: 1.5, High: 1.5, Rounds: []float64{1.5, 1.5, 1.5}}, P999Pooled: 1.5, Errors: 2}
	if diff := cmp.Diff(want, got, approxRatio); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// Every request of the second round's setting was refused: the point keeps its work, busy share and errors, with
	// no ratio, and says why.
	for i := range rounds[1].Setting {
		rounds[1].Setting[i].Err = "connection refused"
	}
	got, err = NewCurvePoint(2.0/3, rounds, scale, b)
	if !errors.Is(err, ErrNoLatency) {
		t.Fatalf("error %v, want ErrNoLatency", err)
	}
	want = CurvePoint{Size: 2.0 / 3, BatchWork: 1.6, NodeBusy: 0.85, Errors: 302}
	if diff := cmp.Diff(want, got, approxRatio); diff != "" {
		t.Errorf("all failed (-want +got):\n%s", diff)
	}
	if DefaultSLO().Meets(got) {
		t.Error("a point without a ratio meets the SLO")
	}
	if _, err := NewCurvePoint(1, nil, scale, b); err == nil {
		t.Error("no rounds: no error")
	}
}

// testFrontier is two measured settings and one whose every point failed.
func testFrontier() Frontier {
	return Frontier{SLO: DefaultSLO(), Bootstrap: DefaultBootstrap(), Curves: []Curve{
		{Setting: "unprotected", Points: []CurvePoint{
			curvePoint(1.0/3, 0.6, 1.4, 1.25, 1.6, 0),
			curvePoint(2.0/3, 1.2, 2.1, 1.8, 2.5, 3),
		}},
		{Setting: "defaults", Points: []CurvePoint{
			curvePoint(1.0/3, 0.55, 1.05, 0.98, 1.12, 0),
			curvePoint(2.0/3, 1.1, 1.1, 1.02, 1.19, 0),
			curvePoint(1, 1.5, 1.3, 1.15, 1.45, 0),
		}},
		{Setting: "static-split", Points: []CurvePoint{{Size: 1, BatchWork: 0.9, NodeBusy: 0.7, Errors: 6000}}},
	}}
}

func TestFrontierWriteTable(t *testing.T) {
	var b strings.Builder
	if err := testFrontier().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := `| setting | batch size | batch work (cores) | node busy | p99 ratio [95 % interval] | p99.9 ratio (pooled) | errors |
| --- | --- | --- | --- | --- | --- | --- |
| unprotected | 33 % | 0.60 | 65 % | 1.40x [1.25, 1.60] | 1.50x | 0 |
| unprotected | 67 % | 1.20 | 80 % | 2.10x [1.80, 2.50] | 2.20x | 3 |
| defaults | 33 % | 0.55 | 64 % | 1.05x [0.98, 1.12] | 1.15x | 0 |
| defaults | 67 % | 1.10 | 78 % | 1.10x [1.02, 1.19] | 1.20x | 0 |
| defaults | 100 % | 1.50 | 88 % | 1.30x [1.15, 1.45] | 1.40x | 0 |
| static-split | 100 % | 0.90 | 70 % | - | - | 6000 |

Batch work at SLO (p99 at most 1.10x alone, the interval's upper end at most 1.20x, no errors):

- unprotected: 0.00 cores
- defaults: 1.10 cores
- static-split: 0.00 cores
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// The JSON holds each curve's batch work at SLO beside its points, and reads back into the same Frontier.
func TestFrontierJSON(t *testing.T) {
	f := testFrontier()
	js, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var scored struct {
		SLO    SLO `json:"slo"`
		Curves []struct {
			Setting string  `json:"setting"`
			AtSLO   float64 `json:"batchWorkAtSLO"`
		} `json:"curves"`
	}
	if err := json.Unmarshal(js, &scored); err != nil {
		t.Fatal(err)
	}
	if len(scored.Curves) != 3 || scored.Curves[1].Setting != "defaults" || scored.Curves[1].AtSLO != 1.1 || scored.SLO.UpperRatio != 1.2 {
		t.Errorf("the JSON does not hold the SLO and the defaults' 1.1 cores at it: %s", js)
	}
	var back Frontier
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// svgElement is an element of a drawn picture: its name, attributes and text, its children's included.
type svgElement struct {
	name  string
	attrs map[string]string
	text  string
}

// parseSVG reads a picture as XML, failing the test when it is not well formed.
func parseSVG(t *testing.T, r io.Reader) []svgElement {
	t.Helper()
	var out []svgElement
	var open []int
	d := xml.NewDecoder(r)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			e := svgElement{name: el.Name.Local, attrs: map[string]string{}}
			for _, a := range el.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			open = append(open, len(out))
			out = append(out, e)
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.CharData:
			for _, i := range open {
				out[i].text += string(el)
			}
		}
	}
}

// The picture draws a line, bars and markers for each measured point of the two measured settings, none for the
// setting without a measured point, the SLO's dashed line at the height of a point at 1.1x, and the legend's
// headline per setting.
func TestFrontierWriteSVG(t *testing.T) {
	var b bytes.Buffer
	if err := testFrontier().WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	els := parseSVG(t, &b)
	count := map[string]int{}
	var texts []string
	var dashed []svgElement
	cyAtSLO := ""
	for _, e := range els {
		count[e.name]++
		texts = append(texts, e.text)
		if e.name == "line" && e.attrs["stroke-dasharray"] != "" {
			dashed = append(dashed, e)
		}
		if e.name == "circle" && strings.HasPrefix(e.text, "defaults, size 67 %") {
			cyAtSLO = e.attrs["cy"]
		}
	}
	if count["svg"] != 1 || count["polyline"] != 2 || count["circle"] != 5 || count["path"] != 5 {
		t.Errorf("elements %v: want one svg, a polyline per measured setting (2), a marker and a bar per measured point (5)", count)
	}
	if len(dashed) != 2 { // the SLO line and its legend entry
		t.Fatalf("%d dashed lines, want the SLO's and its legend's", len(dashed))
	}
	if slo := dashed[0]; slo.attrs["y1"] != slo.attrs["y2"] || slo.attrs["y1"] != cyAtSLO {
		t.Errorf("the SLO line runs from y %s to %s, want level at the 1.1x point's %s", slo.attrs["y1"], slo.attrs["y2"], cyAtSLO)
	}
	for _, want := range []string{"unprotected: 0.00 cores", "defaults: 1.10 cores", "static-split: 0.00 cores",
		"SLO: p99 1.10x alone", "service p99 / alone", "1x",
		"defaults, size 67 %: 1.10 cores, node 78 % busy, p99 1.10x [1.02, 1.19], 0 errors"} {
		found := false
		for _, s := range texts {
			found = found || s == want
		}
		if !found {
			t.Errorf("no text %q in the picture (texts: %q)", want, texts)
		}
	}

	none := Frontier{SLO: DefaultSLO(), Curves: []Curve{{Setting: "static-split", Points: []CurvePoint{{Size: 1, Errors: 10}}}}}
	if err := none.WriteSVG(io.Discard); err == nil {
		t.Error("a frontier without a measured point was drawn")
	}
}

// A setting name with markup's characters is escaped, not markup.
func TestFrontierWriteSVGEscapes(t *testing.T) {
	f := Frontier{SLO: DefaultSLO(), Curves: []Curve{{Setting: `a<b & "c"`, Points: []CurvePoint{curvePoint(1, 1, 1.05, 1, 1.1, 0)}}}}
	var b bytes.Buffer
	if err := f.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range parseSVG(t, &b) {
		found = found || e.text == `a<b & "c": 1.00 cores`
	}
	if !found {
		t.Error(`no legend entry "a<b & "c": 1.00 cores"`)
	}
}

func TestAxisRange(t *testing.T) {
	tests := []struct{ lo, hi, from, to, step float64 }{
		{0, 1.7, 0, 2, 0.5},
		{0.95, 2.6, 0.5, 3, 0.5},
		{0.9, 1.2, 0.9, 1.2, 0.1}, // 0.3/5 rounds up to 0.1; 1.2/0.1 is 11.999... in floating point
		{1, 1.7, 1, 1.8, 0.2},
		{0, 0, 0, 1, 1},
		{0.5, 17, 0, 20, 5},
	}
	for _, tt := range tests {
		from, to, step := axisRange(tt.lo, tt.hi)
		if d := cmp.Diff([]float64{tt.from, tt.to, tt.step}, []float64{from, to, step}, cmpopts.EquateApprox(0, 1e-9)); d != "" {
			t.Errorf("axisRange(%v, %v) (-want +got):\n%s", tt.lo, tt.hi, d)
		}
	}
}

// TestAlonePairs: each batch phase pairs with the alone phase last run before it, not with its round's first one;
// a batch phase before any alone phase, and phases without a setting, pair with none.
func TestAlonePairs(t *testing.T) {
	phases := []Phase{
		{Name: "defaults 1", Setting: "defaults", Round: 1}, // 0: no alone before it
		{Name: AlonePhase, Round: 1},                        // 1
		{Name: "defaults 1/3", Setting: "defaults", Round: 1},
		{Name: "defaults 1", Setting: "defaults", Round: 1},
		{Name: AlonePhase, Round: 1}, // 4: the next setting's
		{Name: "static 1", Setting: "static", Round: 1},
		{Name: AlonePhase, Round: 2}, // 6
		{Name: "static 1", Setting: "static", Round: 2},
		{Name: "memory growth", Round: 2}, // 8: no setting
	}
	want := map[int]int{2: 1, 3: 1, 5: 4, 7: 6}
	if got := AlonePairs(phases); !maps.Equal(got, want) {
		t.Errorf("AlonePairs = %v, want %v", got, want)
	}
}
