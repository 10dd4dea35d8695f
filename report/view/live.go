package view

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/report"
)

// LiveColumns are the columns of the live table after the row's label.
func LiveColumns() []string {
	return []string{"ok/n", "ttft p50/p95 ms", "tpot p50 ms", "decode tok/s p50", "prefill tok/s p50", "e2e p50 ms", "cached p50", "speedup"}
}

// WarmupCell is the TTFT cell of a warmup row: warmup requests are
// counted, never measured.
const WarmupCell = "(warmup)"

// LiveRun is one live (non-seam) run: its rows, load points and notes.
type LiveRun struct {
	Name     string
	Run      *report.Run
	Rows     []LiveRow
	Points   []LoadRow // every load point of every load phase, in phase order
	Warnings []Note
	Errors   []Note // examples of failed requests
	// Server holds the rows whose requests the server timed itself
	// (llama.cpp's timings), its figures beside the client's.
	Server []ServerRow
}

// ServerColumns are the columns of the server-timings table after the
// row's label: each figure as the server timed it / as the client
// measured its counterpart (prompt evaluation against TTFT, which also
// holds the network and the first token's decode).
func ServerColumns() []string {
	return []string{"source", "n", "prompt p50 ms server/ttft", "prefill tok/s p50 server/client", "decode tok/s p50 server/client", "ms/token p50 server/tpot"}
}

// ServerRow is one row of the server-timings table: a phase, or one
// breakdown of it, that the server timed.
type ServerRow struct {
	Label string
	Cells []string // one per ServerColumns
}

// serverRows are the rows of lr's live table (warmup aside) whose
// requests the server timed.
func serverRows(rows []LiveRow) []ServerRow {
	var out []ServerRow
	for _, row := range rows {
		m := row.Metrics
		if row.Warmup || m == nil || m.Server == nil {
			continue
		}
		s := m.Server
		out = append(out, ServerRow{Label: row.Label, Cells: []string{
			s.Source, fmt.Sprint(s.Requests),
			Num(s.PromptMS.P50, "%.2f") + "/" + Num(m.TTFTMS.P50, "%.2f"),
			Num(s.PromptPerS.P50, "%.0f") + "/" + Num(m.PrefillTokensPerS.P50, "%.0f"),
			Num(s.PredictedPerS.P50, "%.1f") + "/" + Num(m.DecodeTokensPerS.P50, "%.1f"),
			Num(s.PredictedPerTokenMS.P50, "%.2f") + "/" + Num(m.TPOTMS.P50, "%.2f"),
		}})
	}
	return out
}

// LiveRow is one row of the live table: a phase, or one breakdown of it (a
// prompt size, a prefix-cache variant).
type LiveRow struct {
	Phase   string // the phase's name
	Key     string // the breakdown key ("256", "fresh"); empty for a whole phase
	Label   string // what the row is called: "prefill 256", "load (all points)"
	Warmup  bool   // counted, not measured: Cells hold only ok/n
	Metrics *report.ServingMetrics
	Speedup *float64
	Cells   []string // one per LiveColumns
}

// Note is a line about one phase of a run: a warning, or a failed request.
type Note struct {
	Run, Phase, Text string
}

// Live lists the live runs of a report in run order, each with its rows.
// A run that failed before any phase has no rows; its Run.Error says why.
func Live(r *report.Report) []LiveRun {
	var out []LiveRun
	for _, name := range r.RunNames() {
		run := r.Runs[name]
		if run.Target.Kind == report.TargetSeam {
			continue
		}
		lr := LiveRun{Name: name, Run: run}
		for _, pn := range run.PhaseNames() {
			p := run.Phases[pn]
			lr.Rows = append(lr.Rows, phaseRows(pn, p)...)
			lr.Points = append(lr.Points, loadRows(pn, p)...)
		}
		lr.Warnings, lr.Errors = Notes(name, run)
		lr.Server = serverRows(lr.Rows)
		out = append(out, lr)
	}
	return out
}

// phaseRows are a phase's rows: one for warmup and plain phases and for a
// load phase (over all its points, which LoadRow details), one per
// breakdown for prompt sizes and prefix-cache variants.
func phaseRows(pn string, p *report.Phase) []LiveRow {
	if p.ServingMetrics == nil {
		return nil
	}
	switch {
	case p.Kind == report.KindWarmup:
		cells := []string{okN(p.ServingMetrics), WarmupCell}
		for len(cells) < len(LiveColumns()) {
			cells = append(cells, Absent)
		}
		return []LiveRow{{Phase: pn, Label: pn, Warmup: true, Metrics: p.ServingMetrics, Cells: cells}}
	case len(p.Points) > 0:
		return []LiveRow{liveRow(pn, "", pn+" (all points)", p.ServingMetrics, nil)}
	case len(p.ByPromptTokens) > 0:
		return breakdownRows(pn, p.ByPromptTokens)
	case len(p.Variants) > 0:
		return breakdownRows(pn, p.Variants)
	}
	return []LiveRow{liveRow(pn, "", pn, p.ServingMetrics, nil)}
}

func breakdownRows(pn string, m map[string]*report.Point) []LiveRow {
	var rows []LiveRow
	for _, k := range report.PointKeys(m) {
		if pt := m[k]; pt.ServingMetrics != nil {
			rows = append(rows, liveRow(pn, k, pn+" "+k, pt.ServingMetrics, pt.Speedup))
		}
	}
	return rows
}

func liveRow(phase, key, label string, m *report.ServingMetrics, speedup *float64) LiveRow {
	return LiveRow{Phase: phase, Key: key, Label: label, Metrics: m, Speedup: speedup, Cells: []string{
		okN(m), TTFTCell(m), Num(m.TPOTMS.P50, "%.2f"), Num(m.DecodeTokensPerS.P50, "%.1f"),
		Num(m.PrefillTokensPerS.P50, "%.0f"), Num(m.E2EMS.P50, "%.1f"), Num(m.CachedTokens.P50, "%.0f"), Ratio(speedup, "%.1f"),
	}}
}

func okN(m *report.ServingMetrics) string { return fmt.Sprintf("%d/%d", m.Succeeded, m.Requests) }

// Notes are the warnings and the failed-request examples of a run's live
// phases, in phase order.
func Notes(name string, run *report.Run) (warnings, errors []Note) {
	for _, pn := range run.PhaseNames() {
		p := run.Phases[pn]
		if p.ServingMetrics == nil {
			continue
		}
		for _, msg := range p.Warnings {
			warnings = append(warnings, Note{Run: name, Phase: pn, Text: msg})
		}
		if msg := resolutionNote(p.ServingMetrics); msg != "" {
			warnings = append(warnings, Note{Run: name, Phase: pn, Text: msg})
		}
		for _, e := range p.Errors.Examples {
			errors = append(errors, Note{Run: name, Phase: pn, Text: RequestError(e)})
		}
	}
	return warnings, errors
}

// resolutionNote says how finely a phase's reads timed its token events,
// when some shared a read: those events are timed at the read's arrival
// (their itl_ms gap 0), and a first token that shared its read makes that
// request's ttft_ms an upper bound. Derived from the report, so a report
// read back renders the same; "" when every event had its own read.
func resolutionNote(m *report.ServingMetrics) string {
	if m.CoalescedEvents == 0 && m.TTFTCoalesced == 0 {
		return ""
	}
	of := ""
	if ev := m.SSETokenEvents; ev.Mean != nil {
		of = fmt.Sprintf(" of %.0f", *ev.Mean*float64(ev.Count))
	}
	msg := fmt.Sprintf("timing resolution: %d%s token events came in one read with the event before them (the client read late), timed at that read: itl_ms holds a 0 ms gap for each", m.CoalescedEvents, of)
	if m.TTFTCoalesced > 0 {
		msg += fmt.Sprintf("; %d of %d requests' first token shared its read, their ttft_ms an upper bound", m.TTFTCoalesced, m.Succeeded)
	}
	return msg
}

// RequestError describes a failed request: class (HTTP status) in which
// request: message.
func RequestError(e report.RequestError) string {
	what := e.Class
	if e.Status != 0 {
		what += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Request != "" {
		what += " in " + e.Request
	}
	return what + ": " + e.Message
}
