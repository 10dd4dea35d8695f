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
	"strings"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/view"
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

// runFailure says why the run as a whole is not judged: its failed runs, or
// that it was interrupted. It is empty when every run completed.
func runFailure(r *report.Report) string {
	var parts []string
	for _, run := range view.FailedRuns(r) {
		msg := run.Error
		if msg == "" {
			msg = "status error"
		}
		parts = append(parts, fmt.Sprintf("run %s: %s", run.Name, msg))
	}
	if view.Interrupted(r) {
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
			out = append(out, fmt.Sprintf("%s: %s %s %s", view.OneLine(o.Expr), view.Value(o.Left), o.Op, view.Value(o.Right)))
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
		return view.OneLine(g.Message)
	}
	return g.Status
}
