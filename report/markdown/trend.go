package markdown

import (
	"fmt"
	"io"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/iox"
	"github.com/tollgate-dev/tollgate/report/trend"
	"github.com/tollgate-dev/tollgate/report/view"
)

// WriteTrend writes a trend (tollgate report --trend --markdown): per
// scenario its reports in run order, what compare flags point by point,
// and each changing metric's headline statistic across the reports.
func WriteTrend(w io.Writer, t *trend.Trend) error {
	ew := iox.NewErrWriter(w)
	for _, sc := range t.Scenarios {
		flags := sc.Flags()
		regressions := 0
		for _, f := range flags {
			if f.Kind == trend.FlagRegression {
				regressions++
			}
		}
		fmt.Fprintf(ew, "## tollgate trend: %s — %d reports, %s\n\n", inline(view.Clean(sc.Name)), len(sc.Points), view.Plural(regressions, "regression"))
		fmt.Fprintln(ew, "| # | report | started | status |")
		fmt.Fprintln(ew, "| ---: | --- | --- | --- |")
		for _, p := range sc.Points {
			started := ""
			if !p.Started.IsZero() {
				started = p.Started.UTC().Format("2006-01-02 15:04:05 UTC")
			}
			fmt.Fprintf(ew, "| %s |\n", strings.Join(cells([]string{fmt.Sprint(p.N), p.Label, started, p.Status}), " | "))
		}
		fmt.Fprintln(ew)
		if len(flags) > 0 {
			fmt.Fprintln(ew, "| # | verdict | metric | why |")
			fmt.Fprintln(ew, "| ---: | --- | --- | --- |")
			for _, f := range flags {
				fmt.Fprintf(ew, "| %s |\n", strings.Join(cells([]string{fmt.Sprint(f.Point + 1), f.Kind, f.Path + "." + f.Stat, f.Reason}), " | "))
			}
		} else {
			fmt.Fprint(ew, "Nothing flagged against the report before.\n")
		}
		fmt.Fprintln(ew)
		head := []string{"where", "metric", "stat"}
		for _, p := range sc.Points {
			head = append(head, fmt.Sprintf("#%d", p.N))
		}
		fmt.Fprintf(ew, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat(" --- |", len(head)))
		for _, s := range sc.Metrics {
			if s.Constant() {
				continue
			}
			stat := s.Stats()[0]
			row := []string{s.Where(), s.Metric(), stat}
			for i, v := range s.Values {
				x, ok := v[stat]
				c := ""
				if ok {
					c = view.Number(x)
				}
				if _, reg := s.Steps[i].Regressed(stat); reg {
					c += " ❌"
				}
				row = append(row, c)
			}
			fmt.Fprintf(ew, "| %s |\n", strings.Join(cells(row), " | "))
		}
		fmt.Fprintln(ew)
		for _, n := range sc.Notes {
			fmt.Fprintf(ew, "> note: %s\n\n", inline(n))
		}
		for _, d := range sc.Definitions {
			writeDefinitions(ew, d.Side, d.Heading, d.Notes)
		}
	}
	for _, p := range t.Alone {
		fmt.Fprintf(ew, "> alone: %s shares its scenario with no other report given\n\n", inline(p.File))
	}
	if err := ew.Err(); err != nil {
		return fmt.Errorf("writing Markdown trend: %w", err)
	}
	return nil
}
