package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Summary writes the human-readable summary of a report: a line per run,
// then every gate with its verdict and the values that decided it.
func Summary(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	status := strings.ToUpper(r.Status)
	if r.Incomplete {
		status += " (incomplete)"
	}
	fmt.Fprintf(ew, "%s — %d runs, %d gates: %s\n", r.Scenario.Name, len(r.RunOrder), len(r.Gates), status)

	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	seamHeader := false
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
		if o, headroom, ok := tightest(g.Observations); ok {
			fmt.Fprintf(w, "        tightest: %s %s %s (%.0f%% headroom)  ← %s\n", fmtVal(o.Left), o.Op, fmtVal(o.Right), headroom*100, shorten(o.Expr))
		} else if n := len(g.Observations); n > 0 {
			fmt.Fprintf(w, "        %d comparisons held\n", n)
		}
	}
}

// tightest finds the passed numeric ordering comparison with the least
// relative headroom: the one closest to failing, which is what a reader
// wants to know about a passing gate.
func tightest(obs []Observation) (Observation, float64, bool) {
	best, bestH, found := Observation{}, 0.0, false
	for _, o := range obs {
		l, lok := o.Left.(float64)
		r, rok := o.Right.(float64)
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

func writeSeamRun(w io.Writer, name string, run *Run) {
	var dec *SeamMetrics
	for _, pn := range run.PhaseOrder {
		if p := run.Phases[pn]; p != nil && p.Kind == "decode" && p.SeamMetrics != nil {
			dec = p.SeamMetrics
		}
	}
	var payload, wire int64
	for _, s := range run.Seams {
		payload += s.PayloadBytes
		wire += s.WireBytes
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
	fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d/%d (%s)\t%d\t%s\n", name, lat, tps, bpt, payload, wire, ratio, conns, q)
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
