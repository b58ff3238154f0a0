package colocation

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// The frontier picture's geometry, in SVG user units: the plot on the left, the legend on the right.
const (
	frontierWidth, frontierHeight = 960.0, 480.0
	frontierLeft                  = 60.0
	frontierRight                 = 300.0
	frontierTop                   = 30.0
	frontierBottom                = 55.0
)

// curveColors are the curves' colours, in the curves' order, repeated when there are more curves.
var curveColors = []string{"#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c"}

// WriteSVG draws f: batch work in cores across, the p99 ratio to alone up, a line per setting through its points
// in their order, each point's interval as a vertical bar, the SLO's ratio as a dashed line, and a legend with each
// setting's batch work at SLO. Points whose ratio was not measured are left out; a frontier with none to draw is an
// error.
func (f Frontier) WriteSVG(w io.Writer) error {
	xMax, yMin, yMax := 0.0, math.Min(1, f.SLO.Ratio), math.Max(1, f.SLO.Ratio)
	drawn := 0
	for _, c := range f.Curves {
		for _, p := range c.Points {
			if p.P99.Value > 0 {
				drawn++
				xMax = math.Max(xMax, p.BatchWork)
				yMin = math.Min(yMin, math.Min(p.P99.Value, p.P99.Low))
				yMax = math.Max(yMax, math.Max(p.P99.Value, p.P99.High))
			}
		}
	}
	if drawn == 0 {
		return fmt.Errorf("drawing the frontier: no point with a measured p99 ratio")
	}
	// A little room around the points keeps their markers and bars off the frame.
	pad := (yMax - yMin) / 25
	x0, x1, xStep := axisRange(0, xMax*1.04)
	y0, y1, yStep := axisRange(math.Max(0, yMin-pad), yMax+pad)
	innerW, innerH := frontierWidth-frontierLeft-frontierRight, frontierHeight-frontierTop-frontierBottom
	x := func(v float64) float64 { return frontierLeft + innerW*(v-x0)/(x1-x0) }
	y := func(v float64) float64 { return frontierTop + innerH*(1-(v-y0)/(y1-y0)) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n",
		frontierWidth, frontierHeight, frontierWidth, frontierHeight)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n", frontierLeft, frontierTop, innerW, innerH)
	for v := x0; v <= x1+xStep/1e6; v += xStep {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.3g</text>`+"\n", x(v), frontierTop+innerH+16, v)
	}
	for v := y0; v <= y1+yStep/1e6; v += yStep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`+"\n", frontierLeft, y(v), frontierLeft+innerW, y(v))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.3gx</text>`+"\n", frontierLeft-6, y(v)+4, v)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">batch work (cores of batch running alone)</text>`+"\n",
		frontierLeft+innerW/2, frontierHeight-14)
	fmt.Fprintf(&b, `<text x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">service p99 / alone</text>`+"\n",
		frontierTop+innerH/2, frontierTop+innerH/2)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#8c1c13" stroke-width="1.5" stroke-dasharray="6,4"/>`+"\n",
		frontierLeft, y(f.SLO.Ratio), frontierLeft+innerW, y(f.SLO.Ratio))

	for i, c := range f.Curves {
		drawCurve(&b, c, curveColors[i%len(curveColors)], x, y)
	}

	lx, ly := frontierLeft+innerW+20, frontierTop+8
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-weight="bold">batch work at SLO</text>`+"\n", lx, ly)
	for i, c := range f.Curves {
		ly += 20
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="14" height="4" fill="%s"/><text x="%.1f" y="%.1f">%s: %.2f cores</text>`+"\n",
			lx, ly-6, curveColors[i%len(curveColors)], lx+20, ly, html.EscapeString(c.Setting), BatchWorkAtSLO(c, f.SLO))
	}
	ly += 28
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#8c1c13" stroke-width="1.5" stroke-dasharray="6,4"/><text x="%.1f" y="%.1f">SLO: p99 %.2fx alone</text>`+"\n",
		lx, ly-4, lx+14, ly-4, lx+20, ly, f.SLO.Ratio)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10">bars: %s interval; the SLO also needs its</text>`+"\n", lx, ly+18, percent(f.Bootstrap.Level))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10">upper end at most %.2fx, and %s</text>`+"\n", lx, ly+31, f.SLO.UpperRatio, f.SLO.errors())
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// drawCurve draws c's measured points in color: a polyline through them, each one's interval as a bar with caps,
// and a marker whose tooltip gives the numbers.
func drawCurve(b *strings.Builder, c Curve, color string, x, y func(float64) float64) {
	var line []string
	for _, p := range c.Points {
		if p.P99.Value > 0 {
			line = append(line, fmt.Sprintf("%.1f,%.1f", x(p.BatchWork), y(p.P99.Value)))
		}
	}
	if len(line) == 0 {
		return
	}
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(line, " "), color)
	for _, p := range c.Points {
		if p.P99.Value <= 0 {
			continue
		}
		px, lo, hi := x(p.BatchWork), y(p.P99.Low), y(p.P99.High)
		fmt.Fprintf(b, `<path d="M%.1f,%.1f V%.1f M%.1f,%.1f H%.1f M%.1f,%.1f H%.1f" stroke="%s" stroke-width="1.2" fill="none"/>`+"\n",
			px, lo, hi, px-4, lo, px+4, px-4, hi, px+4, color)
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s, size %s: %.2f cores, node %s busy, p99 %.2fx [%.2f, %.2f], %d errors</title></circle>`+"\n",
			px, y(p.P99.Value), color, html.EscapeString(c.Setting), percent(p.Size), p.BatchWork, percent(p.NodeBusy),
			p.P99.Value, p.P99.Low, p.P99.High, p.Errors)
	}
}

// axisRange widens [lo, hi] to whole steps of a round size (1, 2 or 5 times a power of ten, about a fifth of the
// range) and returns the widened range and the step.
func axisRange(lo, hi float64) (from, to, step float64) {
	step = niceCeil((hi - lo) / 5)
	// The slack keeps a bound that is a whole step, up to floating point, from growing by a step.
	from, to = math.Floor(lo/step+1e-9)*step, math.Ceil(hi/step-1e-9)*step
	if to <= from {
		to = from + step
	}
	return from, to, step
}
