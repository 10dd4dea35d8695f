package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
)

// Summary writes the human-readable summary of a report: a line per run,
// then every gate with its verdict and the values that decided it.
func Summary(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	status := strings.ToUpper(r.Status)
	gates := plural(len(r.Gates), "gate")
	switch r.Status {
	case StatusIncomplete:
		gates = "gates not judged (interrupted)"
	case StatusNotGated:
		gates = "gates not judged (--no-gate)"
	}
	fmt.Fprintf(ew, "%s — %s, %s: %s\n", r.Scenario.Name, plural(len(r.RunOrder), "run"), gates, status)

	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	seamHeader, liveHeader := false, false
	for _, name := range r.RunOrder {
		run := r.Runs[name]
		if run == nil {
			continue
		}
		if run.Status == "error" {
			fmt.Fprintf(tw, "%s\tERROR: %s\n", name, run.Error)
			continue
		}
		if run.Target.Kind == "seam" {
			if !seamHeader {
				fmt.Fprintln(tw, "run\tdecode p50/p95 ms\ttok/s\tB/tok\tseam payload/wire B (ratio)\tconns\tqueue p95 ms")
				seamHeader = true
			}
			writeSeamRun(tw, name, run)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, name := range r.RunOrder {
		run := r.Runs[name]
		if run == nil || run.Target.Kind == "seam" || len(run.PhaseOrder) == 0 {
			continue
		}
		if !liveHeader {
			liveHeader = true
		}
		writeLiveRun(ew, name, run)
	}
	if len(r.Gates) > 0 {
		fmt.Fprintln(ew, "gates:")
		for _, g := range r.Gates {
			verdict := strings.ToUpper(g.Status)
			if g.Optional {
				verdict += " (optional)"
			}
			fmt.Fprintf(ew, "  %-5s %s\n", verdict, g.Name)
			writeGateDetail(ew, g)
		}
	}
	return ew.err
}

func writeGateDetail(w io.Writer, g GateResult) {
	switch g.Status {
	case StatusError:
		fmt.Fprintf(w, "        error: %s\n", g.Message)
	case StatusFail:
		shown := 0
		for _, o := range g.Observations {
			if !o.Result && shown < 4 {
				fmt.Fprintf(w, "        %s %s %s  ← %s\n", fmtVal(o.Left), o.Op, fmtVal(o.Right), shorten(o.Expr))
				shown++
			}
		}
		if shown == 0 {
			fmt.Fprintf(w, "        %s\n", g.Message)
		}
	default:
		if o, headroom, ok := Tightest(g.Observations); ok {
			fmt.Fprintf(w, "        tightest: %s %s %s (%s headroom)  ← %s\n", fmtVal(o.Left), o.Op, fmtVal(o.Right), pctString(headroom*100), shorten(o.Expr))
		} else if n := len(g.Observations); n > 0 {
			fmt.Fprintf(w, "        %s held\n", plural(n, "comparison"))
		}
	}
}

// Tightest finds the passed numeric ordering comparison with the least
// relative headroom: the one closest to failing, which is what a reader
// wants to know about a passing gate.
func Tightest(obs []Observation) (Observation, float64, bool) {
	best, bestH, found := Observation{}, 0.0, false
	for _, o := range obs {
		l, lok := toFloat(o.Left)
		r, rok := toFloat(o.Right)
		if !lok || !rok || !o.Result || o.Op == "==" || o.Op == "!=" {
			continue
		}
		den := math.Max(math.Abs(l), math.Abs(r))
		if den == 0 {
			continue
		}
		h := math.Abs(r-l) / den
		if !found || h < bestH {
			best, bestH, found = o, h, true
		}
	}
	return best, bestH, found
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

func shorten(expr string) string {
	s := strings.Join(strings.Fields(expr), " ")
	if len(s) > 90 {
		s = s[:89] + "…"
	}
	return s
}

func fmtVal(v any) string {
	switch x := v.(type) {
	case float64:
		return fmt.Sprintf("%.6g", x)
	case []any:
		if len(x) > 6 {
			return fmt.Sprintf("[%d items]", len(x))
		}
	case map[string]any:
		return fmt.Sprintf("{%d keys}", len(x))
	}
	return fmt.Sprintf("%v", v)
}

func writeLiveRun(w io.Writer, name string, run *Run) {
	t := run.Target
	fmt.Fprintf(w, "%s (%s at %s): model %s, %s\n", name, t.Kind, t.BaseURL, t.Model, t.ModelSource)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  phase\tok/n\tttft p50/p95 ms\ttpot p50 ms\tdecode tok/s p50\tprefill tok/s p50\te2e p50 ms\tcached p50\tspeedup")
	row := func(label string, m *ServingMetrics, speedup *float64) {
		sp := "-"
		if speedup != nil {
			sp = fmt.Sprintf("%.1fx", *speedup)
		}
		fmt.Fprintf(tw, "  %s\t%d/%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", label, m.Succeeded, m.Requests,
			stat2(m.TTFTMS.P50, m.TTFTMS.P95, "%.2f"), opt(m.TPOTMS.P50, "%.2f"), opt(m.DecodeTokensPerS.P50, "%.1f"),
			opt(m.PrefillTokensPerS.P50, "%.0f"), opt(m.E2EMS.P50, "%.1f"), opt(m.CachedTokens.P50, "%.0f"), sp)
	}
	var warnings []string
	for _, pn := range run.PhaseOrder {
		p := run.Phases[pn]
		if p == nil || p.ServingMetrics == nil {
			continue
		}
		switch {
		case p.Kind == "warmup":
			// Every cell filled: tabwriter aligns only unbroken runs of cells.
			fmt.Fprintf(tw, "  %s\t%d/%d\t(warmup)\t-\t-\t-\t-\t-\t-\n", pn, p.Succeeded, p.Requests)
		case len(p.Points) > 0:
			row(pn+" (all points)", p.ServingMetrics, nil)
		case len(p.ByPromptTokens) > 0:
			for _, k := range sortedPoints(p.ByPromptTokens) {
				row(pn+" "+k, p.ByPromptTokens[k].ServingMetrics, nil)
			}
		case len(p.Variants) > 0:
			for _, k := range []string{"fresh", "identical", "small_suffix"} {
				if v := p.Variants[k]; v != nil {
					row(pn+" "+k, v.ServingMetrics, v.Speedup)
				}
			}
		default:
			row(pn, p.ServingMetrics, nil)
		}
		for _, wmsg := range p.Warnings {
			warnings = append(warnings, pn+": "+wmsg)
		}
		if p.Errors.Count > 0 {
			for _, e := range p.Errors.Examples {
				warnings = append(warnings, fmt.Sprintf("%s: %s error (%s): %s", pn, e.Class, e.Request, e.Message))
			}
		}
	}
	_ = tw.Flush()
	for _, pn := range run.PhaseOrder {
		if p := run.Phases[pn]; p != nil && len(p.Points) > 0 {
			writePoints(w, pn, p.Points)
		}
	}
	for _, wmsg := range warnings {
		fmt.Fprintf(w, "  ! %s\n", wmsg)
	}
}

func writePoints(w io.Writer, phase string, points []*LoadPoint) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  %s point\tok/n\treq/s\tout tok/s\tin flight\tttft p50/p99 ms\ttpot p50 ms\tqueue p95 ms\tgoodput\n", phase)
	for _, lp := range points {
		label := fmt.Sprintf("concurrency %d", lp.Concurrency)
		if lp.Rate > 0 {
			label = fmt.Sprintf("rate %g/s", lp.Rate)
			if lp.AchievedRatePerS != nil {
				label += fmt.Sprintf(" (sent %.1f/s)", *lp.AchievedRatePerS)
			}
		}
		good := "-"
		if g := lp.Goodput; g != nil && g.AttainedPct != nil {
			good = fmt.Sprintf("%.1f%%", *g.AttainedPct)
			if g.GoodRequestsPerS != nil {
				good += fmt.Sprintf(" (%.1f/s)", *g.GoodRequestsPerS)
			}
		}
		fmt.Fprintf(tw, "  %s\t%d/%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", label, lp.Succeeded, lp.Requests,
			opt(lp.RequestThroughputPerS, "%.1f"), opt(lp.OutputTokensPerS, "%.0f"), opt(lp.AchievedConcurrency, "%.1f"),
			stat2(lp.TTFTMS.P50, lp.TTFTMS.P99, "%.1f"), opt(lp.TPOTMS.P50, "%.2f"), opt(lp.QueueMS.P95, "%.2f"), good)
	}
	_ = tw.Flush()
}

// sortedPoints orders prompt sizes numerically.
func sortedPoints(m map[string]*Point) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := m[keys[i]].TargetPromptTokens, m[keys[j]].TargetPromptTokens
		if a != b {
			return a < b
		}
		return keys[i] < keys[j]
	})
	return keys
}

func writeSeamRun(w io.Writer, name string, run *Run) {
	fmt.Fprintln(w, strings.Join(SeamFigures(name, run), "\t"))
}

// SeamFigures are the columns of a seam run's summary line: name, decode
// p50/p95 ms, tok/s, B/tok, seam payload/wire bytes (ratio), connections,
// queue p95 ms. The text summary and the Markdown table both print them.
func SeamFigures(name string, run *Run) []string {
	var dec *SeamMetrics
	for _, pn := range run.PhaseOrder {
		if p := run.Phases[pn]; p != nil && p.Kind == "decode" && p.SeamMetrics != nil {
			dec = p.SeamMetrics
		}
	}
	var payload, wire int64
	for _, s := range run.Seams {
		if s != nil {
			payload += s.PayloadBytes
			wire += s.WireBytes
		}
	}
	ratio := "-"
	if wire > 0 {
		ratio = fmt.Sprintf("%.2fx", float64(payload)/float64(wire))
	}
	conns := 0
	if run.Connections != nil {
		conns = run.Connections.Attempts
	}
	lat, tps, bpt, q := "-", "-", "-", "-"
	if dec != nil {
		lat = stat2(dec.SeamLatencyMS.P50, dec.SeamLatencyMS.P95, "%.4f")
		tps = opt(dec.TokensPerS, "%.1f")
		bpt = opt(dec.BytesPerToken, "%.0f")
		q = opt(dec.QueueWaitMS.P95, "%.2f")
	}
	return []string{name, lat, tps, bpt, fmt.Sprintf("%d/%d (%s)", payload, wire, ratio), fmt.Sprint(conns), q}
}

func opt(v *float64, format string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v)
}

func stat2(a, b *float64, format string) string { return opt(a, format) + "/" + opt(b, format) }

// errWriter keeps the first write error so a summary to a closed pipe is
// reported, not swallowed.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, nil
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// pctString keeps small headrooms visible: 0.5% rather than 0%.
func pctString(p float64) string {
	if p < 10 {
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.0f%%", p)
}
