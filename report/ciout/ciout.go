// Package ciout writes a tollgate report in the formats CI systems read:
// JUnit XML (test panes), GitHub-flavoured Markdown (job summaries and PR
// comments), GitHub workflow-command annotations, and per-sample CSV.
//
// Every writer has the shape func(w io.Writer, r *report.Report, …) error,
// returns the first write error instead of swallowing it, and reads only the
// report: it works the same on a report built in-process and on one decoded
// from JSON. Each format is pinned by golden files under testdata; once
// shipped, a format only grows (new columns at the end, new elements), so
// scripts that parse it keep working.
package ciout

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgate-dev/tollgate/report"
)

// errWriter keeps the first write error so a writer can format freely and
// report the failure once at the end.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

// statusWord is the overall verdict in capitals: PASS, FAIL, ERROR,
// NOT_GATED, INCOMPLETE.
func statusWord(r *report.Report) string {
	s := strings.ToUpper(r.Status)
	if s == "" {
		s = "UNKNOWN"
	}
	if r.Incomplete && r.Status != report.StatusIncomplete {
		s += " (incomplete)"
	}
	return s
}

// failedRuns lists the runs that could not complete, in run order.
func failedRuns(r *report.Report) []*report.Run {
	var out []*report.Run
	for _, name := range runNames(r) {
		if run := r.Runs[name]; run != nil && run.Status == report.StatusError {
			out = append(out, run)
		}
	}
	return out
}

// runNames is the report's run order, followed by any run it omits.
func runNames(r *report.Report) []string {
	seen := make(map[string]bool, len(r.RunOrder))
	out := make([]string, 0, len(r.Runs))
	for _, n := range r.RunOrder {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	var rest []string
	for n := range r.Runs {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// phaseNames is a run's phase order, followed by any phase it omits.
func phaseNames(run *report.Run) []string {
	seen := make(map[string]bool, len(run.PhaseOrder))
	out := make([]string, 0, len(run.Phases))
	for _, n := range run.PhaseOrder {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	var rest []string
	for n := range run.Phases {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// runFailure says why the run as a whole is not judged: its failed runs, or
// that it was interrupted. It is empty when every run completed.
func runFailure(r *report.Report) string {
	var parts []string
	for _, run := range failedRuns(r) {
		msg := run.Error
		if msg == "" {
			msg = "status error"
		}
		parts = append(parts, fmt.Sprintf("run %s: %s", run.Name, msg))
	}
	if r.Incomplete || r.Status == report.StatusIncomplete {
		parts = append(parts, "interrupted: the report is partial and marked incomplete")
	}
	return strings.Join(parts, "\n")
}

// gateErrored reports whether a non-optional gate errored.
func gateErrored(r *report.Report) bool {
	for _, g := range r.Gates {
		if !g.Optional && g.Status == report.StatusError {
			return true
		}
	}
	return false
}

// runNeedsCase reports whether the run itself must show as an error: a run
// failed, the run was interrupted, or the status is error with no gate to
// blame for it.
func runNeedsCase(r *report.Report) bool {
	if runFailure(r) != "" {
		return true
	}
	return r.Status == report.StatusError && !gateErrored(r)
}

// falseObservations renders the comparisons that decided a failed gate as
// "expr: left op right".
func falseObservations(g report.GateResult) []string {
	var out []string
	for _, o := range g.Observations {
		if !o.Result {
			out = append(out, fmt.Sprintf("%s: %s %s %s", oneLine(o.Expr), value(o.Left), o.Op, value(o.Right)))
		}
	}
	return out
}

// gateReason is the one-line reason a gate did not pass: the false
// observations (at most max, then a count), else the gate's message.
func gateReason(g report.GateResult, max int) string {
	if g.Status == report.StatusFail {
		obs := falseObservations(g)
		if len(obs) > 0 {
			if len(obs) > max {
				obs = append(obs[:max:max], fmt.Sprintf("… and %d more", len(obs)-max))
			}
			return strings.Join(obs, "; ")
		}
	}
	if g.Message != "" {
		return oneLine(g.Message)
	}
	return g.Status
}

// oneLine collapses runs of whitespace, newlines included, to one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// value formats an observed value the way the summary does: numbers with six
// significant digits, long lists and maps by size.
func value(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case float64:
		return strconv.FormatFloat(x, 'g', 6, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', 6, 32)
	case string:
		return strconv.Quote(x)
	case []any:
		if len(x) > 6 {
			return fmt.Sprintf("[%d items]", len(x))
		}
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = value(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		return fmt.Sprintf("{%d keys}", len(x))
	}
	return fmt.Sprintf("%v", v)
}

// opt formats an optional number, "-" when absent.
func opt(v *float64, format string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v)
}

func stat2(a, b *float64, format string) string { return opt(a, format) + "/" + opt(b, format) }
