package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Series is one named line of a plot.
type Series struct {
	Name   string
	Points []XY
}

// XY is one point of a series.
type XY struct{ X, Y float64 }

// Bar is one named bar of a bar chart.
type Bar struct {
	Name  string
	Value float64
}

// The plots are hand-written SVG: a fixed canvas, axes with a few labelled
// ticks, one colour per series and a legend, so a person reads them at a
// glance in a browser or on a forge without any plotting library.
const (
	width, height          = 720, 420
	left, right, top, foot = 80, 190, 40, 50
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// LinePlot draws series as lines with markers. With logX the x axis is
// logarithmic (every x must be positive).
func LinePlot(title, xLabel, yLabel string, logX bool, series []Series) string {
	var xs, ys []float64
	for _, s := range series {
		for _, p := range s.Points {
			if logX && p.X <= 0 {
				continue
			}
			xs, ys = append(xs, p.X), append(ys, p.Y)
		}
	}
	if len(xs) == 0 {
		return emptyPlot(title)
	}
	xmin, xmax := bounds(xs)
	_, ymax := bounds(ys)
	ymin := 0.0
	if logX {
		xmin, xmax = math.Log10(xmin), math.Log10(xmax)
	}
	if xmax == xmin {
		xmin, xmax = xmin-1, xmax+1
	}
	ymax = niceCeil(ymax)
	if ymax <= ymin {
		ymax = ymin + 1
	}
	px := func(x float64) float64 {
		if logX {
			x = math.Log10(x)
		}
		return left + (x-xmin)/(xmax-xmin)*(width-left-right)
	}
	py := func(y float64) float64 { return height - foot - (y-ymin)/(ymax-ymin)*(height-top-foot) }
	var b strings.Builder
	header(&b, title, xLabel, yLabel)
	// y ticks
	for i := 0; i <= 5; i++ {
		y := ymin + (ymax-ymin)*float64(i)/5
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, py(y), width-right, py(y))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" font-size="11">%s</text>`+"\n", left-6, py(y)+4, num(y))
	}
	// x ticks
	for _, x := range xTicks(xmin, xmax, logX) {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", px(x), top, px(x), height-foot)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" font-size="11">%s</text>`+"\n", px(x), height-foot+16, num(x))
	}
	axes(&b)
	for i, s := range series {
		colour := palette[i%len(palette)]
		var path []string
		for _, p := range s.Points {
			if logX && p.X <= 0 {
				continue
			}
			path = append(path, fmt.Sprintf("%.1f,%.1f", px(p.X), py(p.Y)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", colour, strings.Join(path, " "))
		if len(s.Points) <= 12 {
			for _, p := range s.Points {
				if logX && p.X <= 0 {
					continue
				}
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(p.X), py(p.Y), colour)
			}
		}
		legend(&b, i, s.Name, colour)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// BarPlot draws one horizontal bar per entry, labelled with its value.
func BarPlot(title, unit string, bars []Bar) string {
	if len(bars) == 0 {
		return emptyPlot(title)
	}
	h := top + 26*len(bars) + foot
	var vmax float64
	for _, bar := range bars {
		if !math.IsNaN(bar.Value) {
			vmax = max(vmax, bar.Value)
		}
	}
	if vmax <= 0 {
		vmax = 1
	}
	const labelW, plotW = 230, 380
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">`+"\n", width, h, width, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="24" text-anchor="middle" font-size="15">%s</text>`+"\n", width/2, esc(title))
	for i, bar := range bars {
		y := top + 26*i
		w := bar.Value / vmax * plotW
		if math.IsNaN(w) || w < 0 {
			w = 0
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" font-size="12">%s</text>`+"\n", labelW-6, y+15, esc(bar.Name))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="20" fill="%s"/>`+"\n", labelW, y+2, w, palette[i%len(palette)])
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="12">%s %s</text>`+"\n", float64(labelW)+w+6, y+15, num(bar.Value), esc(unit))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func header(b *strings.Builder, title, xLabel, yLabel string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">`+"\n", width, height, width, height)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(b, `<text x="%d" y="24" text-anchor="middle" font-size="15">%s</text>`+"\n", (width-right+left)/2, esc(title))
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" font-size="12">%s</text>`+"\n", (width-right+left)/2, height-12, esc(xLabel))
	fmt.Fprintf(b, `<text x="18" y="%d" text-anchor="middle" font-size="12" transform="rotate(-90 18 %d)">%s</text>`+"\n", (height-foot+top)/2, (height-foot+top)/2, esc(yLabel))
}

func axes(b *strings.Builder) {
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, height-foot, width-right, height-foot)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, height-foot)
}

func legend(b *strings.Builder, i int, name, colour string) {
	y := top + 18*i
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="14" height="4" fill="%s"/>`+"\n", width-right+12, y+6, colour)
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="11">%s</text>`+"\n", width-right+32, y+11, esc(name))
}

func emptyPlot(title string) string {
	return fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="80" viewBox="0 0 %d 80" font-family="sans-serif">`+"\n"+
		`<rect width="100%%" height="100%%" fill="white"/>`+"\n"+
		`<text x="%d" y="45" text-anchor="middle" font-size="14">%s: nothing measured</text>`+"\n</svg>\n", width, width, width/2, esc(title))
}

func esc(s string) string { return html.EscapeString(s) }

func bounds(v []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		lo, hi = min(lo, x), max(hi, x)
	}
	if math.IsInf(lo, 1) {
		return 0, 1
	}
	return lo, hi
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// xTicks returns tick positions in data units: powers of ten on a log
// axis (lo and hi are log10 there), five even steps otherwise.
func xTicks(lo, hi float64, logX bool) []float64 {
	var ticks []float64
	if logX {
		for e := math.Floor(lo); e <= math.Ceil(hi); e++ {
			for _, m := range []float64{1, 2, 5} {
				x := m * math.Pow(10, e)
				if l := math.Log10(x); l >= lo-1e-9 && l <= hi+1e-9 {
					ticks = append(ticks, x)
				}
			}
		}
		return ticks
	}
	for i := 0; i <= 5; i++ {
		ticks = append(ticks, lo+(hi-lo)*float64(i)/5)
	}
	return ticks
}

// num formats a figure with about three significant digits.
func num(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "–"
	case a >= 100000:
		return fmt.Sprintf("%.0fk", v/1000)
	case a >= 1000:
		return fmt.Sprintf("%.1fk", v/1000)
	case a >= 100 || a == 0:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}
