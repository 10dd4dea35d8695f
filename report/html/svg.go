package html

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/stats"
)

// The chart helper draws static inline SVG: the page must read without
// JavaScript and without a network, so every chart is finished markup.
// Text is escaped here because the SVG reaches the template as trusted HTML.

// Chart geometry in viewBox units; the SVG scales to its container. Every
// chart is drawn twice, at two widths, and the page shows the one that fits
// (a media query): scaled to its card, a viewBox unit stays within a few
// percent of a CSS pixel at 1280 px and at 390 px, so 12-unit text never
// shrinks below 11 px, where one 560-unit drawing squeezed onto a phone
// came out at 7 px.
const (
	padTop   = 14.0
	padRight = 18.0
	padBot   = 50.0
	fontPx   = 12.0
	charPx   = 6.9 // rough advance of one character at fontPx, for label room
)

// geom is the size of one drawing of a chart.
type geom struct {
	W, H   float64
	narrow bool // the phone drawing, class "chart narrow"
}

var (
	// wideGeom fits a card of the two-column grid (about 520 px wide
	// inside) and a one-column card up to 600 px viewports.
	wideGeom = geom{W: 520, H: 310}
	// narrowGeom fits a phone card: 390 px less the page's and the card's
	// padding is 340 px.
	narrowGeom = geom{W: 320, H: 290, narrow: true}
)

// axis is one axis of a chart. Unit is shown in the axis label.
type axis struct {
	Label string
	Unit  string
	Log   bool // logarithmic, for distributions spanning decades
	// Log2 is a logarithmic axis with ticks at powers of two when the
	// values span more than log2Span, else a linear one: concurrency
	// doubles from point to point, and on a linear axis 1, 2, 4 and 8
	// crowd together at the left of 64.
	Log2  bool
	Whole bool // linear ticks at whole numbers only (a turn's index)
	Zero  bool // include zero in the range (bars, latencies)
	Max   float64
	HasMx bool // Max is a fixed upper bound (percentiles end at 100)
	fewer bool // a narrow x axis: about four ticks, not six, so labels keep apart
}

func (a axis) title() string {
	if a.Unit == "" {
		return a.Label
	}
	return a.Label + " (" + a.Unit + ")"
}

// xy is one point; Lo/Hi, when finite, draw a whisker through it.
type xy struct {
	X, Y   float64
	Lo, Hi float64
	Tip    string
	Mark   bool // draw a marker here (lines with many points mark only a few)
}

func pt(x, y float64, tip string) xy {
	return xy{X: x, Y: y, Lo: math.NaN(), Hi: math.NaN(), Tip: tip, Mark: true}
}

// series is one line of a line chart. Color and Marker identify it; Old
// (a baseline) draws the same identity dashed with hollow markers, so old
// and new stay paired without relying on colour alone.
type series struct {
	Name   string
	Color  int
	Marker int
	Old    bool
	Step   bool // a CDF: horizontal then vertical between points
	Dots   bool // markers only, no line (marks on another series' points)
	Pts    []xy
}

// lineChart is a line/scatter chart with optional whiskers.
type lineChart struct {
	Title  string
	X, Y   axis
	Series []series
	Rules  []rule
}

// rule is a labelled threshold line across the plot: a declared SLO. OnX
// draws it vertically at X = V (a latency on a CDF), else horizontally.
// Label is drawn beside the line; Title, its tooltip, defaults to Label.
type rule struct {
	V            float64
	Label, Title string
	OnX          bool
}

// barSeries is one set of bars, one value per category (NaN: none).
type barSeries struct {
	Name   string
	Color  int
	Old    bool
	Vals   []float64
	Lo, Hi []float64 // optional whiskers, NaN for none
	Tips   []string
}

// barChart draws grouped or stacked bars, vertical or horizontal.
type barChart struct {
	Title      string
	Cats       []string
	Series     []barSeries
	V          axis // the value axis
	Horizontal bool
	Stacked    bool
	OldCats    []bool // categories drawn as baseline (stacked rows)
}

// legendItem is rendered as HTML next to the SVG; Key matches data-k in it.
type legendItem struct {
	Key    int
	Name   string
	Swatch string // trusted SVG markup
}

func esc(s string) string { return html.EscapeString(s) }

func finite(v ...float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// f formats a coordinate; callers only pass finite values.
func f(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// fmtNum formats a measurement with about four significant digits.
func fmtNum(v float64) string {
	if !finite(v) {
		return "–"
	}
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 10000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return trimZeros(strconv.FormatFloat(v, 'f', 1, 64))
	case a >= 10:
		return trimZeros(strconv.FormatFloat(v, 'f', 2, 64))
	case a >= 1:
		return trimZeros(strconv.FormatFloat(v, 'f', 3, 64))
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// scale maps data values onto a pixel range.
type scale struct {
	lo, hi   float64 // data range
	p0, p1   float64 // pixel range
	log      bool
	ticks    []float64
	tickText []string
}

func (s scale) at(v float64) float64 {
	if s.log {
		v, lo, hi := math.Log10(math.Max(v, s.lo)), math.Log10(s.lo), math.Log10(s.hi)
		return s.p0 + (v-lo)/(hi-lo)*(s.p1-s.p0)
	}
	return s.p0 + (v-s.lo)/(s.hi-s.lo)*(s.p1-s.p0)
}

// newScale picks a nice range and ticks covering vals.
func newScale(a axis, vals []float64, p0, p1 float64) scale {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if !finite(v) || ((a.Log || a.Log2) && v <= 0) {
			continue
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
		a.Log, a.Log2 = false, false
	}
	if a.Log && hi/lo < 10 {
		a.Log = false // under a decade a log axis only hides the ticks
	}
	if a.Log2 && hi/lo <= log2Span {
		a.Log2 = false // 2, 4 and 8 sit well apart on a linear axis
	}
	s := scale{p0: p0, p1: p1, log: a.Log || a.Log2}
	if a.Log2 {
		s.lo, s.hi, s.ticks = log2Ticks(lo, hi, math.Abs(p1-p0))
	} else if a.Log {
		// A narrow plot labels decades alone past two of them.
		s.lo, s.hi, s.ticks = logTicks(lo, hi, math.Abs(p1-p0) < 320)
	} else {
		if a.Zero {
			lo, hi = math.Min(lo, 0), math.Max(hi, 0)
		}
		if a.HasMx {
			hi = a.Max
		}
		n := 5
		if a.fewer {
			n = 3
		}
		minStep := 0.0
		if a.Whole {
			minStep = 1
		}
		s.lo, s.hi, s.ticks = linTicks(lo, hi, n, minStep)
		if a.HasMx {
			s.hi = a.Max
		}
	}
	for _, t := range s.ticks {
		s.tickText = append(s.tickText, tickLabel(t, s.ticks, s.log))
	}
	return s
}

// niceStep rounds a raw step to 1, 2 or 5 × 10^k.
func niceStep(raw float64) float64 {
	exp := math.Floor(math.Log10(raw))
	frac := raw / math.Pow(10, exp)
	var n float64
	switch {
	case frac <= 1:
		n = 1
	case frac <= 2:
		n = 2
	case frac <= 5:
		n = 5
	default:
		n = 10
	}
	return n * math.Pow(10, exp)
}

func linTicks(lo, hi float64, n int, minStep float64) (float64, float64, []float64) {
	if hi == lo {
		d := math.Abs(lo) * 0.1
		if d == 0 {
			d = 1
		}
		lo, hi = lo-d, hi+d
		if lo < 0 && hi/2 > 0 && lo+d >= 0 {
			lo = 0 // a constant positive value sits on a zero-based axis
		}
	}
	step := math.Max(niceStep((hi-lo)/float64(n)), minStep)
	nlo := math.Floor(lo/step) * step
	nhi := math.Ceil(hi/step) * step
	var ticks []float64
	for i := 0; ; i++ {
		t := nlo + float64(i)*step
		if t > nhi+step/2 || i > 50 {
			break
		}
		ticks = append(ticks, math.Round(t/step)*step)
	}
	return nlo, nhi, ticks
}

func logTicks(lo, hi float64, narrow bool) (float64, float64, []float64) {
	e0, e1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	mults := []float64{1, 2, 5}
	if e1-e0 > 3 || narrow && e1-e0 > 2 {
		mults = []float64{1}
	}
	var all []float64
	for e := e0; e <= e1; e++ {
		for _, m := range mults {
			all = append(all, m*math.Pow(10, e))
		}
	}
	// The range runs from the last tick at or below lo to the first at or above hi.
	nlo, nhi := all[0], all[len(all)-1]
	for _, t := range all {
		if t <= lo {
			nlo = t
		}
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i] >= hi {
			nhi = all[i]
		}
	}
	var ticks []float64
	for _, t := range all {
		if t >= nlo*0.999 && t <= nhi*1.001 {
			ticks = append(ticks, t)
		}
	}
	return nlo, nhi, ticks
}

// log2Span is how many times its smallest value an axis's largest must be
// before a Log2 axis is logarithmic.
const log2Span = 4.0

// log2Ticks spans lo..hi with powers of two, every one of them while
// their labels keep apart across width units, else every second, third…
func log2Ticks(lo, hi, width float64) (float64, float64, []float64) {
	e0, e1 := math.Floor(math.Log2(lo)+1e-9), math.Ceil(math.Log2(hi)-1e-9)
	room := float64(len(tickLabel(math.Exp2(e1), nil, true)))*charPx + 14
	fit := max(2, int(width/room)+1)
	step := 1.0
	for (e1-e0)/step+1 > float64(fit) {
		step++
	}
	e1 = e0 + math.Ceil((e1-e0)/step)*step // the axis ends on a tick
	var ticks []float64
	for e := e0; e <= e1+1e-9; e += step {
		ticks = append(ticks, math.Exp2(e))
	}
	return math.Exp2(e0), math.Exp2(e1), ticks
}

// tickLabel prints a linear tick with as many decimals as the step needs,
// and a log tick as it is.
func tickLabel(t float64, ticks []float64, log bool) string {
	if !log && len(ticks) > 1 {
		if step := ticks[1] - ticks[0]; step > 0 && step < 1 {
			return strconv.FormatFloat(t, 'f', int(math.Ceil(-math.Log10(step)-1e-9)), 64)
		}
	}
	if math.Abs(t) >= 10000 && math.Mod(t, 1000) == 0 {
		return strconv.FormatFloat(t/1000, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(t, 'f', -1, 64)
}

// frame draws grid, ticks and axis titles; returns the plot box.
func frame(b *strings.Builder, g geom, xs, ys scale, xTitle, yTitle string, xCats []string) {
	left, right := xs.p0, xs.p1
	top, bottom := ys.p1, ys.p0
	b.WriteString(`<g class="grid">`)
	for i, t := range ys.ticks {
		y := ys.at(t)
		fmt.Fprintf(b, `<line x1="%s" x2="%s" y1="%s" y2="%s"/>`, f(left), f(right), f(y), f(y))
		fmt.Fprintf(b, `<text class="tick" x="%s" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`, f(left-6), f(y), esc(ys.tickText[i]))
	}
	if xCats == nil {
		for i, t := range xs.ticks {
			x := xs.at(t)
			fmt.Fprintf(b, `<line class="v" x1="%s" x2="%s" y1="%s" y2="%s"/>`, f(x), f(x), f(top), f(bottom))
			fmt.Fprintf(b, `<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`, f(x), f(bottom+16), esc(xs.tickText[i]))
		}
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(b, `<path class="axis" d="M%s %sV%sH%s"/>`, f(left), f(top), f(bottom), f(right))
	fmt.Fprintf(b, `<text class="atitle" x="%s" y="%s" text-anchor="middle">%s</text>`, f((left+right)/2), f(g.H-8), esc(xTitle))
	fmt.Fprintf(b, `<text class="atitle" transform="translate(14 %s) rotate(-90)" text-anchor="middle">%s</text>`, f((top+bottom)/2), esc(yTitle))
}

func leftPad(ys scale) float64 {
	w := 0
	for _, t := range ys.tickText {
		w = max(w, len(t))
	}
	return 30 + float64(w)*charPx
}

// markerPath draws marker kind k centred on (x, y).
func markerPath(k int, x, y float64) string {
	const r = 4.2
	switch k % 6 {
	case 0:
		return fmt.Sprintf("M%s %sa%s %s 0 1 0 %s 0a%s %s 0 1 0 %s 0Z", f(x-r), f(y), f(r), f(r), f(2*r), f(r), f(r), f(-2*r))
	case 1:
		return fmt.Sprintf("M%s %sh%sv%sh%sZ", f(x-r*0.85), f(y-r*0.85), f(1.7*r), f(1.7*r), f(-1.7*r))
	case 2:
		return fmt.Sprintf("M%s %sL%s %sL%s %sZ", f(x), f(y-r*1.1), f(x+r), f(y+r*0.8), f(x-r), f(y+r*0.8))
	case 3:
		return fmt.Sprintf("M%s %sL%s %sL%s %sL%s %sZ", f(x), f(y-r*1.2), f(x+r), f(y), f(x), f(y+r*1.2), f(x-r), f(y))
	case 4:
		return fmt.Sprintf("M%s %sL%s %sL%s %sZ", f(x), f(y+r*1.1), f(x+r), f(y-r*0.8), f(x-r), f(y-r*0.8))
	}
	w := r * 0.45
	return fmt.Sprintf("M%s %sh%sv%sh%sv%sh%sv%sh%sv%sh%sv%sZ",
		f(x-w), f(y-r), f(2*w), f(r-w), f(r-w), f(2*w), f(w-r), f(r-w), f(-2*w), f(w-r), f(w-r), f(-2*w))
}

const oldDash = "5 4"

func classes(color int, old bool) string {
	c := fmt.Sprintf("c%d", color)
	if old {
		c += " old"
	}
	return c
}

// swatch is the legend's small picture of a series.
func swatch(color, marker int, old, line bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="sw %s" viewBox="0 0 28 12" width="28" height="12" aria-hidden="true">`, classes(color, old))
	if line {
		dash := ""
		if old {
			dash = ` stroke-dasharray="4 3"`
		}
		fmt.Fprintf(&b, `<path class="ln" d="M1 6H27"%s/>`, dash)
		if marker >= 0 {
			fmt.Fprintf(&b, `<path class="mk" d="%s"/>`, markerPath(marker, 14, 6))
		}
	} else if marker >= 0 {
		fmt.Fprintf(&b, `<path class="mk" d="%s"/>`, markerPath(marker, 14, 6)) // a series of markers alone
	} else {
		fmt.Fprintf(&b, `<rect class="bar" x="7" y="1" width="14" height="10" rx="1"/>`)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// svg renders a line chart at the wide size, and its legend.
func (c lineChart) svg() (string, []legendItem) { return c.svgAt(wideGeom) }

// svgAt renders a line chart at size g, and its legend.
func (c lineChart) svgAt(g geom) (string, []legendItem) {
	var xv, yv []float64
	for _, s := range c.Series {
		for _, p := range s.Pts {
			if !finite(p.X, p.Y) {
				continue
			}
			xv = append(xv, p.X)
			yv = append(yv, p.Y)
			if finite(p.Lo) {
				yv = append(yv, p.Lo)
			}
			if finite(p.Hi) {
				yv = append(yv, p.Hi)
			}
		}
	}
	if len(xv) > 0 {
		for _, r := range c.Rules {
			if !finite(r.V) {
				continue
			}
			if r.OnX {
				xv = append(xv, r.V)
			} else {
				yv = append(yv, r.V)
			}
		}
	}
	ys := newScale(c.Y, yv, g.H-padBot, padTop)
	c.X.fewer = g.narrow
	xs := newScale(c.X, xv, leftPad(ys), g.W-padRight)
	var b strings.Builder
	openSVG(&b, g, c.Title)
	frame(&b, g, xs, ys, c.X.title(), c.Y.title(), nil)
	if len(xv) > 0 {
		drawRules(&b, xs, ys, c.Rules)
	}
	var legend []legendItem
	var marks [][2]float64   // markers, for the rule labels to avoid
	var lines [][][2]float64 // and the curves
	for k, s := range c.Series {
		fmt.Fprintf(&b, `<g class="s %s" data-k="%d">`, classes(s.Color, s.Old), k)
		var d strings.Builder
		var line [][2]float64
		for _, p := range s.Pts {
			if !finite(p.X, p.Y) {
				continue
			}
			x, y := xs.at(p.X), ys.at(p.Y)
			switch {
			case d.Len() == 0:
				fmt.Fprintf(&d, "M%s %s", f(x), f(y))
			case s.Step:
				fmt.Fprintf(&d, "H%sV%s", f(x), f(y))
				line = append(line, [2]float64{x, line[len(line)-1][1]})
			default:
				fmt.Fprintf(&d, "L%s %s", f(x), f(y))
			}
			line = append(line, [2]float64{x, y})
		}
		if s.Dots {
			d.Reset()
			line = nil
		}
		lines = append(lines, line)
		if d.Len() > 0 {
			dash := ""
			if s.Old {
				dash = ` stroke-dasharray="` + oldDash + `"`
			}
			fmt.Fprintf(&b, `<path class="ln" d="%s"%s/>`, d.String(), dash)
		}
		for _, p := range s.Pts {
			if !finite(p.X, p.Y) {
				continue
			}
			x := xs.at(p.X)
			if finite(p.Lo, p.Hi) {
				lo, hi := ys.at(p.Lo), ys.at(p.Hi)
				fmt.Fprintf(&b, `<path class="wh" d="M%s %sV%sM%s %sh8M%s %sh8"/>`, f(x), f(lo), f(hi), f(x-4), f(lo), f(x-4), f(hi))
			}
			if p.Mark {
				fmt.Fprintf(&b, `<path class="mk" d="%s"><title>%s</title></path>`, markerPath(s.Marker, x, ys.at(p.Y)), esc(s.Name+": "+p.Tip))
				marks = append(marks, [2]float64{x, ys.at(p.Y)})
			}
		}
		b.WriteString(`</g>`)
		legend = append(legend, legendItem{Key: k, Name: s.Name, Swatch: swatch(s.Color, s.Marker, s.Old, !s.Dots)})
	}
	if len(xv) > 0 {
		drawRuleLabels(&b, xs, ys, c.Rules, marks, lines)
	}
	b.WriteString(`</svg>`)
	return b.String(), legend
}

// drawRules draws each threshold as a dashed line, under the series.
func drawRules(b *strings.Builder, xs, ys scale, rules []rule) {
	left, right, top, bottom := xs.p0, xs.p1, ys.p1, ys.p0
	for _, r := range rules {
		if !finite(r.V) {
			continue
		}
		b.WriteString(`<g class="rule">`)
		if r.OnX {
			x := xs.at(r.V)
			fmt.Fprintf(b, `<line x1="%s" x2="%s" y1="%s" y2="%s"/>`, f(x), f(x), f(top), f(bottom))
		} else {
			y := ys.at(r.V)
			fmt.Fprintf(b, `<line x1="%s" x2="%s" y1="%s" y2="%s"/>`, f(left), f(right), f(y), f(y))
		}
		fmt.Fprintf(b, `<title>%s</title></g>`, esc(r.title()))
	}
}

func (r rule) title() string {
	if r.Title != "" {
		return r.Title
	}
	return r.Label
}

// box is a rectangle in viewBox units.
type box struct{ x0, y0, x1, y1 float64 }

func (a box) overlaps(b box) bool {
	return math.Min(a.x1, b.x1) > math.Max(a.x0, b.x0) && math.Min(a.y1, b.y1) > math.Max(a.y0, b.y0)
}

func (a box) has(x, y float64) bool { return x >= a.x0 && x <= a.x1 && y >= a.y0 && y <= a.y1 }

// outside is how far a reaches past b.
func (a box) outside(b box) float64 {
	return math.Max(0, b.x0-a.x0) + math.Max(0, a.x1-b.x1) + math.Max(0, b.y0-a.y0) + math.Max(0, a.y1-b.y1)
}

// rlabelCharPx is the advance of a character of a rule's label (bold),
// a little over charPx so that an estimate errs towards more room.
const rlabelCharPx = 7.6

// ruleLabel is where a rule's label is drawn: the text's anchor point.
type ruleLabel struct {
	x, y   float64
	anchor string
	box    box
}

func labelAt(x, y float64, anchor string, w float64) ruleLabel {
	x0 := x
	if anchor == "end" {
		x0 = x - w
	}
	return ruleLabel{x, y, anchor, box{x0, y - 11, x0 + w, y + 3}}
}

// drawRuleLabels writes each rule's label inside the plot, over the
// series, where it keeps clear of the plot's edges, of the other labels,
// of the other rules' lines and of the data (pts: markers; lines: the
// curves through them), in that order of weight: a label on a label, or
// on the line of the other rule, is unreadable, one on a curve is not.
// Candidates run along the line: for a horizontal rule at either end
// (and beside each vertical rule), above or below it; for a vertical one
// at its foot or its top, either side.
func drawRuleLabels(b *strings.Builder, xs, ys scale, rules []rule, pts [][2]float64, lines [][][2]float64) {
	plot := box{xs.p0, ys.p1, xs.p1, ys.p0}
	var vx, hy []float64 // the rules' lines
	for _, r := range rules {
		switch {
		case !finite(r.V):
		case r.OnX:
			vx = append(vx, xs.at(r.V))
		default:
			hy = append(hy, ys.at(r.V))
		}
	}
	var placed []box
	for _, r := range rules {
		if !finite(r.V) || r.Label == "" {
			continue
		}
		w := float64(len([]rune(r.Label))) * rlabelCharPx
		var cands []ruleLabel
		var self float64 // the rule's own line, which its label sits beside
		if r.OnX {
			x := xs.at(r.V)
			self = x
			for _, y := range []float64{plot.y1 - 6, plot.y0 + 15} {
				cands = append(cands, labelAt(x-4, y, "end", w), labelAt(x+4, y, "start", w))
			}
		} else {
			y := ys.at(r.V)
			self = y
			for _, ty := range []float64{y - 5, y + 15} {
				cands = append(cands, labelAt(plot.x1-4, ty, "end", w), labelAt(plot.x0+4, ty, "start", w))
			}
			for _, x := range vx {
				for _, ty := range []float64{y - 5, y + 15} {
					cands = append(cands, labelAt(x-4, ty, "end", w), labelAt(x+4, ty, "start", w))
				}
			}
		}
		best, bestCost := cands[0], math.Inf(1)
		for i, c := range cands {
			cost := float64(i) + 1e4*c.box.outside(plot)
			for _, p := range placed {
				if c.box.overlaps(p) {
					cost += 5000
				}
			}
			for _, x := range vx {
				if (!r.OnX || x != self) && x > c.box.x0 && x < c.box.x1 {
					cost += 1000
				}
			}
			for _, y := range hy {
				if (r.OnX || y != self) && y > c.box.y0 && y < c.box.y1 {
					cost += 1000
				}
			}
			grown := box{c.box.x0 - 4, c.box.y0 - 4, c.box.x1 + 4, c.box.y1 + 4}
			for _, p := range pts {
				if grown.has(p[0], p[1]) {
					cost += 60
				}
			}
			for _, l := range lines {
				cost += 20 * float64(crossings(c.box, l))
			}
			if cost < bestCost {
				best, bestCost = c, cost
			}
		}
		placed = append(placed, best.box)
		fmt.Fprintf(b, `<text class="rlabel" x="%s" y="%s" text-anchor="%s">%s<title>%s</title></text>`,
			f(best.x), f(best.y), best.anchor, esc(r.Label), esc(r.title()))
	}
}

// crossings counts the segments of a polyline that pass through a box,
// by sampling each (a label's box is small beside a plot: a dozen samples
// a segment finds every crossing that matters).
func crossings(a box, line [][2]float64) int {
	n := 0
	for i := 1; i < len(line); i++ {
		p, q := line[i-1], line[i]
		for k := 0; k <= 12; k++ {
			t := float64(k) / 12
			if a.has(p[0]+(q[0]-p[0])*t, p[1]+(q[1]-p[1])*t) {
				n++
				break
			}
		}
	}
	return n
}

func openSVG(b *strings.Builder, g geom, title string) {
	class := "chart"
	if g.narrow {
		class = "chart narrow"
	}
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" class="%s" viewBox="0 0 %s %s" role="img" font-size="%s"><title>%s</title>`,
		class, f(g.W), f(g.H), f(fontPx), esc(title))
}

// svg renders a bar chart at the wide size, and its legend.
func (c barChart) svg() (string, []legendItem) { return c.svgAt(wideGeom) }

// svgAt renders a bar chart at size g, and its legend.
func (c barChart) svgAt(g geom) (string, []legendItem) {
	var vals []float64
	for i := range c.Cats {
		sum := 0.0
		for _, s := range c.Series {
			v := at(s.Vals, i)
			if !finite(v) {
				continue
			}
			if c.Stacked {
				sum += v
			} else {
				vals = append(vals, v, at(s.Lo, i), at(s.Hi, i))
			}
		}
		if c.Stacked {
			vals = append(vals, sum)
		}
	}
	c.V.Zero = true
	c.V.Log = false
	var b strings.Builder
	openSVG(&b, g, c.Title)
	var vs, cs scale // value and category scales
	var band float64
	if c.Horizontal {
		catW := 0
		for _, s := range c.Cats {
			catW = max(catW, len([]rune(s)))
		}
		left := math.Min(20+float64(catW)*charPx, g.W*0.42)
		c.V.fewer = g.narrow // the value axis runs across
		vs = newScale(c.V, vals, left, g.W-padRight)
		cs = scale{lo: 0, hi: float64(len(c.Cats)), p0: padTop, p1: g.H - padBot}
		band = (cs.p1 - cs.p0) / math.Max(1, float64(len(c.Cats)))
		// Value grid runs vertically.
		b.WriteString(`<g class="grid">`)
		for i, t := range vs.ticks {
			x := vs.at(t)
			fmt.Fprintf(&b, `<line class="v" x1="%s" x2="%s" y1="%s" y2="%s"/>`, f(x), f(x), f(cs.p0), f(cs.p1))
			fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`, f(x), f(cs.p1+16), esc(vs.tickText[i]))
		}
		for i, name := range c.Cats {
			y := cs.p0 + band*(float64(i)+0.5)
			fmt.Fprintf(&b, `<text class="cat" x="%s" y="%s" text-anchor="end" dominant-baseline="middle">%s<title>%s</title></text>`, f(left-6), f(y), esc(clip(name, int((left-20)/charPx))), esc(name))
		}
		b.WriteString(`</g>`)
		fmt.Fprintf(&b, `<path class="axis" d="M%s %sV%sH%s"/>`, f(left), f(cs.p0), f(cs.p1), f(g.W-padRight))
		fmt.Fprintf(&b, `<text class="atitle" x="%s" y="%s" text-anchor="middle">%s</text>`, f((left+g.W-padRight)/2), f(g.H-8), esc(c.V.title()))
	} else {
		vs = newScale(c.V, vals, g.H-padBot, padTop)
		left := leftPad(vs)
		cs = scale{lo: 0, hi: float64(len(c.Cats)), p0: left, p1: g.W - padRight}
		band = (cs.p1 - cs.p0) / math.Max(1, float64(len(c.Cats)))
		frame(&b, g, cs, vs, "", c.V.title(), c.Cats)
		maxChars := int(band/charPx) + 1
		for i, name := range c.Cats {
			x := cs.p0 + band*(float64(i)+0.5)
			fmt.Fprintf(&b, `<text class="cat" x="%s" y="%s" text-anchor="middle">%s<title>%s</title></text>`, f(x), f(g.H-padBot+16), esc(clip(name, maxChars)), esc(name))
		}
	}
	groups := len(c.Series)
	if c.Stacked {
		groups = 1
	}
	inner := band * 0.72
	slot := math.Min(inner/math.Max(1, float64(groups)), 70) // a lone bar stays a bar, not a wall
	inner = slot * float64(groups)
	var legend []legendItem
	for i := range c.Cats {
		acc := 0.0
		for k, s := range c.Series {
			v := at(s.Vals, i)
			if !finite(v) {
				continue
			}
			off := cs.p0 + band*float64(i) + (band-inner)/2
			if !c.Stacked {
				off += slot * float64(k)
			}
			base := 0.0
			if c.Stacked {
				base = acc
				acc += v
			}
			v0, v1 := vs.at(base), vs.at(base+v)
			tip := s.Name + " · " + c.Cats[i] + ": " + fmtNum(v)
			if t := atS(s.Tips, i); t != "" {
				tip = t
			}
			old := s.Old || i < len(c.OldCats) && c.OldCats[i]
			fmt.Fprintf(&b, `<g class="s %s" data-k="%d">`, classes(s.Color, old), k)
			gap := math.Min(2, slot*0.1)
			if c.Horizontal {
				fmt.Fprintf(&b, `<rect class="bar" x="%s" y="%s" width="%s" height="%s"><title>%s</title></rect>`,
					f(math.Min(v0, v1)), f(off+gap/2), f(math.Abs(v1-v0)), f(slot-gap), esc(tip))
			} else {
				fmt.Fprintf(&b, `<rect class="bar" x="%s" y="%s" width="%s" height="%s"><title>%s</title></rect>`,
					f(off+gap/2), f(math.Min(v0, v1)), f(slot-gap), f(math.Abs(v1-v0)), esc(tip))
			}
			if lo, hi := at(s.Lo, i), at(s.Hi, i); finite(lo, hi) && !c.Stacked {
				m := off + slot/2
				l, h := vs.at(lo), vs.at(hi)
				if c.Horizontal {
					fmt.Fprintf(&b, `<path class="wh" d="M%s %sH%sM%s %sv6M%s %sv6"/>`, f(l), f(m), f(h), f(l), f(m-3), f(h), f(m-3))
				} else {
					fmt.Fprintf(&b, `<path class="wh" d="M%s %sV%sM%s %sh6M%s %sh6"/>`, f(m), f(l), f(h), f(m-3), f(l), f(m-3), f(h))
				}
			}
			b.WriteString(`</g>`)
		}
	}
	for k, s := range c.Series {
		legend = append(legend, legendItem{Key: k, Name: s.Name, Swatch: swatch(s.Color, -1, s.Old, false)})
	}
	b.WriteString(`</svg>`)
	return b.String(), legend
}

func at(v []float64, i int) float64 {
	if i < len(v) {
		return v[i]
	}
	return math.NaN()
}

func atS(v []string, i int) string {
	if i < len(v) {
		return v[i]
	}
	return ""
}

func clip(s string, n int) string {
	r := []rune(s)
	if n < 2 || len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// cdfPoints turns samples into a step CDF (percent on Y), marking p50 and
// p95 so series stay identifiable by marker as well as colour.
func cdfPoints(vals []float64, unit string) []xy {
	v := make([]float64, 0, len(vals))
	for _, x := range vals {
		if finite(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return nil
	}
	sort.Float64s(v)
	n := float64(len(v))
	pts := []xy{{X: v[0], Y: 0, Lo: math.NaN(), Hi: math.NaN()}}
	p50, p95 := stats.Rank(int64(len(v)), 50)-1, stats.Rank(int64(len(v)), 95)-1
	// Past maxCDFSteps samples (a long load phase keeps every request) the
	// curve steps through evenly spaced ranks, p50, p95 and the maximum:
	// finer than a plot's pixels, and the page stays small.
	stride := max(1, (len(v)+maxCDFSteps-1)/maxCDFSteps)
	for i, x := range v {
		if i%stride != stride-1 && i != len(v)-1 && int64(i) != p50 && int64(i) != p95 {
			continue
		}
		p := pt(x, float64(i+1)/n*100, fmt.Sprintf("%s %s ≤ p%s (n=%d)", fmtNum(x), unit, fmtNum(float64(i+1)/n*100), len(v)))
		p.Mark = int64(i) == p50 || int64(i) == p95
		pts = append(pts, p)
	}
	return pts
}

// maxCDFSteps bounds the points of one CDF curve.
const maxCDFSteps = 400
