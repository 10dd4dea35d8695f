package markdown

import (
	"fmt"
	"io"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/iox"
	"github.com/tollgate-dev/tollgate/report/compare"
	"github.com/tollgate-dev/tollgate/report/view"
)

// WriteComparison writes a comparison (tollgate compare --markdown) for a
// job summary or a pull-request comment: the verdict line, the
// regressions, the breaches within noise or that cannot be told, then a
// row per metric with its p50 (value) and p95, each old → new, the change
// and compare.Word's verdict, exactly as compare's text table judges them.
//
//	## tollgate compare: serving — 2 regressions
//	…
//	| run | where | metric | p50 | Δ p50 | verdict | p95 | Δ p95 | verdict |
func WriteComparison(w io.Writer, res *compare.Result) error {
	ew := iox.NewErrWriter(w)
	verdict := res.Verdict().String()
	if n := len(res.Regressions); n > 0 {
		verdict = view.Plural(n, "regression")
	}
	fmt.Fprintf(ew, "## tollgate compare: %s — %s\n\n", inline(view.Clean(res.New.Scenario.Name)), verdict)
	list := func(title, mark string, rs []compare.Regression) {
		if len(rs) == 0 {
			return
		}
		fmt.Fprintf(ew, "**%s**\n\n", fmt.Sprintf(title, len(rs)))
		for _, r := range rs {
			fmt.Fprintf(ew, "- %s %s\n", mark, inline(view.Clean(r.Reason)))
		}
		fmt.Fprintln(ew)
	}
	list("Regressions (%d)", "❌", res.Regressions)
	list("Inconclusive: over a threshold but within noise (%d)", "〰️", res.WithinNoise)
	list("Over a threshold but cannot tell from noise (%d), "+compare.CannotTellVerdict(res), "❔", res.CannotTell)
	if rows := compare.SliceRows(res); len(rows) > 0 {
		fmt.Fprintln(ew, "| verdict | statistic | change | limit | detectable | n old/new | n per side to detect the limit |")
		fmt.Fprintln(ew, "| --- | --- | ---: | ---: | ---: | ---: | ---: |")
		for _, r := range rows {
			fmt.Fprintf(ew, "| %s |\n", strings.Join(cells([]string{r.Verdict, view.Clean(r.Stat), r.Change, r.Limit, r.Detectable, r.Samples, r.Need}), " | "))
		}
		fmt.Fprintln(ew, "\nDetectable: the smallest change each slice's data tells from none (80% power at the strictest Holm bound); a change beyond the limit by that much is failed as often.")
		fmt.Fprintln(ew)
	}
	if s := compare.Summary(res); s != "" {
		fmt.Fprintf(ew, "%s\n\n", inline(s))
	}
	if len(res.Pooled) > 0 {
		fmt.Fprintf(ew, "Compared per slice only (phase-level distributions pool different workloads): %s\n\n", inline(view.Clean(strings.Join(res.Pooled, ", "))))
	}
	fmt.Fprintln(ew, "| run | where | metric | p50 (value) | Δ | verdict | p95 | Δ p95 | verdict p95 |")
	fmt.Fprintln(ew, "| --- | --- | --- | ---: | ---: | --- | ---: | ---: | --- |")
	for _, d := range view.DeltasOf(res) {
		row := []string{view.Clean(d.Run), view.Clean(d.Where), view.Clean(d.Name)}
		for _, st := range d.Stats {
			row = append(row, st.Old+" → "+st.New, st.Change, st.Word)
		}
		for len(row) < 9 {
			row = append(row, "")
		}
		fmt.Fprintf(ew, "| %s |\n", strings.Join(cells(row), " | "))
	}
	for _, n := range res.Notes {
		fmt.Fprintf(ew, "\n> note: %s\n", inline(view.Clean(n)))
	}
	for _, d := range res.Definitions {
		writeDefinitions(ew, d.Side, d.Heading, d.Notes)
	}
	if err := ew.Err(); err != nil {
		return fmt.Errorf("writing Markdown comparison: %w", err)
	}
	return nil
}

// writeDefinitions writes the definition notes of a report another tool
// measured: a heading, then a bullet per note.
func writeDefinitions(w io.Writer, side, heading string, notes []string) {
	title := "Definition notes"
	if side != "" {
		title += " (" + side + ")"
	}
	fmt.Fprintf(w, "\n### %s\n\n%s:\n\n", title, inline(view.Clean(heading)))
	for _, n := range notes {
		fmt.Fprintf(w, "- %s\n", inline(view.Clean(n)))
	}
}
