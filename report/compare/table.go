package compare

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tollgate-dev/tollgate/internal/textsafe"
	"github.com/tollgate-dev/tollgate/report"
)

// Table writes a comparison side by side, a row per metric:
//
//	compare route-session: old 2026-01-02T03:04:05Z → new 2026-01-02T04:00:00Z
//	   metric                                         p50 old  p50 new  Δ p50    p95 old  p95 new  Δ p95   mean Δ   noise (p50)
//	!  runs["relay/cached"].phases.decode.seam_latency_ms   1.5054   1.9554  +29.9%   …                          deterministic (virtual time)
//	~  runs.embedded.phases.decode.ttft_ms            10.51    10.55    +0.4%    …                                 [-0.21, +0.33] bootstrap …
//
// The marker column: ! worse beyond noise (or a --fail-on regression),
// + better beyond noise, * changed beyond noise (neutral metric),
// ~ within noise, ? cannot tell (noise unknown). Single-valued metrics show their value
// under p50. Then the regressions, threshold breaches within noise and those
// that cannot be told, the one-line Summary of the tests, the phases
// compared per slice only, metrics in one report only, notes, and the
// definition notes of a side another tool measured.
func Table(w io.Writer, res *Result) error {
	// Laid out whole, then cleaned whole (a rune is never split between
	// writes): names and paths come from the reports, whose runs, phases
	// and metrics a server can name.
	// A bytes.Buffer never fails a write: only the final write can.
	var buf bytes.Buffer
	ew := &buf
	fmt.Fprintf(ew, "compare %s: old %s → new %s\n", res.Old.Scenario.Name, when(res.Old), when(res.New))
	regressed := map[*Metric]bool{}
	for _, r := range res.Regressions {
		if r.Metric != nil {
			regressed[r.Metric] = true
		}
	}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, " \tmetric\tp50 old\tp50 new\tΔ p50\tp95 old\tp95 new\tΔ p95\tΔ mean\tnoise (p50)")
	for _, m := range res.Metrics {
		h := m.Headline()
		row := []string{marker(m, regressed[m]), m.Path, num2(m.Old, h), num2(m.New, h), change(m, h)}
		if m.Scalar {
			row = append(row, "", "", "", "")
		} else {
			row = append(row, num2(m.Old, "p95"), num2(m.New, "p95"), change(m, "p95"), change(m, "mean"))
		}
		row = append(row, noiseString(m, h))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush() // into buf: cannot fail
	fmt.Fprintln(ew, "legend: ! worse beyond noise or a --fail-on regression, + better beyond noise, * changed beyond noise, ~ within noise, ? cannot tell (noise unknown)")
	if len(res.Regressions) > 0 {
		fmt.Fprintf(ew, "regressions (%d):\n", len(res.Regressions))
		for _, r := range res.Regressions {
			fmt.Fprintf(ew, "  ! %s\n", r.Reason)
		}
	}
	if len(res.WithinNoise) > 0 {
		fmt.Fprintf(ew, "inconclusive: over a threshold but within noise (%d):\n", len(res.WithinNoise))
		for _, r := range res.WithinNoise {
			fmt.Fprintf(ew, "  ~ %s\n", r.Reason)
		}
	}
	if len(res.CannotTell) > 0 {
		fmt.Fprintf(ew, "over a threshold but cannot tell from noise (%d), %s:\n", len(res.CannotTell), CannotTellVerdict(res))
		for _, r := range res.CannotTell {
			fmt.Fprintf(ew, "  ? %s\n", r.Reason)
		}
	}
	slicesTable(ew, res)
	if s := Summary(res); s != "" {
		fmt.Fprintf(ew, "%s\n", s)
	}
	if len(res.Pooled) > 0 {
		fmt.Fprintf(ew, "compared per slice only (phase-level distributions pool different workloads): %s\n", strings.Join(res.Pooled, ", "))
	}
	if len(res.OnlyOld) > 0 {
		fmt.Fprintf(ew, "only in old (%d): %s\n", len(res.OnlyOld), strings.Join(res.OnlyOld, ", "))
	}
	if len(res.OnlyNew) > 0 {
		fmt.Fprintf(ew, "only in new (%d): %s\n", len(res.OnlyNew), strings.Join(res.OnlyNew, ", "))
	}
	for _, n := range res.Notes {
		fmt.Fprintf(ew, "note: %s\n", n)
	}
	for _, d := range res.Definitions {
		fmt.Fprintf(ew, "definition notes (%s): %s:\n", d.Side, d.Heading)
		for _, n := range d.Notes {
			fmt.Fprintf(ew, "  - %s\n", n)
		}
	}
	if _, err := io.WriteString(w, textsafe.Clean(buf.String())); err != nil {
		return fmt.Errorf("writing comparison: %w", err)
	}
	return nil
}

// Summary is one line on the --fail-on tests: how many, at which
// family-wise error rate, and how many samples per side would tell the
// breaches and slices that cannot be told. Empty without thresholds.
func Summary(res *Result) string {
	if res.Tests == 0 && len(res.CannotTell) == 0 && res.Untold == 0 {
		return ""
	}
	s := fmt.Sprintf("--fail-on: %d tested against noise (Holm–Bonferroni, family-wise α %.2g), %d regression(s)",
		res.Tests, res.Alpha, len(res.Regressions))
	if n := len(res.WithinNoise); n > 0 {
		s += fmt.Sprintf("; %d inconclusive (over a threshold within noise)", n)
	}
	if untold := len(res.CannotTell) + res.Untold; untold > 0 {
		s += fmt.Sprintf("; %d inconclusive: cannot be told from noise (%d over a threshold): telling them needs samples kept (report.samples: true) and at least %d per slice in each report (repeat: %d)",
			untold, len(res.CannotTell), res.Need, res.Need)
		if len(res.Definitions) > 0 {
			s += "; another tool's result needs its per-request values (see its definition notes)"
		}
	}
	return s
}

// CannotTellVerdict says what became of the breaches that cannot be told.
func CannotTellVerdict(res *Result) string {
	if res.FailOnUnknown {
		return "failed: --fail-on-unknown"
	}
	return "inconclusive; --fail-on-unknown fails them"
}

// SliceRow is one --fail-on statistic as the per-slice summary shows it:
// its verdict, change against the limit, the smallest change its data
// could detect, and the samples that would detect the limit's size.
type SliceRow struct {
	Verdict, Stat, Change, Limit, Detectable, Samples, Need string
}

// SliceRows are the rows of the per-slice summary, one per Result.Tested.
func SliceRows(res *Result) []SliceRow {
	rows := make([]SliceRow, 0, len(res.Tested))
	for _, r := range res.Tested {
		row := SliceRow{Verdict: r.Decision.String(), Stat: r.Path + "." + r.Stat, Change: "-", Limit: r.Threshold.Raw[strings.LastIndex(r.Threshold.Raw, ":")+1:],
			Detectable: "-", Samples: "-", Need: "-"}
		if r.New != nil {
			row.Change = FormatChange(r.ChangePct)
		}
		if m := r.Metric; m != nil {
			switch m.Noise.Method {
			case NoiseNone:
				row.Detectable, row.Need = "exact", "-"
			case NoiseBootstrap, NoiseUnknown:
				if m.Noise.OldN > 0 || m.Noise.NewN > 0 {
					row.Samples = fmt.Sprintf("%d/%d", m.Noise.OldN, m.Noise.NewN)
				}
				row.Detectable = "? (noise unknown)"
				if !math.IsNaN(r.MDE) {
					row.Detectable = "±" + pctString(r.MDE)
				}
				if r.Need > 0 {
					row.Need = strconv.Itoa(r.Need)
				}
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// slicesTable writes the per-slice summary of the --fail-on statistics.
func slicesTable(w io.Writer, res *Result) {
	rows := SliceRows(res)
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "--fail-on per slice (detectable: the smallest change the data tells from none, 80%% power at the strictest Holm bound; a change beyond the limit by that much is failed as often):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  verdict\tstatistic\tchange\tlimit\tdetectable\tn old/new\tn per side to detect the limit")
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Verdict, r.Stat, r.Change, r.Limit, r.Detectable, r.Samples, r.Need)
	}
	_ = tw.Flush() // into a buffer: cannot fail
	fmt.Fprintf(w, "verdict: %s\n", res.Verdict())
}

// Word is how every writer names the outcome of a statistic's change:
// better, worse or changed (beyond noise), within noise, same (no change),
// or cannot tell (noise unknown).
func Word(m *Metric, stat string) string {
	switch o := m.Outcome(stat); o {
	case OutcomeSame:
		if pct, ok := m.Change(stat); ok && pct != 0 {
			return "within noise"
		}
		return "same"
	case OutcomeUnknown:
		return "cannot tell"
	default:
		return o.String()
	}
}

func marker(m *Metric, regressed bool) string {
	if regressed {
		return "!"
	}
	switch m.Outcome(m.Headline()) {
	case OutcomeWorse:
		return "!"
	case OutcomeBetter:
		return "+"
	case OutcomeChanged:
		return "*"
	case OutcomeSame:
		return "~"
	}
	return "?"
}

// when is a report's start time, or its file when the time is unset.
func when(r *report.Report) string {
	if r.StartedAt.IsZero() {
		return "(no start time)"
	}
	return r.StartedAt.UTC().Format(time.RFC3339)
}

func num2(vals map[string]float64, stat string) string {
	v, ok := vals[stat]
	if !ok {
		return "-"
	}
	return num(v)
}

// num formats a value with up to six significant digits.
func num(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func change(m *Metric, stat string) string {
	pct, ok := m.Change(stat)
	if !ok {
		return "-"
	}
	return FormatChange(pct)
}

// FormatChange writes a percent change as +12.3%, and a change from 0 as
// +inf% (from 0); every writer that shows a delta calls it.
func FormatChange(pct float64) string {
	switch {
	case math.IsInf(pct, 1):
		return "+inf% (from 0)"
	case math.IsInf(pct, -1):
		return "-inf% (from 0)"
	}
	return fmt.Sprintf("%+.1f%%", pct)
}

// noiseString describes the noise of a statistic: its interval of new − old,
// or why there is none.
func noiseString(m *Metric, stat string) string {
	if m.Noise.Method == NoiseBootstrap {
		iv, ok := m.Noise.Intervals[stat]
		if !ok {
			return fmt.Sprintf("n=%d/%d: noise unknown, %s needs %d samples per side", m.Noise.OldN, m.Noise.NewN, stat, minSamplesFor(stat, m.Noise.Floor))
		}
		return fmt.Sprintf("Δ %s in [%s, %s] (%s)", stat, signed(iv.Lo), signed(iv.Hi), m.Noise.Note)
	}
	return m.Noise.Note
}

func signed(v float64) string {
	s := num(v)
	if v > 0 {
		s = "+" + s
	}
	return s
}
