package gates

import "github.com/tollgate-dev/tollgate/report"

// Exit codes of a run, as DESIGN.md defines them. CI acts on these; never
// renumber.
const (
	ExitPass       = 0 // ran; every required gate passed
	ExitGateFailed = 1 // ran; at least one required gate failed
	ExitNotJudged  = 3 // the run could not complete or be judged
	// ExitInconclusive: ran and judged against a baseline, and at least one
	// comparison could not be decided: over a threshold but not beyond
	// noise, or noise that cannot be told. Never 0 unless accepted
	// (--accept-inconclusive).
	ExitInconclusive = 4
	ExitInterrupted  = 130 // interrupted; a partial report was written
)

// Outcome is everything the verdict of a run depends on.
type Outcome struct {
	Results     []report.GateResult
	Completed   bool // the run finished within the scenario's tolerance
	Interrupted bool // stopped by a signal
	NotGated    bool // --no-gate: measured and reported, not judged
	// Unjudged: the gates could not be judged (the report could not be
	// turned into their environment, or the baseline proved not comparable).
	Unjudged bool
	// OutputFailed: an output (report, HTML, summary, …) could not be written.
	OutputFailed bool
	// AcceptInconclusive exits 0, not 4, when a required gate could not
	// tell a change from noise (--accept-inconclusive); the status still
	// says inconclusive.
	AcceptInconclusive bool
}

// Verdict folds an outcome into the report's status and the exit code.
//
// An interruption outranks everything (130): nothing was judged. A run that
// did not complete exits 3 even when a gate failed, so CI can tell a broken
// run from a regression. Otherwise a failed required gate outranks an
// errored one (1): the run was judged and it regressed, and an errored one
// outranks an inconclusive one (3 before 4). Optional gates never
// change either. An output that could not be written makes a passing run
// exit 3; the status, already written into the report, is unchanged by it.
func Verdict(o Outcome) (status string, code int) {
	switch {
	case o.Interrupted:
		return report.StatusIncomplete, ExitInterrupted
	case !o.Completed || o.Unjudged:
		status, code = report.StatusError, ExitNotJudged
	case o.NotGated:
		status, code = report.StatusNotGated, ExitPass
	default:
		status, code = judge(o.Results)
		if code == ExitInconclusive && o.AcceptInconclusive {
			code = ExitPass
		}
	}
	if o.OutputFailed && (code == ExitPass || code == ExitInconclusive) {
		code = ExitNotJudged
	}
	return status, code
}

func judge(results []report.GateResult) (string, int) {
	failed, errored, undecided := false, false, false
	for _, g := range results {
		if g.Optional {
			continue
		}
		switch g.Status {
		case report.StatusFail:
			failed = true
		case report.StatusError:
			errored = true
		case report.StatusInconclusive:
			undecided = true
		}
	}
	switch {
	case failed:
		return report.StatusFail, ExitGateFailed
	case errored:
		return report.StatusError, ExitNotJudged
	case undecided:
		return report.StatusInconclusive, ExitInconclusive
	}
	return report.StatusPass, ExitPass
}
