package colocation

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// The picture's geometry, in SVG user units.
const (
	plotWidth, plotHeight = 960.0, 420.0
	marginLeft            = 60.0
	marginRight           = 70.0
	marginTop             = 40.0
	marginBottom          = 50.0
)

// classColors are the stacked areas' colours, bottom up; the p99 line is drawn in black, the batch limit dashed.
var classColors = []string{"#4c72b0", "#dd8452", "#b8b8b8"}

// phaseColors are the bands' colours of the phases the benchmark runs; others are grey.
var phaseColors = map[string]string{AlonePhase: "#f0f0f0", "protected": "#e6eef8", "unprotected": "#f8e8e6"}

// gapLimit is the longest time between two points of one stretch of measurement: the time between phases (pods
// starting and stopping, the agent restarting) is left blank, not drawn as a line across.
const gapLimit = 3 * time.Second

// segments cuts points where two are more than gap apart.
func segments(points []Point, gap time.Duration) [][]Point {
	var out [][]Point
	start := 0
	for i := 1; i <= len(points); i++ {
		if i == len(points) || points[i].At.Sub(points[i-1].At) > gap {
			out = append(out, points[start:i])
			start = i
		}
	}
	return out
}

// drawSegment draws one stretch of points: the classes' stacked areas (bottom up; "" is Other), the batch limit and
// the p99 line.
func drawSegment(b *strings.Builder, seg []Point, classes []string, x func(time.Time) float64, y, yms func(float64) float64, cpus int) {
	below := make([]float64, len(seg))
	for ci, class := range classes {
		top := make([]float64, len(seg))
		var pts []string
		for i, p := range seg {
			share := p.CPU.Other
			if class != "" {
				share = p.CPU.Classes[class]
			}
			top[i] = below[i] + share
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.At), y(top[i])))
		}
		for i := len(seg) - 1; i >= 0; i-- {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(seg[i].At), y(below[i])))
		}
		fmt.Fprintf(b, `<polygon points="%s" fill="%s" fill-opacity="0.85"/>`+"\n", strings.Join(pts, " "), classColors[ci])
		below = top
	}
	var limit, p99 []string
	for _, p := range seg {
		if p.BatchQuota > 0 && cpus > 0 {
			limit = append(limit, fmt.Sprintf("%.1f,%.1f", x(p.At), y(p.BatchQuota/float64(cpus))))
		}
		if p.P99 > 0 {
			p99 = append(p99, fmt.Sprintf("%.1f,%.1f", x(p.At), yms(p.P99)))
		}
	}
	if len(limit) > 1 {
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="#8c1c13" stroke-width="1.5" stroke-dasharray="5,3"/>`+"\n", strings.Join(limit, " "))
	}
	if len(p99) > 1 {
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="black" stroke-width="1.5"/>`+"\n", strings.Join(p99, " "))
	}
}

// WriteSVG draws the run over time: the node's CPU use stacked by class (service, batch, other) on the left axis,
// the service's p99 latency on the right axis, the batch class's CPU limit (suppression) dashed, and the phases as
// labelled bands. serviceClass and batchClass name the classes as in the report.
func (r *Report) WriteSVG(w io.Writer, serviceClass, batchClass string) error {
	if len(r.Points) < 2 {
		return fmt.Errorf("drawing the run: %d points on its timeline, need at least 2", len(r.Points))
	}
	t0, t1 := r.Points[0].At, r.Points[len(r.Points)-1].At
	span := t1.Sub(t0).Seconds()
	innerW, innerH := plotWidth-marginLeft-marginRight, plotHeight-marginTop-marginBottom
	x := func(t time.Time) float64 { return marginLeft + innerW*t.Sub(t0).Seconds()/span }
	y := func(share float64) float64 { return marginTop + innerH*(1-math.Min(math.Max(share, 0), 1)) }
	maxP99 := 1.0
	for _, p := range r.Points {
		maxP99 = math.Max(maxP99, p.P99)
	}
	maxP99 = niceCeil(maxP99 * 1.1)
	yms := func(v float64) float64 { return marginTop + innerH*(1-v/maxP99) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n",
		plotWidth, plotHeight, plotWidth, plotHeight)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for _, ph := range r.Phases {
		x0, x1 := x(maxTime(ph.Start, t0)), x(minTime(ph.End, t1))
		if x1 <= x0 {
			continue
		}
		fill, ok := phaseColors[ph.Name]
		if !ok {
			fill = "#f4f4f4"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x0, marginTop, x1-x0, innerH, fill)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n", (x0+x1)/2, marginTop-6, ph.Name)
	}
	for _, seg := range segments(r.Points, gapLimit) {
		drawSegment(&b, seg, []string{serviceClass, batchClass, ""}, x, y, yms, r.CPUs)
	}
	axes(&b, innerW, innerH, span, maxP99)
	legend := []struct{ color, text string }{
		{classColors[0], serviceClass + " CPU"}, {classColors[1], batchClass + " CPU"}, {classColors[2], "other CPU"},
		{"black", "service p99 (right axis)"}, {"#8c1c13", batchClass + " CPU limit (dashed)"},
	}
	for i, l := range legend {
		lx := marginLeft + float64(i)*170
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`+"\n",
			lx, plotHeight-18, l.color, lx+16, plotHeight-8, l.text)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// axes draws the frame, the CPU axis (left, %), the latency axis (right, ms) and the time axis (s).
func axes(b *strings.Builder, innerW, innerH, span, maxP99 float64) {
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n", marginLeft, marginTop, innerW, innerH)
	for i := 0; i <= 4; i++ {
		f := float64(i) / 4
		yy := marginTop + innerH*(1-f)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%.0f %%</text>`+"\n", marginLeft-6, yy+4, 100*f)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%.3g ms</text>`+"\n", marginLeft+innerW+6, yy+4, maxP99*f)
	}
	step := niceCeil(span / 8)
	for s := 0.0; s <= span; s += step {
		xx := marginLeft + innerW*s/span
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.0f s</text>`+"\n", xx, marginTop+innerH+16, s)
	}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
