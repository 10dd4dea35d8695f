package gates

import (
	"testing"

	"github.com/tollgate-dev/tollgate/report"
)

// A gate that reads baseline is checked against the report's shape (a
// baseline's shape) and, evaluated without a baseline, skipped; every
// other gate is judged as usual.
func TestGatesWithoutBaselineAreSkipped(t *testing.T) {
	shape := withBaseline(t, shapeOf(t, "route-session.yaml"))
	seams := seamEnv(t)
	for _, tc := range []struct {
		name  string
		expr  string
		reads bool
	}{
		{name: "baseline by name", reads: true,
			expr: `runs["direct/cached"].phases.decode.seam_latency_ms.p50 <= 1.1 * baseline.runs["direct/cached"].phases.decode.seam_latency_ms.p50`},
		{name: "baseline inside a predicate", reads: true,
			expr: `all(keys(runs), within(runs[#].phases.decode.seam_latency_ms.p50, baseline.runs[#].phases.decode.seam_latency_ms.p50, 0.1))`},
		{name: "baseline through let", reads: true, expr: `let b = baseline; b.runs["direct/cached"].connections.attempts >= 1`},
		{name: "baseline through $env", reads: true, expr: `$env.baseline.runs["direct/cached"].connections.attempts >= 1`},
		{name: "baseline behind a false left side", reads: true,
			expr: `false && baseline.runs["direct/cached"].connections.attempts >= 1`},
		{name: "no baseline", expr: `runs["direct/cached"].connections.attempts == 1`},
		{name: "a name like baseline", expr: `let baseline2 = 1; baseline2 == 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, problems := Compile([]Spec{{Name: tc.name, Expr: tc.expr}}, shape)
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			if got := set.Gates[0].ReadsBaseline(); got != tc.reads {
				t.Fatalf("ReadsBaseline %v, want %v", got, tc.reads)
			}
			res := set.Evaluate(seams)[0]
			want := report.StatusPass
			if tc.reads {
				want = report.StatusSkipped
			}
			if res.Status != want {
				t.Errorf("without a baseline: %s (%s), want %s", res.Status, res.Message, want)
			}
			if tc.reads && res.Message != SkippedNoBaseline {
				t.Errorf("message %q", res.Message)
			}
			if !tc.reads || tc.name == "baseline behind a false left side" {
				return
			}
			// With the run as its own baseline, the gate is judged.
			if res := set.Evaluate(withBaseline(t, seams))[0]; res.Status != report.StatusPass {
				t.Errorf("with a baseline: %s (%s)", res.Status, res.Message)
			}
		})
	}
}

// Skipped gates never change the verdict: a first night without a
// baseline passes when everything else does.
func TestSkippedGatesDoNotChangeTheVerdict(t *testing.T) {
	for _, tc := range []struct {
		name   string
		gates  []report.GateResult
		status string
		code   int
	}{
		{name: "all skipped", gates: []report.GateResult{{Status: report.StatusSkipped}}, status: report.StatusPass, code: ExitPass},
		{name: "skipped and passed", gates: []report.GateResult{{Status: report.StatusSkipped}, {Status: report.StatusPass}}, status: report.StatusPass, code: ExitPass},
		{name: "skipped and failed", gates: []report.GateResult{{Status: report.StatusSkipped}, {Status: report.StatusFail}}, status: report.StatusFail, code: ExitGateFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, code := Verdict(Outcome{Results: tc.gates, Completed: true})
			if status != tc.status || code != tc.code {
				t.Errorf("%s %d, want %s %d", status, code, tc.status, tc.code)
			}
		})
	}
}
