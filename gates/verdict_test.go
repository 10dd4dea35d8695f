package gates

import (
	"testing"

	"github.com/tollgate-dev/tollgate/report"
)

func TestVerdict(t *testing.T) {
	pass := report.GateResult{Name: "p", Status: report.StatusPass}
	fail := report.GateResult{Name: "f", Status: report.StatusFail}
	errd := report.GateResult{Name: "e", Status: report.StatusError}
	optFail := report.GateResult{Name: "of", Status: report.StatusFail, Optional: true}
	optErr := report.GateResult{Name: "oe", Status: report.StatusError, Optional: true}
	gates := func(rs ...report.GateResult) []report.GateResult { return rs }
	for _, tc := range []struct {
		name   string
		in     Outcome
		status string
		code   int
	}{
		{"every gate passed", Outcome{Results: gates(pass, pass), Completed: true}, report.StatusPass, ExitPass},
		{"no gates", Outcome{Completed: true}, report.StatusPass, ExitPass},
		{"a gate failed", Outcome{Results: gates(pass, fail), Completed: true}, report.StatusFail, ExitGateFailed},
		{"a gate errored", Outcome{Results: gates(pass, errd), Completed: true}, report.StatusError, ExitNotJudged},
		{"one failed and one errored", Outcome{Results: gates(errd, fail), Completed: true}, report.StatusFail, ExitGateFailed},
		{"optional failure", Outcome{Results: gates(pass, optFail), Completed: true}, report.StatusPass, ExitPass},
		{"optional error", Outcome{Results: gates(pass, optErr), Completed: true}, report.StatusPass, ExitPass},
		{"optional failure beside a required error", Outcome{Results: gates(optFail, errd), Completed: true}, report.StatusError, ExitNotJudged},
		{"incomplete run", Outcome{Results: gates(pass), Completed: false}, report.StatusError, ExitNotJudged},
		{"incomplete run with a failed gate", Outcome{Results: gates(fail), Completed: false}, report.StatusError, ExitNotJudged},
		{"interrupted", Outcome{Results: gates(fail), Interrupted: true}, report.StatusIncomplete, ExitInterrupted},
		{"interrupted and an output failed", Outcome{Interrupted: true, OutputFailed: true}, report.StatusIncomplete, ExitInterrupted},
		{"not gated", Outcome{NotGated: true, Completed: true}, report.StatusNotGated, ExitPass},
		{"not gated, incomplete", Outcome{NotGated: true}, report.StatusError, ExitNotJudged},
		{"not gated, an output failed", Outcome{NotGated: true, Completed: true, OutputFailed: true}, report.StatusNotGated, ExitNotJudged},
		{"unjudged", Outcome{Results: gates(fail), Completed: true, Unjudged: true}, report.StatusError, ExitNotJudged},
		{"passed but an output failed", Outcome{Results: gates(pass), Completed: true, OutputFailed: true}, report.StatusPass, ExitNotJudged},
		{"failed and an output failed", Outcome{Results: gates(fail), Completed: true, OutputFailed: true}, report.StatusFail, ExitGateFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, code := Verdict(tc.in)
			if status != tc.status || code != tc.code {
				t.Errorf("Verdict = %s, %d; want %s, %d", status, code, tc.status, tc.code)
			}
		})
	}
}
