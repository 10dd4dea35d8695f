package view

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/report"
)

// SeamColumns are the columns of the seam table, the run's name first.
func SeamColumns() []string {
	return []string{"run", "decode p50/p95 ms", "tok/s", "B/tok", "seam payload/wire B (ratio)", "conns", "queue p95 ms"}
}

// SeamRow is one seam run: its figures, or why it failed.
type SeamRow struct {
	Name  string
	Error string   // set, with Cells nil, when the run failed
	Cells []string // SeamFigures: one per SeamColumns
}

// Seams lists the seam runs of a report in run order.
func Seams(r *report.Report) []SeamRow {
	var out []SeamRow
	for _, name := range r.RunNames() {
		run := r.Runs[name]
		if run.Target.Kind != report.TargetSeam {
			continue
		}
		if run.Status == report.RunError {
			out = append(out, SeamRow{Name: name, Error: run.Error})
			continue
		}
		out = append(out, SeamRow{Name: name, Cells: SeamFigures(name, run)})
	}
	return out
}

// SeamFigures are the columns of a seam run's line: name, decode p50/p95
// ms, tok/s, B/tok, seam payload/wire bytes (ratio), connections, queue
// p95 ms, all from its (last) decode phase and its seams.
func SeamFigures(name string, run *report.Run) []string {
	var dec *report.SeamMetrics
	for _, pn := range run.PhaseNames() {
		if p := run.Phases[pn]; p.Kind == report.KindDecode && p.SeamMetrics != nil {
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
	ratio := Absent
	if wire > 0 {
		r := float64(payload) / float64(wire)
		ratio = Ratio(&r, "%.2f")
	}
	conns := 0
	if run.Connections != nil {
		conns = run.Connections.Attempts
	}
	lat, tps, bpt, q := Absent, Absent, Absent, Absent
	if dec != nil {
		lat = Pair(dec.SeamLatencyMS.P50, dec.SeamLatencyMS.P95, "%.4f")
		tps = Num(dec.TokensPerS, "%.1f")
		bpt = Num(dec.BytesPerToken, "%.0f")
		q = Num(dec.QueueWaitMS.P95, "%.2f")
	}
	return []string{name, lat, tps, bpt, fmt.Sprintf("%d/%d (%s)", payload, wire, ratio), fmt.Sprint(conns), q}
}
