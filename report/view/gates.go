package view

import (
	"math"

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

// Interrupted reports whether the run was cut short and the report is partial.
func Interrupted(r *report.Report) bool {
	return r.Incomplete || r.Status == report.StatusIncomplete
}
