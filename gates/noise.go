package gates

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/compare"
)

// Reports are the reports a gate set is judged over, for the helpers that
// need more than the JSON shape: no_regression runs compare's noise-aware
// test between Baseline and Run, as tollgate compare --fail-on does.
type Reports struct {
	Run, Baseline *report.Report
	// AllowAny compares reports of other hosts or models (--baseline-any).
	AllowAny bool
}

// ErrNoReports marks a no_regression evaluated without the reports it
// compares (an environment built by hand, not by a run or judge).
var ErrNoReports = errors.New("no_regression needs the run and its baseline reports")

// noRegression is no_regression(THRESHOLD): the --fail-on test of one
// threshold (METRIC.STAT:±N%), between the baseline and this run. True
// when no statistic it selects regressed beyond noise; false when one did.
// When one could not be decided (over the limit within noise, or noise
// that cannot be told) it is true but marks the gate inconclusive, so a
// gate that cannot tell never passes. Why not `new <= 1.1 * baseline`:
// that fails a noisy unchanged build as often as noise exceeds 10 %.
func (r *recorder) noRegression(spec any) (bool, error) {
	s, ok := spec.(string)
	if !ok {
		return false, fmt.Errorf("no_regression: the threshold must be a string such as \"ttft_ms.p50:+10%%\", got %T", spec)
	}
	t, err := compare.ParseThreshold(s)
	if err != nil {
		return false, fmt.Errorf("no_regression: %w", err)
	}
	if r.reports == nil || r.reports.Run == nil || r.reports.Baseline == nil {
		return false, fmt.Errorf("no_regression(%q): %w", s, ErrNoReports)
	}
	res, err := compare.Compare(r.reports.Baseline, r.reports.Run, compare.Options{FailOn: []compare.Threshold{t}, AllowAny: r.reports.AllowAny})
	if err != nil {
		return false, fmt.Errorf("no_regression(%q): %w", s, err)
	}
	d := res.Verdict()
	// Observed as change % against the limit %, the slice that decided it.
	op, limit := "<=", t.Percent
	if !t.Increase {
		op, limit = ">=", -t.Percent
	}
	r.observe(report.Observation{Expr: fmt.Sprintf("no_regression(%q)", s), Op: op, Left: worstChange(res, d), Right: limit, Result: d == compare.NoRegression})
	switch d {
	case compare.Regressed:
		r.failures = append(r.failures, decided(res, compare.Regressed))
	case compare.Inconclusive:
		r.inconclusive = append(r.inconclusive, decided(res, compare.Inconclusive))
	}
	return d != compare.Regressed, nil
}

// worstChange is the largest percent change of the statistics that came
// out d (the observation's left side), or nil when none did.
func worstChange(res *compare.Result, d compare.Decision) any {
	var worst *float64
	for i := range res.Tested {
		if res.Tested[i].Decision != d {
			continue
		}
		c := res.Tested[i].ChangePct
		if worst == nil || math.Abs(c) > math.Abs(*worst) {
			worst = &c
		}
	}
	if worst == nil {
		return nil
	}
	return *worst
}

// maxReasons bounds the slices a gate's message spells out: the report's
// observations and tollgate compare give the rest.
const maxReasons = 3

// decided says why the tested statistics came out d, a slice per clause
// (the first maxReasons), and for inconclusive ones how many samples per
// slice would decide them all.
func decided(res *compare.Result, d compare.Decision) string {
	var parts []string
	n, need := 0, 0
	for _, t := range res.Tested {
		if t.Decision != d {
			continue
		}
		n++
		need = max(need, t.Need)
		if n > maxReasons {
			continue
		}
		line := t.Reason
		if line == "" {
			line = fmt.Sprintf("%s.%s %s", t.Path, t.Stat, d)
		}
		parts = append(parts, line)
	}
	if n > maxReasons {
		parts = append(parts, fmt.Sprintf("and %d more slice(s) (tollgate compare lists them)", n-maxReasons))
	}
	if d != compare.Inconclusive {
		return strings.Join(parts, "; ")
	}
	if n == 0 {
		parts = append(parts, fmt.Sprintf("%d statistic(s) within the limit but with noise that cannot be told", res.Untold))
	}
	msg := strings.Join(parts, "; ")
	if need > 0 {
		msg += fmt.Sprintf(". About %d samples per slice would decide it", need)
	}
	return msg
}
