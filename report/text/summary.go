// Package text writes the human summary of a report, the one tollgate run
// prints: a line per seam run, a table per live run, then every gate with
// its verdict and the values that decided it. Its figures come from
// report/view, the same tables Markdown and HTML show.
package text

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tollgate-dev/tollgate/internal/iox"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/view"
)

// Summary writes the human-readable summary of a report.
func Summary(w io.Writer, r *report.Report) error {
	r = view.Sanitized(r) // no raw control byte from the wire reaches a terminal
	ew := iox.NewErrWriter(w)
	gates := view.Plural(len(r.Gates), "gate")
	if n := view.Skipped(r); n > 0 {
		gates += fmt.Sprintf(" (%d skipped: no baseline)", n)
	}
	if why := view.GatesNotJudged(r); why != "" {
		gates = "gates not judged (" + why + ")"
	}
	fmt.Fprintf(ew, "%s — %s, %s: %s\n", r.Scenario.Name, view.Plural(len(r.RunOrder), "run"), gates, strings.ToUpper(r.Status))
	if imp := r.Imported; imp != nil {
		fmt.Fprintf(ew, "definition notes: %s:\n", imp.Heading())
		for _, n := range imp.Notes {
			fmt.Fprintf(ew, "  - %s\n", n)
		}
	}
	if rep := r.Repetitions; rep != nil {
		var most []string
		for _, v := range rep.MostVariable(3, ".p50") {
			most = append(most, fmt.Sprintf("%s %.1f %%", v.Path, 100*v.CV))
		}
		fmt.Fprintf(ew, "repeated %d times: the figures below are the last run's; the p50s that varied most across runs (cv): %s\n",
			rep.Count, strings.Join(most, ", "))
	}

	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	seamHeader := false
	for _, name := range r.RunNames() {
		run := r.Runs[name]
		switch {
		case run.Status == report.RunError:
			// Its cause is the command's error (stderr), said once there.
			fmt.Fprintf(tw, "%s\tERROR: did not complete\n", name)
		case run.Target.Kind == report.TargetSeam:
			if !seamHeader {
				fmt.Fprintln(tw, strings.Join(view.SeamColumns(), "\t"))
				seamHeader = true
			}
			fmt.Fprintln(tw, strings.Join(view.SeamFigures(name, run), "\t"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeSeamWarnings(ew, r)
	for _, lr := range view.Live(r) {
		if len(lr.Rows)+len(lr.Warnings)+len(lr.Errors) > 0 {
			writeLiveRun(ew, lr)
		}
	}
	writeCapacity(ew, r)
	if len(r.Gates) > 0 {
		fmt.Fprintln(ew, "gates:")
		for _, g := range r.Gates {
			verdict := strings.ToUpper(g.Status)
			if g.Status == report.StatusSkipped {
				verdict = "SKIP" // the line below says why
			}
			if g.Optional {
				verdict += " (optional)"
			}
			fmt.Fprintf(ew, "  %-5s %s\n", verdict, g.Name)
			writeGateDetail(ew, g)
		}
	}
	return ew.Err()
}

func writeGateDetail(w io.Writer, g report.GateResult) {
	switch g.Status {
	case report.StatusSkipped:
		fmt.Fprintf(w, "        %s\n", g.Message)
	case report.StatusError:
		fmt.Fprintf(w, "        error: %s\n", g.Message)
	case report.StatusInconclusive:
		fmt.Fprintf(w, "        %s\n", g.Message)
	case report.StatusFail:
		shown := 0
		for _, o := range g.Observations {
			if !o.Result && shown < 4 {
				fmt.Fprintf(w, "        %s %s %s  ← %s\n", view.Value(o.Left), o.Op, view.Value(o.Right), shorten(o.Expr))
				shown++
			}
		}
		if shown == 0 {
			fmt.Fprintf(w, "        %s\n", g.Message)
		}
	default:
		if o, headroom, ok := view.Tightest(g.Observations); ok {
			fmt.Fprintf(w, "        tightest: %s %s %s (%s headroom)  ← %s\n", view.Value(o.Left), o.Op, view.Value(o.Right), view.Percent(headroom*100), shorten(o.Expr))
		} else if n := len(g.Observations); n > 0 {
			fmt.Fprintf(w, "        %s held\n", view.Plural(n, "comparison"))
		}
	}
}

// shorten keeps a gate's expression on the verdict's line.
func shorten(expr string) string {
	s := view.OneLine(expr)
	if len(s) > 90 {
		s = s[:89] + "…"
	}
	return s
}

func writeLiveRun(w io.Writer, lr view.LiveRun) {
	t := lr.Run.Target
	where := t.Kind
	if t.BaseURL != "" { // another tool's result may not say
		where += " at " + t.BaseURL
	}
	fmt.Fprintf(w, "%s (%s): model %s, %s\n", lr.Name, where, t.Model, t.ModelSource)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  phase\t%s\n", strings.Join(view.LiveColumns(), "\t"))
	for _, row := range lr.Rows {
		// Every cell filled: tabwriter aligns only unbroken runs of cells.
		fmt.Fprintf(tw, "  %s\t%s\n", row.Label, strings.Join(row.Cells, "\t"))
	}
	_ = tw.Flush()
	if len(lr.Server) > 0 {
		fmt.Fprintln(w, "  the server's own timings, beside the client's:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  phase\t%s\n", strings.Join(view.ServerColumns(), "\t"))
		for _, row := range lr.Server {
			fmt.Fprintf(tw, "  %s\t%s\n", row.Label, strings.Join(row.Cells, "\t"))
		}
		_ = tw.Flush()
	}
	phase := ""
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, lp := range lr.Points {
		if lp.Phase != phase {
			_ = tw.Flush()
			phase = lp.Phase
			fmt.Fprintf(tw, "  %s %s\n", phase, strings.Join(view.LoadColumns(), "\t"))
		}
		fmt.Fprintf(tw, "  %s\n", strings.Join(lp.Cells, "\t"))
	}
	_ = tw.Flush()
	for _, n := range append(lr.Warnings, lr.Errors...) {
		fmt.Fprintf(w, "  ! %s: %s\n", n.Phase, n.Text)
	}
}

// writeSeamWarnings prints the warnings of live seam runs, once per text
// with the runs that gave it.
func writeSeamWarnings(w io.Writer, r *report.Report) {
	var order []string
	runs := map[string][]string{}
	for _, name := range r.RunNames() {
		run := r.Runs[name]
		if run.Target.Kind != report.TargetSeam {
			continue
		}
		for _, msg := range run.Warnings {
			if runs[msg] == nil {
				order = append(order, msg)
			}
			runs[msg] = append(runs[msg], name)
		}
	}
	for _, msg := range order {
		fmt.Fprintf(w, "warning (%s): %s\n", strings.Join(runs[msg], ", "), msg)
	}
}
