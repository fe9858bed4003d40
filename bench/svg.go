package main

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strconv"
)

// The report's figures are small hand-written SVG charts: line charts (with
// optional logarithmic axes) and grouped bar charts. No plotting library, so
// that the module's dependency tree stays small.

// palette holds the series colours (Okabe–Ito, readable by colour-blind eyes).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

// A series is one line of a line chart.
type series struct {
	name string
	x, y []float64
}

// lineChart is a chart of one or more series against a shared x axis.
type lineChart struct {
	title          string
	xLabel, yLabel string
	logX, logY     bool
	series         []series
}

// barChart is a grouped bar chart: one bar per series in each group.
type barChart struct {
	title  string
	yLabel string
	groups []string    // labels along the x axis
	names  []string    // series names, for the legend
	values [][]float64 // values[series][group]; NaN draws no bar
	ref    float64     // if positive, a dashed horizontal reference line
}

const (
	chartW, chartH             = 860, 420
	padL, padR, padT, padB     = 70, 270, 40, 60
	plotW, plotH               = chartW - padL - padR, chartH - padT - padB
	fontStyle                  = `font-family="sans-serif" font-size="12"`
	axisColour, gridColour     = "#333", "#ddd"
	minLogValue                = 1e-12
	legendLineH                = 18
	legendX                    = chartW - padR + 12
	bottomTickLabelOffset      = 18
	maxLinearTicks, maxLogSpan = 6, 12
)

// axis maps data values to pixel offsets along one axis.
type axis struct {
	lo, hi float64
	log    bool
}

func newAxis(values []float64, log, fromZero bool) axis {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) || (log && v <= 0) {
			continue
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if math.IsInf(lo, 1) { // no usable value
		lo, hi = 1, 10
	}
	if log {
		lo = math.Pow(10, math.Floor(math.Log10(lo)))
		hi = math.Pow(10, math.Ceil(math.Log10(hi)))
		if lo == hi {
			hi = lo * 10
		}
		return axis{lo: lo, hi: hi, log: true}
	}
	if fromZero && lo > 0 {
		lo = 0
	}
	if lo == hi {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / maxLinearTicks)
	return axis{lo: math.Floor(lo/step) * step, hi: math.Ceil(hi/step) * step}
}

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// frac returns v's position on the axis in [0, 1].
func (a axis) frac(v float64) float64 {
	if a.log {
		v = max(v, a.lo)
		return (math.Log10(v) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo))
	}
	return (v - a.lo) / (a.hi - a.lo)
}

func (a axis) ticks() []float64 {
	var t []float64
	if a.log {
		span := int(math.Round(math.Log10(a.hi / a.lo)))
		step := 1
		if span > maxLogSpan/2 {
			step = 2
		}
		for e := 0; e <= span; e += step {
			t = append(t, a.lo*math.Pow(10, float64(e)))
		}
		return t
	}
	step := niceStep((a.hi - a.lo) / maxLinearTicks)
	for k := 0; a.lo+float64(k)*step <= a.hi+step/2; k++ {
		t = append(t, a.lo+float64(k)*step)
	}
	return t
}

// tickLabel formats a tick value compactly: 1k, 2.5M, 0.01.
func tickLabel(v float64) string {
	av := math.Abs(v)
	switch {
	case av >= 1e9:
		return strconv.FormatFloat(v/1e9, 'g', 3, 64) + "G"
	case av >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case av >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	case av < 1e-9:
		return "0"
	case math.Abs(v-math.Round(v)) < 1e-9:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

type svgWriter struct{ bytes.Buffer }

func (w *svgWriter) f(format string, args ...any) { fmt.Fprintf(w, format, args...) }

func (w *svgWriter) header(title string) {
	w.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`+"\n", chartW, chartH, chartW, chartH)
	w.f(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	w.f(`<text x="%d" y="22" font-family="sans-serif" font-size="15" font-weight="bold">%s</text>`+"\n", padL, html.EscapeString(title))
}

func (w *svgWriter) text(x, y float64, anchor, s string, extra string) {
	w.f(`<text x="%.1f" y="%.1f" text-anchor="%s" %s%s>%s</text>`+"\n", x, y, anchor, fontStyle, extra, html.EscapeString(s))
}

// yAxis draws the y grid, ticks and label.
func (w *svgWriter) yAxis(a axis, label string) {
	for _, t := range a.ticks() {
		y := padT + plotH*(1-a.frac(t))
		w.f(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", padL, y, padL+plotW, y, gridColour)
		w.text(padL-6, y+4, "end", tickLabel(t), "")
	}
	w.f(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`+"\n", padL, padT, padL, padT+plotH, axisColour)
	w.text(16, padT+plotH/2, "middle", label, fmt.Sprintf(` transform="rotate(-90 16 %d)"`, padT+plotH/2))
}

func (w *svgWriter) legend(names []string, dashed bool) {
	for i, n := range names {
		y := float64(padT + 10 + i*legendLineH)
		c := palette[i%len(palette)]
		if dashed {
			w.f(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="2.5"%s/>`+"\n", legendX, y-4, legendX+22, y-4, c, dash(i))
		} else {
			w.f(`<rect x="%d" y="%.1f" width="14" height="10" fill="%s"/>`+"\n", legendX, y-9, c)
		}
		w.text(float64(legendX+28), y, "start", n, "")
	}
}

// dash gives series beyond the palette's first few a dash pattern, so that
// lines stay distinguishable in greyscale.
func dash(i int) string {
	switch i % 3 {
	case 1:
		return ` stroke-dasharray="6 3"`
	case 2:
		return ` stroke-dasharray="2 2"`
	}
	return ""
}

// render returns the chart as an SVG document.
func (c lineChart) render() []byte {
	var xs, ys []float64
	for _, s := range c.series {
		xs = append(xs, s.x...)
		ys = append(ys, s.y...)
	}
	ax, ay := newAxis(xs, c.logX, false), newAxis(ys, c.logY, true)
	var w svgWriter
	w.header(c.title)
	w.yAxis(ay, c.yLabel)
	for _, t := range ax.ticks() {
		x := padL + plotW*ax.frac(t)
		w.f(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x, padT, x, padT+plotH, gridColour)
		w.text(x, padT+plotH+bottomTickLabelOffset, "middle", tickLabel(t), "")
	}
	w.f(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`+"\n", padL, padT+plotH, padL+plotW, padT+plotH, axisColour)
	w.text(padL+plotW/2, chartH-14, "middle", c.xLabel, "")
	names := make([]string, len(c.series))
	for i, s := range c.series {
		names[i] = s.name
		// A point that cannot be drawn (NaN, or not positive on a log
		// axis) breaks the line rather than being bridged.
		var d bytes.Buffer
		pen := "M"
		for j := range s.x {
			if j >= len(s.y) || math.IsNaN(s.y[j]) || (c.logY && s.y[j] <= 0) || (c.logX && s.x[j] <= 0) {
				pen = "M"
				continue
			}
			fmt.Fprintf(&d, "%s%.1f %.1f ", pen, padL+plotW*ax.frac(s.x[j]), padT+plotH*(1-ay.frac(s.y[j])))
			pen = "L"
		}
		if d.Len() > 0 {
			w.f(`<path fill="none" stroke="%s" stroke-width="2" d="%s"%s/>`+"\n", palette[i%len(palette)], bytes.TrimSpace(d.Bytes()), dash(i))
		}
	}
	w.legend(names, true)
	w.f("</svg>\n")
	return w.Bytes()
}

// render returns the chart as an SVG document.
func (c barChart) render() []byte {
	var vs []float64
	for _, s := range c.values {
		vs = append(vs, s...)
	}
	if c.ref > 0 {
		vs = append(vs, c.ref)
	}
	ay := newAxis(vs, false, true)
	var w svgWriter
	w.header(c.title)
	w.yAxis(ay, c.yLabel)
	groupW := float64(plotW) / float64(max(1, len(c.groups)))
	barW := groupW * 0.8 / float64(max(1, len(c.names)))
	for g, label := range c.groups {
		x0 := padL + groupW*float64(g) + groupW*0.1
		for s := range c.names {
			if g >= len(c.values[s]) || math.IsNaN(c.values[s][g]) {
				continue
			}
			v := c.values[s][g]
			h := plotH * ay.frac(v)
			w.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s</title></rect>`+"\n",
				x0+barW*float64(s), padT+plotH-h, barW*0.92, h, palette[s%len(palette)],
				html.EscapeString(c.names[s]), html.EscapeString(label), strconv.FormatFloat(v, 'g', 4, 64))
		}
		w.text(padL+groupW*(float64(g)+0.5), padT+plotH+bottomTickLabelOffset, "middle", label, "")
	}
	if c.ref > 0 {
		y := padT + plotH*(1-ay.frac(c.ref))
		w.f(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-dasharray="4 3"/>`+"\n", padL, y, padL+plotW, y, axisColour)
	}
	w.f(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`+"\n", padL, padT+plotH, padL+plotW, padT+plotH, axisColour)
	w.legend(c.names, false)
	w.f("</svg>\n")
	return w.Bytes()
}
