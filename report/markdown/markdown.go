// Package markdown writes a tollgate report as GitHub-flavoured Markdown,
// for a job summary or a pull-request comment, from report/view's tables.
// It reads only the report, so it writes the same bytes for a report built
// in-process and one decoded from JSON; golden files under testdata pin the
// format, which once shipped only grows, so scripts that parse it keep
// working.
package markdown

import (
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/tollgate-dev/tollgate/internal/iox"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/view"
)

// Write writes the report as GitHub-flavoured Markdown for a job summary
// ($GITHUB_STEP_SUMMARY) or a pull-request comment:
//
//	## tollgate: route-session — PASS
//	(one line: runs, gates, scenario file, sha256 prefix)
//	### Seam runs       table: the figures of the text summary
//	### Live runs       table: a row per run × phase (or prompt size, or variant)
//	### Load points     table: a row per load point
//	### Gates           table: status, gate, the values that decided it
//	### Failed runs / Warnings / Request errors   bullet lists, when any
//
// The tables are report/view's, as the text summary and the HTML page show
// them. Every string from the report goes through cell, in a table or not:
// it shows as written and makes no Markdown (no heading, link, image,
// emphasis, HTML or broken table).
func Write(w io.Writer, r *report.Report) error {
	r = view.Sanitized(r)
	ew := iox.NewErrWriter(w)
	fmt.Fprintf(ew, "## tollgate: %s — %s\n\n", inline(r.Scenario.Name), statusWord(r))
	info := view.Plural(len(r.Runs), "run") + ", " + view.Plural(len(r.Gates), "gate")
	if why := view.GatesNotJudged(r); why != "" && len(r.Gates) == 0 {
		info = view.Plural(len(r.Runs), "run") + ", gates not judged (" + inline(why) + ")"
	}
	if r.Scenario.File != "" {
		info += " · scenario " + inline(r.Scenario.File)
	}
	if sha := r.Scenario.SHA256; sha != "" {
		info += " · sha256 " + inline(sha[:min(12, len(sha))])
	}
	fmt.Fprintf(ew, "%s\n", info)
	if imp := r.Imported; imp != nil {
		writeDefinitions(ew, "", imp.Heading(), imp.Notes)
	}

	live := view.Live(r)
	writeSeamTable(ew, r)
	writeLiveTable(ew, live)
	writeLoadTable(ew, live)
	writeServerTable(ew, live)
	writeCapacityTable(ew, r)
	writeGatesTable(ew, r)

	if fr := view.FailedRuns(r); len(fr) > 0 {
		fmt.Fprintf(ew, "\n### Failed runs\n\n")
		for _, run := range fr {
			fmt.Fprintf(ew, "- **%s**: %s\n", inline(run.Name), inline(run.Error))
		}
	}
	if view.Interrupted(r) {
		fmt.Fprintf(ew, "\n**Incomplete:** the run was interrupted; figures cover only what finished.\n")
	}
	var warnings, examples []string
	for _, rn := range r.RunNames() {
		ws, es := view.Notes(rn, r.Runs[rn])
		for _, n := range ws {
			warnings = append(warnings, noteLine(n))
		}
		for _, n := range es {
			examples = append(examples, noteLine(n))
		}
	}
	if len(warnings) > 0 {
		fmt.Fprintf(ew, "\n### Warnings\n\n%s\n", strings.Join(warnings, "\n"))
	}
	if len(examples) > 0 {
		fmt.Fprintf(ew, "\n### Request errors (examples)\n\n%s\n", strings.Join(examples, "\n"))
	}
	if err := ew.Err(); err != nil {
		return fmt.Errorf("writing Markdown: %w", err)
	}
	return nil
}

func noteLine(n view.Note) string {
	return fmt.Sprintf("- %s/%s: %s", inline(n.Run), inline(n.Phase), inline(n.Text))
}

// tableHeader writes a table's header row and its alignment row: the
// first `left` columns left-aligned (names), the rest right-aligned
// (figures). Markdown spells TTFT and TPOT in capitals, as its headings
// always have.
func tableHeader(w io.Writer, cols []string, left int) {
	caps := strings.NewReplacer("ttft", "TTFT", "tpot", "TPOT")
	align := make([]string, len(cols))
	for i := range cols {
		align[i] = "---:"
		if i < left {
			align[i] = "---"
		}
	}
	fmt.Fprintf(w, "| %s |\n| %s |\n", caps.Replace(strings.Join(cells(cols), " | ")), strings.Join(align, " | "))
}

// errorRow is a table row for a run that failed: its name, the error,
// then empty cells to the table's width.
func errorRow(w io.Writer, name, msg string, width int) {
	fmt.Fprintf(w, "| %s | **ERROR**: %s |%s\n", cell(name), cell(msg), strings.Repeat(" |", width-2))
}

func tableRow(w io.Writer, row []string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(cells(row), " | "))
}

func writeSeamTable(w io.Writer, r *report.Report) {
	rows := view.Seams(r)
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Seam runs\n\n")
	tableHeader(w, view.SeamColumns(), 1)
	for _, row := range rows {
		if row.Cells == nil {
			errorRow(w, row.Name, row.Error, len(view.SeamColumns()))
			continue
		}
		tableRow(w, row.Cells)
	}
}

func writeLiveTable(w io.Writer, live []view.LiveRun) {
	if len(live) == 0 {
		return
	}
	cols := append([]string{"run", "phase"}, view.LiveColumns()...)
	fmt.Fprintf(w, "\n### Live runs\n\n")
	for _, lr := range live {
		t := lr.Run.Target
		model := t.Model
		if model == "" {
			model = "(unknown model)"
		}
		fmt.Fprintf(w, "- **%s**: %s %s, model %s\n", inline(lr.Name), inline(t.Kind), inline(t.BaseURL), inline(model))
	}
	fmt.Fprintln(w)
	tableHeader(w, cols, 2)
	for _, lr := range live {
		failed := lr.Run.Status == report.RunError
		if failed && len(lr.Run.PhaseOrder) == 0 {
			errorRow(w, lr.Name, lr.Run.Error, len(cols))
			continue
		}
		for _, row := range lr.Rows {
			if row.Warmup {
				// Markdown leaves a warmup row's figures blank.
				fmt.Fprintf(w, "| %s | %s | %s | (not measured) |%s\n", cell(lr.Name), cell(row.Label), cell(row.Cells[0]), strings.Repeat(" |", len(cols)-4))
				continue
			}
			tableRow(w, append([]string{lr.Name, row.Label}, row.Cells...))
		}
		if failed {
			errorRow(w, lr.Name, lr.Run.Error, len(cols))
		}
	}
}

// writeLoadTable lists the load points of every live run.
func writeLoadTable(w io.Writer, live []view.LiveRun) {
	writeRunsTable(w, live, "\n### Load points\n\n", append([]string{"run", "phase"}, view.LoadColumns()...), func(lr view.LiveRun) [][]string {
		var rows [][]string
		for _, lp := range lr.Points {
			rows = append(rows, append([]string{lr.Name, lp.Phase}, lp.Cells...))
		}
		return rows
	})
}

// writeServerTable writes the figures servers timed themselves, beside
// the client's, when any did.
func writeServerTable(w io.Writer, live []view.LiveRun) {
	heading := "\n### Server timings\n\nThe server's own timings of its requests, beside the client's figures.\n\n"
	writeRunsTable(w, live, heading, append([]string{"run", "phase"}, view.ServerColumns()...), func(lr view.LiveRun) [][]string {
		var rows [][]string
		for _, row := range lr.Server {
			rows = append(rows, append([]string{lr.Name, row.Label}, row.Cells...))
		}
		return rows
	})
}

// writeRunsTable writes one table of every live run's rows (run and
// phase first, left-aligned), under heading, when there is any row.
func writeRunsTable(w io.Writer, live []view.LiveRun, heading string, cols []string, rows func(view.LiveRun) [][]string) {
	header := false
	for _, lr := range live {
		for _, row := range rows(lr) {
			if !header {
				fmt.Fprint(w, heading)
				tableHeader(w, cols, 3)
				header = true
			}
			tableRow(w, row)
		}
	}
}

// writeCapacityTable writes what each capacity search found and what
// bound it, when a run has one.
func writeCapacityTable(w io.Writer, r *report.Report) {
	for i, cs := range view.Capacities(r) {
		if i == 0 {
			fmt.Fprint(w, "\n### Capacity\n\n")
			tableHeader(w, []string{"run", "phase", "capacity", "confirmed", "what bound it", "stop", "probes"}, 5)
		}
		c := cs.Capacity
		tableRow(w, []string{cs.Run, cs.Phase, view.CapacityFound(c), fmt.Sprint(c.Confirmed), view.CapacityBound(c), c.Stop, fmt.Sprintf("%d in %.1f s", c.ProbeCount, c.WallS)})
	}
}

func writeGatesTable(w io.Writer, r *report.Report) {
	if len(r.Gates) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Gates\n\n| status | gate | deciding values |\n| --- | --- | --- |\n")
	for _, g := range r.Gates {
		status := cell(strings.ToUpper(g.Status))
		if g.Status == report.StatusFail || g.Status == report.StatusError || g.Status == report.StatusInconclusive {
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
	case report.StatusFail, report.StatusError, report.StatusInconclusive:
		return view.GateReason(g, 4)
	}
	if o, headroom, ok := view.Tightest(g.Observations); ok {
		return fmt.Sprintf("tightest: %s %s %s (%s headroom)", view.Value(o.Left), o.Op, view.Value(o.Right), view.Percent(headroom*100))
	}
	if n := len(g.Observations); n > 0 {
		return view.Plural(n, "comparison") + " held"
	}
	return g.Message
}

// cell escapes text from the report for a table cell or a line of the
// page, so that it shows as written and makes nothing: a newline would end
// the table or start a heading or a list, so it is a space; | ends a cell;
// ` opens code; * _ ~ emphasis (an _ inside a word, as in prefix_cache,
// cannot, and is left); ]( makes a link or an image; < opens HTML and &
// an entity; $ opens math on GitHub; \ would escape what follows it.
func cell(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	rs := []rune(s)
	for i, r := range rs {
		switch r {
		case '\\', '|', '`', '*', '~', '$':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '_':
			if i == 0 || i == len(rs)-1 || !wordRune(rs[i-1]) || !wordRune(rs[i+1]) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		case '(':
			if i > 0 && rs[i-1] == ']' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		case '<':
			b.WriteString("&lt;")
		case '&':
			b.WriteString("&amp;")
		case '\r':
			if i+1 < len(rs) && rs[i+1] == '\n' {
				continue // \r\n is one line break
			}
			b.WriteByte(' ')
		case '\n':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// wordRune reports whether r is a letter or digit, between two of which an
// _ cannot open or close emphasis.
func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

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

// statusWord is the overall verdict in capitals: PASS, FAIL, ERROR,
// NOT_GATED, INCOMPLETE, INCONCLUSIVE.
func statusWord(r *report.Report) string {
	s := strings.ToUpper(r.Status)
	if s == "" {
		s = "UNKNOWN"
	}
	if r.Incomplete && r.Status != report.StatusIncomplete {
		s += " (incomplete)"
	}
	return cell(s)
}
