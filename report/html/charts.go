package html

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/view"
)

// figure is one chart as the template shows it: drawn wide and narrow
// (the page shows the one that fits), with one legend for both.
type figure struct {
	Title     string
	Note      string
	SVG       template.HTML
	SVGNarrow template.HTML
	Legend    []legendView
}

type legendView struct {
	Key    int
	Name   string
	Swatch template.HTML
}

// section groups figures under a heading; empty sections are not shown.
type section struct {
	ID, Title, Note string
	Figures         []figure
}

func newFigure(title, note, svg, narrow string, legend []legendItem) figure {
	fg := figure{Title: title, Note: note, SVG: template.HTML(svg), SVGNarrow: template.HTML(narrow)} // #nosec: svg escapes its own text
	for _, l := range legend {
		fg.Legend = append(fg.Legend, legendView{Key: l.Key, Name: l.Name, Swatch: template.HTML(l.Swatch)})
	}
	return fg
}

func (c lineChart) figure(note string) figure {
	svg, legend := c.svgAt(wideGeom)
	narrow, _ := c.svgAt(narrowGeom)
	return newFigure(c.Title, note, svg, narrow, legend)
}

func (c barChart) figure(note string) figure {
	svg, legend := c.svgAt(wideGeom)
	narrow, _ := c.svgAt(narrowGeom)
	return newFigure(c.Title, note, svg, narrow, legend)
}

// charts builds every chart the reports have data for. Each builder returns
// nothing when its data is absent, so adding a chart is adding a builder.
type charts struct {
	r, base *report.Report
	cache   sampleCache
	color   map[string]int // run name → colour and marker, shared by old and new
}

func newCharts(r, base *report.Report) *charts {
	c := &charts{r: r, base: base, cache: sampleCache{}, color: map[string]int{}}
	for i, n := range r.RunNames() {
		c.color[n] = i
	}
	n := len(c.color)
	for _, name := range base.RunNames() {
		if _, ok := c.color[name]; !ok {
			c.color[name] = n
			n++
		}
	}
	return c
}

func concat(fs ...[]figure) []figure {
	var out []figure
	for _, f := range fs {
		out = append(out, f...)
	}
	return out
}

func (c *charts) sections() []section {
	all := []section{
		{ID: "performance", Title: "Prefill, decode and prefix cache", Figures: concat(c.ttftByPrompt(), c.decodeRate(), c.prefixCache())},
		{ID: "load", Title: "Load sweeps", Figures: c.sweeps()},
		{ID: "turns", Title: "Turn by turn", Note: "A sessions phase turn by turn (each turn resends the history so far), an agent phase step by step.", Figures: c.turns()},
		{ID: "capacity", Title: "Capacity", Note: "Each probe's objective statistic against the load it offered.", Figures: c.capacity()},
		{ID: "breakdown", Title: "Seam latency breakdown", Note: "Mean time per transfer spent in each step, from the samples.", Figures: c.seamBreakdown()},
		{ID: "cdf", Title: "Latency distributions", Figures: c.cdfs()},
	}
	var out []section
	for _, s := range all {
		if len(s.Figures) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// ttftByPrompt: TTFT p50 against prompt size, whisker up to p95.
func (c *charts) ttftByPrompt() []figure {
	var ss []series
	for _, rn := range c.r.RunNames() {
		run := c.r.Runs[rn]
		for _, pn := range run.PhaseNames() {
			p := run.Phases[pn]
			if len(p.ByPromptTokens) == 0 {
				continue
			}
			name := rn
			if countPhases(run, func(p *report.Phase) bool { return len(p.ByPromptTokens) > 0 }) > 1 {
				name += " · " + pn
			}
			col := c.color[rn]
			ss = append(ss, series{Name: name, Color: col, Marker: col, Pts: promptPoints(p)})
			if bp := phaseOf(c.base, rn, pn); bp != nil && len(bp.ByPromptTokens) > 0 {
				ss = append(ss, series{Name: name + " (baseline)", Color: col, Marker: col, Old: true, Pts: promptPoints(bp)})
			}
		}
	}
	if len(ss) == 0 {
		return nil
	}
	ch := lineChart{Title: "Time to first token by prompt size",
		X: axis{Label: "prompt size", Unit: "tokens", Zero: true},
		Y: axis{Label: "TTFT", Unit: "ms", Zero: true}, Series: ss}
	return []figure{ch.figure("Marker: p50 over the repetitions; whisker up to p95. Hover a marker for its values.")}
}

func countPhases(run *report.Run, pred func(*report.Phase) bool) int {
	n := 0
	for _, p := range run.Phases {
		if p != nil && pred(p) {
			n++
		}
	}
	return n
}

func promptPoints(p *report.Phase) []xy {
	var pts []xy
	for _, k := range report.PointKeys(p.ByPromptTokens) {
		pnt := p.ByPromptTokens[k]
		if pnt.ServingMetrics == nil {
			continue
		}
		t := pnt.TTFTMS
		x := pointX(k, pnt)
		q := pt(x, val(t.P50), fmt.Sprintf("%s tokens, TTFT p50 %s ms, p95 %s ms (n=%d)", fmtNum(x), fmtNum(val(t.P50)), fmtNum(val(t.P95)), t.Count))
		q.Lo, q.Hi = val(t.P50), val(t.P95)
		pts = append(pts, q)
	}
	return pts
}

// decodeRate: decode tokens/s per run; old and new side by side.
func (c *charts) decodeRate() []figure {
	type entry struct {
		cat      string
		v, lo    float64
		ov, olo  float64
		tip, otp string
	}
	var es []entry
	rate := func(p *report.Phase) (v, lo float64, tip string) {
		if p == nil {
			return math.NaN(), math.NaN(), ""
		}
		if p.ServingMetrics != nil && p.DecodeTokensPerS.Count > 0 {
			s := p.DecodeTokensPerS
			return val(s.P50), val(s.Min), fmt.Sprintf("p50 %s tokens/s, min %s, max %s (n=%d)", fmtNum(val(s.P50)), fmtNum(val(s.Min)), fmtNum(val(s.Max)), s.Count)
		}
		if p.SeamMetrics != nil && p.TokensPerS != nil {
			return *p.TokensPerS, math.NaN(), fmt.Sprintf("%s tokens/s over %d tokens", fmtNum(*p.TokensPerS), p.Tokens)
		}
		return math.NaN(), math.NaN(), ""
	}
	for _, rn := range c.r.RunNames() {
		run := c.r.Runs[rn]
		for _, pn := range run.PhaseNames() {
			p := run.Phases[pn]
			if p.Kind != report.KindDecode {
				continue
			}
			v, lo, tip := rate(p)
			if !finite(v) {
				continue
			}
			cat := rn
			if countPhases(run, func(p *report.Phase) bool { return p.Kind == report.KindDecode }) > 1 {
				cat += " · " + pn
			}
			ov, olo, otp := rate(phaseOf(c.base, rn, pn))
			es = append(es, entry{cat, v, lo, ov, olo, tip, otp})
		}
	}
	if len(es) == 0 {
		return nil
	}
	cur := barSeries{Name: "this report", Color: 0}
	old := barSeries{Name: "baseline", Color: 0, Old: true}
	var cats []string
	hasOld := false
	for _, e := range es {
		cats = append(cats, e.cat)
		cur.Vals = append(cur.Vals, e.v)
		cur.Lo = append(cur.Lo, e.lo)
		cur.Hi = append(cur.Hi, e.v)
		cur.Tips = append(cur.Tips, e.cat+": "+e.tip)
		old.Vals = append(old.Vals, e.ov)
		old.Lo = append(old.Lo, e.olo)
		old.Hi = append(old.Hi, e.ov)
		old.Tips = append(old.Tips, e.cat+" (baseline): "+e.otp)
		hasOld = hasOld || finite(e.ov)
	}
	ss := []barSeries{cur}
	if hasOld {
		ss = append(ss, old)
	}
	ch := barChart{Title: "Decode throughput per run", Cats: cats, Series: ss, V: axis{Label: "decode", Unit: "tokens/s"}}
	return []figure{ch.figure("Bar: p50 per request (seam runs: tokens over the phase's total seam latency); whisker down to the slowest request. Higher is better.")}
}

// prefixCache: TTFT of fresh, identical and small-suffix prompts.
func (c *charts) prefixCache() []figure {
	var cats []string
	catIdx := map[string]int{}
	type src struct {
		name  string
		color int
		old   bool
		p     *report.Phase
	}
	var srcs []src
	for _, rn := range c.r.RunNames() {
		run := c.r.Runs[rn]
		multi := countPhases(run, func(p *report.Phase) bool { return len(p.Variants) > 0 }) > 1
		for _, pn := range run.PhaseNames() {
			p := run.Phases[pn]
			if len(p.Variants) == 0 {
				continue
			}
			name := rn
			if multi {
				name += " · " + pn
			}
			srcs = append(srcs, src{name, c.color[rn], false, p})
			if bp := phaseOf(c.base, rn, pn); bp != nil && len(bp.Variants) > 0 {
				srcs = append(srcs, src{name + " (baseline)", c.color[rn], true, bp})
			}
			for _, k := range report.PointKeys(p.Variants) {
				if _, ok := catIdx[k]; !ok {
					catIdx[k] = len(cats)
					cats = append(cats, k)
				}
			}
		}
	}
	if len(srcs) == 0 {
		return nil
	}
	var ss []barSeries
	for _, s := range srcs {
		bs := barSeries{Name: s.name, Color: s.color, Old: s.old}
		for _, k := range cats {
			v := s.p.Variants[k]
			if v == nil || v.ServingMetrics == nil {
				bs.Vals, bs.Lo, bs.Hi, bs.Tips = append(bs.Vals, math.NaN()), append(bs.Lo, math.NaN()), append(bs.Hi, math.NaN()), append(bs.Tips, "")
				continue
			}
			t := v.TTFTMS
			tip := fmt.Sprintf("%s · %s: TTFT p50 %s ms, p95 %s ms (n=%d)", s.name, k, fmtNum(val(t.P50)), fmtNum(val(t.P95)), t.Count)
			if v.Speedup != nil {
				tip += fmt.Sprintf(", %s× faster than fresh", fmtNum(*v.Speedup))
			}
			if v.CachedTokens.P50 != nil {
				tip += fmt.Sprintf(", cached tokens p50 %s", fmtNum(*v.CachedTokens.P50))
			}
			bs.Vals = append(bs.Vals, val(t.P50))
			bs.Lo = append(bs.Lo, val(t.P50))
			bs.Hi = append(bs.Hi, val(t.P95))
			bs.Tips = append(bs.Tips, tip)
		}
		ss = append(ss, bs)
	}
	ch := barChart{Title: "Prefix-cache reuse: time to first token", Cats: cats, Series: ss, V: axis{Label: "TTFT", Unit: "ms"}}
	return []figure{ch.figure("fresh: a prompt never seen; identical: the same prompt again; small_suffix: the same prefix with a few new tokens. Bar: p50; whisker up to p95. Lower is better.")}
}

// turnSplits are the splits of a conversation phase by position: a
// sessions phase by turn, an agent phase by step.
var turnSplits = []struct {
	label string
	of    func(*report.Phase) map[string]*report.Point
}{
	{"turn", func(p *report.Phase) map[string]*report.Point { return p.ByTurn }},
	{"step", func(p *report.Phase) map[string]*report.Point { return p.ByStep }},
}

// turns draws each conversation phase turn by turn (or step by step):
// TTFT, and the prompt and cached tokens that explain it, against the
// turn's index, the baseline dashed beside it.
func (c *charts) turns() []figure {
	var figs []figure
	for _, rn := range c.r.RunNames() {
		run := c.r.Runs[rn]
		for _, pn := range run.PhaseNames() {
			for _, sp := range turnSplits {
				cur := sp.of(run.Phases[pn])
				if len(cur) < 2 {
					continue // one turn is a number, not a curve
				}
				var old map[string]*report.Point
				if bp := phaseOf(c.base, rn, pn); bp != nil {
					old = sp.of(bp)
				}
				figs = append(figs, c.turnFigures(rn, pn, sp.label, cur, old)...)
			}
		}
	}
	return figs
}

// turnStat is one statistic drawn per turn.
type turnStat struct {
	name string
	stat func(*report.ServingMetrics) *report.Stat
	mean bool // the mean (token counts), else p50 with a whisker to p95
}

func (c *charts) turnFigures(rn, pn, by string, cur, old map[string]*report.Point) []figure {
	x := axis{Label: by, Whole: true}
	where := rn + " · " + pn
	draw := func(name string, color int, base bool, m map[string]*report.Point, st turnStat) series {
		s := series{Name: name, Color: color, Marker: color, Old: base}
		if base {
			s.Name += " (baseline)"
		}
		for _, k := range report.PointKeys(m) {
			n, err := strconv.Atoi(k)
			p := m[k]
			if err != nil || p.ServingMetrics == nil {
				continue
			}
			v := st.stat(p.ServingMetrics)
			if v == nil || v.Count == 0 {
				continue
			}
			if st.mean {
				if v.Mean != nil {
					s.Pts = append(s.Pts, pt(float64(n), *v.Mean, fmt.Sprintf("%s %d: %s mean %s (n=%d)", by, n, st.name, fmtNum(*v.Mean), v.Count)))
				}
				continue
			}
			q := pt(float64(n), val(v.P50), fmt.Sprintf("%s %d: %s p50 %s ms, p95 %s ms (n=%d)", by, n, st.name, fmtNum(val(v.P50)), fmtNum(val(v.P95)), v.Count))
			q.Lo, q.Hi = val(v.P50), val(v.P95)
			s.Pts = append(s.Pts, q)
		}
		return s
	}
	both := func(ss []series, name string, color int, st turnStat) []series {
		if s := draw(name, color, false, cur, st); len(s.Pts) > 0 {
			ss = append(ss, s)
			if o := draw(name, color, true, old, st); len(o.Pts) > 0 {
				ss = append(ss, o)
			}
		}
		return ss
	}
	var figs []figure
	ttft := turnStat{"TTFT", func(m *report.ServingMetrics) *report.Stat { return &m.TTFTMS }, false}
	if ss := both(nil, rn, c.color[rn], ttft); len(ss) > 0 {
		ch := lineChart{Title: fmt.Sprintf("Time to first token by %s — %s", by, where), X: x,
			Y: axis{Label: "TTFT", Unit: "ms", Zero: true}, Series: ss}
		figs = append(figs, ch.figure(fmt.Sprintf("Marker: p50 over the phase's %ss of that index; whisker up to p95.", by)))
	}
	var ss []series
	ss = both(ss, "prompt tokens", 0, turnStat{"prompt tokens", func(m *report.ServingMetrics) *report.Stat { return &m.PromptTokens }, true})
	ss = both(ss, "cached tokens", 2, turnStat{"cached tokens", func(m *report.ServingMetrics) *report.Stat { return &m.CachedTokens }, true})
	if len(ss) > 0 {
		ch := lineChart{Title: fmt.Sprintf("Prompt and cached tokens by %s — %s", by, where), X: x,
			Y: axis{Label: "mean per request", Unit: "tokens", Zero: true}, Series: ss}
		figs = append(figs, ch.figure("The prompt grows with the history; with a prefix cache, so do the cached tokens, and TTFT stays flat."))
	}
	return figs
}

// sweepAxis is an x axis of a load sweep: concurrency or offered rate.
type sweepAxis struct {
	axis
	x func(*report.LoadPoint) (float64, bool)
}

func sweepAxes() []sweepAxis {
	return []sweepAxis{
		{axis{Label: "concurrency", Unit: "streams", Zero: true, Log2: true}, func(lp *report.LoadPoint) (float64, bool) {
			return float64(lp.Concurrency), lp.Concurrency > 0
		}},
		{axis{Label: "rate", Unit: "req/s", Zero: true}, func(lp *report.LoadPoint) (float64, bool) { return lp.Rate, lp.Rate > 0 }},
	}
}

// sweepMetric is a figure drawn against a sweep axis; a new metric is a new
// entry in sweepMetrics. slo names the load phase's SLO limit the metric is
// held to, drawn as a line ("" for none).
type sweepMetric struct {
	title, unit string
	y           func(*report.LoadPoint) *float64
	slo         string
}

func sweepMetrics() []sweepMetric {
	return []sweepMetric{
		{"Output throughput", "tokens/s", func(lp *report.LoadPoint) *float64 {
			if lp.OutputTokensPerS != nil {
				return lp.OutputTokensPerS
			}
			return lp.TotalTokensPerS
		}, ""},
		{"Goodput", "req/s", func(lp *report.LoadPoint) *float64 {
			if lp.Goodput == nil {
				return nil
			}
			return lp.Goodput.GoodRequestsPerS
		}, ""},
		{"TTFT p99", "ms", func(lp *report.LoadPoint) *float64 {
			if lp.ServingMetrics == nil {
				return nil
			}
			return lp.TTFTMS.P99
		}, "ttft_ms"},
	}
}

// sloRules are the lines for the limit a load phase's SLO (its slo: field,
// kept in each point's goodput.slo) sets on metric, one per distinct value.
func sloRules(metric string, onX bool, pts ...[]*report.LoadPoint) []rule {
	var out []rule
	seen := map[float64]bool{}
	for _, ps := range pts {
		for _, lp := range ps {
			if lp == nil || lp.Goodput == nil {
				continue
			}
			v, ok := lp.Goodput.SLO[metric]
			if !ok || !finite(v) || seen[v] {
				continue
			}
			seen[v] = true
			out = append(out, rule{V: v, Label: fmt.Sprintf("SLO %s ≤ %s", metric, fmtNum(v)), OnX: onX})
		}
	}
	return out
}

// points are a phase's load points (nil for a nil phase).
func points(p *report.Phase) []*report.LoadPoint {
	if p == nil {
		return nil
	}
	return p.Points
}

func (c *charts) sweeps() []figure {
	var figs []figure
	for _, rn := range c.r.RunNames() {
		run := c.r.Runs[rn]
		for _, pn := range run.PhaseNames() {
			pts := run.Phases[pn].Points
			if len(pts) < 2 {
				continue // one point is a number, not a curve: the tables show it
			}
			old := points(phaseOf(c.base, rn, pn))
			for _, ax := range sweepAxes() {
				for _, m := range sweepMetrics() {
					s := sweepSeries(rn, c.color[rn], false, pts, ax, m)
					if len(s.Pts) == 0 {
						continue
					}
					ss := []series{s}
					if o := sweepSeries(rn+" (baseline)", c.color[rn], true, old, ax, m); len(o.Pts) > 0 {
						ss = append(ss, o)
					}
					ch := lineChart{Title: fmt.Sprintf("%s against %s — %s · %s", m.title, ax.Label, rn, pn),
						X: ax.axis, Y: axis{Label: m.title, Unit: m.unit, Zero: true}, Series: ss}
					note := ""
					if m.slo != "" {
						if ch.Rules = sloRules(m.slo, false, pts); len(ch.Rules) > 0 {
							note = "Dashed line: the phase's SLO (slo." + m.slo + ")."
						}
					}
					figs = append(figs, ch.figure(note))
				}
			}
		}
	}
	return figs
}

func sweepSeries(name string, color int, old bool, pts []*report.LoadPoint, ax sweepAxis, m sweepMetric) series {
	s := series{Name: name, Color: color, Marker: color, Old: old}
	for _, p := range pts {
		if p == nil {
			continue
		}
		x, ok := ax.x(p)
		y := m.y(p)
		if !ok || y == nil || !finite(*y) {
			continue
		}
		s.Pts = append(s.Pts, pt(x, *y, fmt.Sprintf("%s %s: %s %s", ax.Label, fmtNum(x), fmtNum(*y), m.unit)))
	}
	return s
}

// seamBreakdown: per phase, a stacked bar per run of mean component times.
func (c *charts) seamBreakdown() []figure {
	var phases []string
	seen := map[string]bool{}
	for _, rn := range c.r.RunNames() {
		if c.r.Runs[rn].Source == report.SourceLive {
			continue // a capture measures whole transfers: no breakdown
		}
		for _, pn := range c.r.Runs[rn].PhaseNames() {
			if !seen[pn] && len(c.cache.of(c.r, rn, pn).seam) > 0 {
				seen[pn] = true
				phases = append(phases, pn)
			}
		}
	}
	var figs []figure
	for _, pn := range phases {
		var cats []string
		var oldCats []bool
		var rows [][]float64
		for _, rn := range c.r.RunNames() {
			s := c.cache.of(c.r, rn, pn).seam
			if len(s) == 0 || c.r.Runs[rn].Source == report.SourceLive {
				continue
			}
			cats, oldCats, rows = append(cats, rn), append(oldCats, false), append(rows, breakdown(s))
			if bs := c.cache.of(c.base, rn, pn).seam; len(bs) > 0 && (c.base.Runs[rn] == nil || c.base.Runs[rn].Source != report.SourceLive) {
				cats, oldCats, rows = append(cats, rn+" (baseline)"), append(oldCats, true), append(rows, breakdown(bs))
			}
		}
		var ss []barSeries
		for i, comp := range components {
			bs := barSeries{Name: comp.name, Color: comp.color}
			any := false
			for j, row := range rows {
				bs.Vals = append(bs.Vals, row[i])
				bs.Tips = append(bs.Tips, fmt.Sprintf("%s · %s: %s %s ms mean per transfer", cats[j], pn, comp.name, fmtNum(row[i])))
				any = any || row[i] != 0
			}
			if any {
				ss = append(ss, bs)
			}
		}
		ch := barChart{Title: "Where a " + pn + " transfer's time goes", Cats: cats, Series: ss, OldCats: oldCats,
			V: axis{Label: "mean time per transfer", Unit: "ms"}, Horizontal: true, Stacked: true}
		figs = append(figs, ch.figure(fmt.Sprintf("Phase %s. Components that were zero in every run are left out.", pn)))
	}
	return figs
}

// latencyMetric is one latency a CDF is drawn for.
type latencyMetric struct {
	name, label string
	reqs        func(*report.RequestSample) (float64, bool)
	seams       func(*report.SeamSample) (float64, bool)
	live        func(*report.ServingMetrics) *report.Stat
	seam        func(*report.SeamMetrics) *report.Stat
}

var latencyMetrics = []latencyMetric{
	servingLatency("ttft_ms", "TTFT"),
	servingLatency("e2e_ms", "end-to-end latency"),
	{name: "seam_latency_ms", label: "seam latency",
		seams: func(s *report.SeamSample) (float64, bool) { return s.SeamLatencyMS, true },
		seam:  func(m *report.SeamMetrics) *report.Stat { return &m.SeamLatencyMS }},
}

// servingLatency draws the metric table's key: its aggregate, and its
// value in each request that succeeded (as the aggregate counts them).
func servingLatency(key, label string) latencyMetric {
	m, ok := report.MetricByKey(key)
	if !ok || m.Value == nil {
		panic("html: no per-request metric " + key) // a typo in the list above; the tests draw every entry
	}
	return latencyMetric{name: key, label: label, live: m.Stat,
		reqs: func(s *report.RequestSample) (float64, bool) {
			if !s.OK {
				return 0, false
			}
			return m.Value(s)
		}}
}

func (m latencyMetric) title() string {
	return strings.ToUpper(m.label[:1]) + m.label[1:] + " distribution"
}

// stat is m's statistic over a phase or a slice (nil when it has none).
func (m latencyMetric) stat(sm *report.ServingMetrics, seam *report.SeamMetrics) *report.Stat {
	switch {
	case m.live != nil && sm != nil:
		return m.live(sm)
	case m.seam != nil && seam != nil:
		return m.seam(seam)
	}
	return nil
}

// phaseSlice is one part of a live phase that a CDF draws as its own
// curve: a prompt size, a prefix-cache variant or a load point. key is
// what the phase's samples carry in point.
type phaseSlice struct {
	key, label string
	metrics    *report.ServingMetrics
}

// slicesOf returns how a phase divides and its parts in order, or nothing
// for a phase that is one population (decode, requests, one load point).
func slicesOf(p *report.Phase) (by string, out []phaseSlice) {
	if p == nil {
		return "", nil
	}
	switch {
	case len(p.ByPromptTokens) > 0:
		for _, k := range report.PointKeys(p.ByPromptTokens) {
			out = append(out, phaseSlice{k, k + " tokens", p.ByPromptTokens[k].ServingMetrics})
		}
		return "prompt size", out
	case len(p.Variants) > 0:
		for _, k := range report.PointKeys(p.Variants) {
			out = append(out, phaseSlice{k, k, p.Variants[k].ServingMetrics})
		}
		return "variant", out
	case len(p.Points) > 1:
		for _, lp := range p.Points {
			if lp != nil {
				out = append(out, phaseSlice{view.PointLabel(lp), view.PointLabel(lp), lp.ServingMetrics})
			}
		}
		return "load point", out
	}
	return "", nil
}

// distribution returns the values of m over a phase's samples (only those
// of slice key, when sliced), or a CDF traced through the percentiles of
// the phase or slice when the report kept no samples.
func (c *charts) distribution(rep *report.Report, rn, pn string, m latencyMetric, sl *phaseSlice) (pts []xy, approx bool) {
	p := phaseOf(rep, rn, pn)
	if p == nil || p.Kind == report.KindWarmup {
		return nil, false
	}
	s := c.cache.of(rep, rn, pn)
	var vals []float64
	if m.reqs != nil {
		for i := range s.req {
			if sl != nil && s.req[i].Point != sl.key {
				continue
			}
			if v, ok := m.reqs(&s.req[i]); ok {
				vals = append(vals, v)
			}
		}
	}
	if m.seams != nil && sl == nil {
		for i := range s.seam {
			if v, ok := m.seams(&s.seam[i]); ok {
				vals = append(vals, v)
			}
		}
	}
	if len(vals) > 0 {
		return cdfPoints(vals, "ms"), false
	}
	st := m.stat(p.ServingMetrics, p.SeamMetrics)
	if sl != nil {
		st = m.stat(sl.metrics, nil)
	}
	if st == nil || st.Count == 0 {
		return nil, false
	}
	for _, q := range []struct {
		v *float64
		p float64
	}{{st.Min, 0}, {st.P50, 50}, {st.P90, 90}, {st.P95, 95}, {st.P99, 99}, {st.Max, 100}} {
		if q.v != nil {
			x := pt(*q.v, q.p, fmt.Sprintf("p%s %s ms", fmtNum(q.p), fmtNum(*q.v)))
			x.Mark = q.p == 50 || q.p == 95
			pts = append(pts, x)
		}
	}
	return pts, true
}

// cdfNote says how to read a CDF chart.
func cdfNote(m latencyMetric, approx bool, rules []rule) string {
	note := "Share of requests at or below each latency; markers at p50 and p95."
	if m.seams != nil {
		note = "Share of transfers at or below each latency; markers at p50 and p95."
	}
	if approx {
		note += " Where the report kept no samples the curve is traced through its percentiles."
	}
	if len(rules) > 0 {
		note += " Dashed line: the load phase's SLO (slo." + m.name + ")."
	}
	return note
}

func cdfChart(title string, m latencyMetric, ss []series, rules []rule) lineChart {
	return lineChart{Title: title, X: axis{Label: m.label, Unit: "ms", Log: true},
		Y: axis{Label: "share at or below", Unit: "%", HasMx: true, Max: 100, Zero: true}, Series: ss, Rules: rules}
}

// cdfs draws, per latency metric, one chart of the phases that are one
// population each (with several runs, one such chart per phase, so that no
// chart carries more series than a reader can tell apart), then one chart
// per sliced phase with a curve per prompt size, variant or load point:
// a mix of 512- and 4096-token prompts, or of every sweep point, in one
// curve describes no request anyone sent.
func (c *charts) cdfs() []figure {
	var figs []figure
	for _, m := range latencyMetrics {
		figs = append(figs, c.cdfByPhase(m)...)
		figs = append(figs, c.cdfBySlice(m)...)
	}
	return figs
}

func (c *charts) cdfByPhase(m latencyMetric) []figure {
	type entry struct {
		run, phase string
		s          series
	}
	var es []entry
	var loads [][]*report.LoadPoint
	approx := false
	runs := map[string]bool{}
	for _, rn := range c.r.RunNames() {
		run := c.r.Runs[rn]
		for _, pn := range run.PhaseNames() {
			if by, _ := slicesOf(run.Phases[pn]); by != "" {
				continue
			}
			pts, ap := c.distribution(c.r, rn, pn, m, nil)
			if len(pts) == 0 {
				continue
			}
			approx = approx || ap
			runs[rn] = true
			loads = append(loads, run.Phases[pn].Points)
			es = append(es, entry{rn, pn, series{Color: c.color[rn], Marker: c.color[rn], Step: !ap, Pts: pts}})
			if bpts, bap := c.distribution(c.base, rn, pn, m, nil); len(bpts) > 0 {
				approx = approx || bap
				es = append(es, entry{rn, pn, series{Color: c.color[rn], Marker: c.color[rn], Old: true, Step: !bap, Pts: bpts}})
			}
		}
	}
	if len(es) == 0 {
		return nil
	}
	build := func(title string, es []entry, byPhase bool) figure {
		var ss []series
		phaseIdx := map[string]int{}
		for _, e := range es {
			s := e.s
			if byPhase {
				s.Name = e.run
			} else {
				// One run: phases are the series, each with its own identity.
				if _, ok := phaseIdx[e.phase]; !ok {
					phaseIdx[e.phase] = len(phaseIdx)
				}
				s.Color, s.Marker = phaseIdx[e.phase], phaseIdx[e.phase]
				s.Name = e.phase
				if len(runs) > 1 {
					s.Name = e.run + " · " + e.phase
				}
			}
			if s.Old {
				s.Name += " (baseline)"
			}
			ss = append(ss, s)
		}
		rules := sloRules(m.name, true, loads...)
		return cdfChart(title, m, ss, rules).figure(cdfNote(m, approx, rules))
	}
	if len(runs) > 1 {
		var order []string
		byPhase := map[string][]entry{}
		for _, e := range es {
			if _, ok := byPhase[e.phase]; !ok {
				order = append(order, e.phase)
			}
			byPhase[e.phase] = append(byPhase[e.phase], e)
		}
		var figs []figure
		for _, pn := range order {
			figs = append(figs, build(fmt.Sprintf("%s — %s", m.title(), pn), byPhase[pn], true))
		}
		return figs
	}
	phases := map[string]bool{}
	for _, e := range es {
		phases[e.phase] = true
	}
	title := m.title() + " by phase"
	if len(phases) == 1 {
		title = m.title() + " — " + es[0].phase
	}
	return []figure{build(title, es, false)}
}

// cdfBySlice draws one chart per sliced phase of each run: a curve per
// slice, its baseline dashed beside it.
func (c *charts) cdfBySlice(m latencyMetric) []figure {
	if m.reqs == nil {
		return nil // seam phases are not sliced
	}
	var figs []figure
	names := c.r.RunNames()
	for _, rn := range names {
		run := c.r.Runs[rn]
		for _, pn := range run.PhaseNames() {
			p := run.Phases[pn]
			by, sls := slicesOf(p)
			if by == "" || p.Kind == report.KindWarmup {
				continue
			}
			var ss []series
			approx := false
			for k, sl := range sls {
				pts, ap := c.distribution(c.r, rn, pn, m, &sl)
				if len(pts) == 0 {
					continue
				}
				approx = approx || ap
				ss = append(ss, series{Name: sl.label, Color: k, Marker: k, Step: !ap, Pts: pts})
				_, bsls := slicesOf(phaseOf(c.base, rn, pn))
				for _, bsl := range bsls {
					if bsl.key != sl.key {
						continue
					}
					if bpts, bap := c.distribution(c.base, rn, pn, m, &bsl); len(bpts) > 0 {
						approx = approx || bap
						ss = append(ss, series{Name: sl.label + " (baseline)", Color: k, Marker: k, Old: true, Step: !bap, Pts: bpts})
					}
				}
			}
			if len(ss) == 0 {
				continue
			}
			where := pn
			if len(names) > 1 {
				where = rn + " · " + pn
			}
			rules := sloRules(m.name, true, p.Points)
			figs = append(figs, cdfChart(fmt.Sprintf("%s by %s — %s", m.title(), by, where), m, ss, rules).figure(cdfNote(m, approx, rules)))
		}
	}
	return figs
}
