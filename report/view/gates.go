package view

import (
	"fmt"
	"math"
	"strings"

	"github.com/tollgate-dev/tollgate/report"
)

// Tightest finds the passed numeric ordering comparison with the least
// relative headroom: the one closest to failing, which is what a reader
// wants to know about a passing gate. headroom is |right − left| over the
// larger magnitude.
func Tightest(obs []report.Observation) (o report.Observation, headroom float64, ok bool) {
	for _, c := range obs {
		l, lok := toFloat(c.Left)
		r, rok := toFloat(c.Right)
		if !lok || !rok || !c.Result || c.Op == "==" || c.Op == "!=" {
			continue
		}
		den := math.Max(math.Abs(l), math.Abs(r))
		if den == 0 {
			continue
		}
		if h := math.Abs(r-l) / den; !ok || h < headroom {
			o, headroom, ok = c, h, true
		}
	}
	return o, headroom, ok
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// FailedRuns lists the runs that could not complete, in run order.
func FailedRuns(r *report.Report) []*report.Run {
	var out []*report.Run
	for _, name := range r.RunNames() {
		if run := r.Runs[name]; run.Status == report.RunError {
			out = append(out, run)
		}
	}
	return out
}

// GatesNotJudged says why the report's gates were not judged ("" when
// they were): the run was interrupted, --no-gate, or a run did not
// complete (its gates would only have said that again, each on its own)
// and none was judged.
func GatesNotJudged(r *report.Report) string {
	switch {
	case Interrupted(r):
		return "interrupted"
	case r.Status == report.StatusNotGated:
		return "--no-gate"
	case len(r.Gates) > 0:
		return "" // judged (by an older tollgate, which judged a failed run's gates)
	}
	return RunsFailed(r)
}

// RunsFailed says which runs of r did not complete ("" when all did).
func RunsFailed(r *report.Report) string {
	failed := FailedRuns(r)
	switch len(failed) {
	case 0:
		return ""
	case 1:
		return "run " + failed[0].Name + " did not complete"
	case len(r.RunOrder):
		return "no run completed"
	}
	return fmt.Sprintf("%d of %d runs did not complete", len(failed), len(r.RunOrder))
}

// Skipped counts the gates skipped (they read baseline; none was given).
func Skipped(r *report.Report) int {
	n := 0
	for _, g := range r.Gates {
		if g.Status == report.StatusSkipped {
			n++
		}
	}
	return n
}

// Interrupted reports whether the run was cut short and the report is partial.
func Interrupted(r *report.Report) bool {
	return r.Incomplete || r.Status == report.StatusIncomplete
}

// FalseObservations renders the comparisons that decided a failed gate as
// "expr: left op right".
func FalseObservations(g report.GateResult) []string {
	var out []string
	for _, o := range g.Observations {
		if !o.Result {
			out = append(out, fmt.Sprintf("%s: %s %s %s", OneLine(o.Expr), Value(o.Left), o.Op, Value(o.Right)))
		}
	}
	return out
}

// GateReason is the one-line reason a gate did not pass: its false
// observations (at most max, then a count), else its message.
func GateReason(g report.GateResult, max int) string {
	if g.Status == report.StatusFail {
		obs := FalseObservations(g)
		if len(obs) > 0 {
			if len(obs) > max {
				obs = append(obs[:max:max], fmt.Sprintf("… and %d more", len(obs)-max))
			}
			return strings.Join(obs, "; ")
		}
	}
	if g.Message != "" {
		return OneLine(g.Message)
	}
	return g.Status
}
