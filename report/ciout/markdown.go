package ciout

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/report"
)

// Markdown writes the report as GitHub-flavoured Markdown for a job summary
// ($GITHUB_STEP_SUMMARY) or a pull-request comment:
//
//	## tollgate: route-session — PASS
//	(one line: runs, gates, scenario file, sha256 prefix)
//	### Seam runs       table: the figures of the text summary
//	### Live runs       table: a row per run × phase (or prompt size, or variant)
//	### Gates           table: status, gate, the values that decided it
//	### Failed runs / Warnings / Request errors   bullet lists, when any
//
// Table cells escape | and backticks, turn < into &lt; (no HTML reaches the
// page) and fold newlines to spaces.
func Markdown(w io.Writer, r *report.Report) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "## tollgate: %s — %s\n\n", inline(r.Scenario.Name), statusWord(r))
	info := plural(len(r.Runs), "run") + ", " + plural(len(r.Gates), "gate")
	if r.Scenario.File != "" {
		info += " · scenario " + inline(r.Scenario.File)
	}
	if sha := r.Scenario.SHA256; sha != "" {
		info += " · sha256 " + inline(sha[:min(12, len(sha))])
	}
	fmt.Fprintf(ew, "%s\n", info)

	writeSeamTable(ew, r)
	writeLiveTable(ew, r)
	writeLoadTable(ew, r)
	writeGatesTable(ew, r)

	if fr := failedRuns(r); len(fr) > 0 {
		fmt.Fprintf(ew, "\n### Failed runs\n\n")
		for _, run := range fr {
			fmt.Fprintf(ew, "- **%s**: %s\n", inline(run.Name), inline(run.Error))
		}
	}
	if r.Incomplete || r.Status == report.StatusIncomplete {
		fmt.Fprintf(ew, "\n**Incomplete:** the run was interrupted; figures cover only what finished.\n")
	}
	var warnings, examples []string
	for _, rn := range runNames(r) {
		run := r.Runs[rn]
		if run == nil {
			continue
		}
		for _, pn := range phaseNames(run) {
			p := run.Phases[pn]
			if p == nil || p.ServingMetrics == nil {
				continue
			}
			for _, msg := range p.Warnings {
				warnings = append(warnings, fmt.Sprintf("- %s/%s: %s", inline(rn), inline(pn), inline(msg)))
			}
			for _, e := range p.Errors.Examples {
				what := e.Class
				if e.Status != 0 {
					what += fmt.Sprintf(" (HTTP %d)", e.Status)
				}
				if e.Request != "" {
					what += " in " + e.Request
				}
				examples = append(examples, fmt.Sprintf("- %s/%s: %s: %s", inline(rn), inline(pn), inline(what), inline(e.Message)))
			}
		}
	}
	if len(warnings) > 0 {
		fmt.Fprintf(ew, "\n### Warnings\n\n%s\n", strings.Join(warnings, "\n"))
	}
	if len(examples) > 0 {
		fmt.Fprintf(ew, "\n### Request errors (examples)\n\n%s\n", strings.Join(examples, "\n"))
	}
	if ew.err != nil {
		return fmt.Errorf("writing Markdown: %w", ew.err)
	}
	return nil
}

func writeSeamTable(w io.Writer, r *report.Report) {
	header := false
	for _, name := range runNames(r) {
		run := r.Runs[name]
		if run == nil || run.Target.Kind != "seam" {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\n### Seam runs\n\n")
			fmt.Fprintln(w, "| run | decode p50/p95 ms | tok/s | B/tok | seam payload/wire B (ratio) | conns | queue p95 ms |")
			fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
			header = true
		}
		if run.Status == report.StatusError {
			fmt.Fprintf(w, "| %s | **ERROR**: %s | | | | | |\n", cell(name), cell(run.Error))
			continue
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells(report.SeamFigures(name, run)), " | "))
	}
}

func writeLiveTable(w io.Writer, r *report.Report) {
	header := false
	for _, name := range runNames(r) {
		run := r.Runs[name]
		if run == nil || run.Target.Kind == "seam" {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\n### Live runs\n\n")
			for _, n := range runNames(r) {
				if lr := r.Runs[n]; lr != nil && lr.Target.Kind != "seam" {
					t := lr.Target
					model := t.Model
					if model == "" {
						model = "(unknown model)"
					}
					fmt.Fprintf(w, "- **%s**: %s %s, model %s\n", inline(n), inline(t.Kind), inline(t.BaseURL), inline(model))
				}
			}
			fmt.Fprintln(w)
			fmt.Fprintln(w, "| run | phase | ok/n | TTFT p50/p95 ms | TPOT p50 ms | decode tok/s p50 | prefill tok/s p50 | e2e p50 ms | cached p50 | speedup |")
			fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
			header = true
		}
		if run.Status == report.StatusError && len(run.PhaseOrder) == 0 {
			fmt.Fprintf(w, "| %s | **ERROR**: %s | | | | | | | | |\n", cell(name), cell(run.Error))
			continue
		}
		row := func(label string, m *report.ServingMetrics, speedup *float64) {
			sp := "-"
			if speedup != nil {
				sp = fmt.Sprintf("%.1fx", *speedup)
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells([]string{name, label, fmt.Sprintf("%d/%d", m.Succeeded, m.Requests),
				stat2(m.TTFTMS.P50, m.TTFTMS.P95, "%.2f"), opt(m.TPOTMS.P50, "%.2f"), opt(m.DecodeTokensPerS.P50, "%.1f"),
				opt(m.PrefillTokensPerS.P50, "%.0f"), opt(m.E2EMS.P50, "%.1f"), opt(m.CachedTokens.P50, "%.0f"), sp}), " | "))
		}
		for _, pn := range phaseNames(run) {
			p := run.Phases[pn]
			if p == nil || p.ServingMetrics == nil {
				continue
			}
			switch {
			case p.Kind == "warmup":
				fmt.Fprintf(w, "| %s | %s | %d/%d | (not measured) | | | | | | |\n", cell(name), cell(pn), p.Succeeded, p.Requests)
			case len(p.ByPromptTokens) > 0:
				for _, k := range pointOrder(p.ByPromptTokens) {
					if pt := p.ByPromptTokens[k]; pt != nil && pt.ServingMetrics != nil {
						row(pn+" "+k, pt.ServingMetrics, nil)
					}
				}
			case len(p.Variants) > 0:
				for _, k := range pointOrder(p.Variants) {
					if v := p.Variants[k]; v != nil && v.ServingMetrics != nil {
						row(pn+" "+k, v.ServingMetrics, v.Speedup)
					}
				}
			case len(p.Points) > 0:
				for _, lp := range p.Points {
					if lp != nil && lp.ServingMetrics != nil {
						row(pn+" "+pointLabel(lp), lp.ServingMetrics, nil)
					}
				}
			default:
				row(pn, p.ServingMetrics, nil)
			}
		}
		if run.Status == report.StatusError {
			fmt.Fprintf(w, "| %s | **ERROR**: %s | | | | | | | | |\n", cell(name), cell(run.Error))
		}
	}
}

// pointOrder orders prompt sizes numerically and prefix-cache variants as
// fresh, identical, small_suffix; anything else follows by name.
func pointOrder(m map[string]*report.Point) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		switch k {
		case "fresh":
			return 0
		case "identical":
			return 1
		case "small_suffix":
			return 2
		}
		return 3
	}
	tokens := func(k string) int {
		if p := m[k]; p != nil {
			return p.TargetPromptTokens
		}
		return 0
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(tokens(a), tokens(b)), strings.Compare(a, b))
	})
	return keys
}

func writeGatesTable(w io.Writer, r *report.Report) {
	if len(r.Gates) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Gates\n\n| status | gate | deciding values |\n| --- | --- | --- |\n")
	for _, g := range r.Gates {
		status := strings.ToUpper(g.Status)
		if g.Status == report.StatusFail || g.Status == report.StatusError {
			status = "**" + status + "**"
		}
		if g.Optional {
			status += " (optional)"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", status, cell(g.Name), cell(deciding(g)))
	}
}

// deciding is what decided a gate, in one line: the false comparisons of a
// failed gate, the error of an errored one, the tightest comparison of a
// passing one.
func deciding(g report.GateResult) string {
	switch g.Status {
	case report.StatusFail, report.StatusError:
		return gateReason(g, 4)
	}
	if o, headroom, ok := report.Tightest(g.Observations); ok {
		return fmt.Sprintf("tightest: %s %s %s (%.0f%% headroom)", value(o.Left), o.Op, value(o.Right), headroom*100)
	}
	if n := len(g.Observations); n > 0 {
		return fmt.Sprintf("%d comparisons held", n)
	}
	return g.Message
}

// cell escapes text for a table cell: pipes would end the cell, backticks
// open code spans, < opens HTML, and a newline ends the table.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "`", "\\`", "<", "&lt;", "\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// cells escapes each of a row's cells.
func cells(row []string) []string {
	out := make([]string, len(row))
	for i, s := range row {
		out[i] = cell(s)
	}
	return out
}

// inline escapes text for a line outside tables the same way.
func inline(s string) string { return cell(s) }

// plural is "1 run", "2 runs".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// pointLabel names a load point as the text summary does.
func pointLabel(lp *report.LoadPoint) string {
	if lp.Rate > 0 {
		return fmt.Sprintf("rate %g/s", lp.Rate)
	}
	return fmt.Sprintf("concurrency %d", lp.Concurrency)
}

// writeLoadTable lists the load points of every live run: throughput,
// goodput and queueing, which the per-phase table has no columns for.
func writeLoadTable(w io.Writer, r *report.Report) {
	header := false
	for _, name := range runNames(r) {
		run := r.Runs[name]
		if run == nil {
			continue
		}
		for _, pn := range phaseNames(run) {
			p := run.Phases[pn]
			if p == nil {
				continue
			}
			for _, lp := range p.Points {
				if lp == nil || lp.ServingMetrics == nil {
					continue
				}
				if !header {
					fmt.Fprintf(w, "\n### Load points\n\n")
					fmt.Fprintln(w, "| run | phase | point | ok/n | req/s | out tok/s | in flight | TTFT p50/p99 ms | queue p95 ms | goodput |")
					fmt.Fprintln(w, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
					header = true
				}
				good := "-"
				if g := lp.Goodput; g != nil && g.AttainedPct != nil {
					good = fmt.Sprintf("%.1f%%", *g.AttainedPct)
				}
				fmt.Fprintf(w, "| %s |\n", strings.Join(cells([]string{name, pn, pointLabel(lp), fmt.Sprintf("%d/%d", lp.Succeeded, lp.Requests),
					opt(lp.RequestThroughputPerS, "%.1f"), opt(lp.OutputTokensPerS, "%.0f"), opt(lp.AchievedConcurrency, "%.1f"),
					stat2(lp.TTFTMS.P50, lp.TTFTMS.P99, "%.1f"), opt(lp.QueueMS.P95, "%.2f"), good}), " | "))
			}
		}
	}
}
