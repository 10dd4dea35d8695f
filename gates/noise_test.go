package gates

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/report"
)

// noisyReport is a one-run live report whose decode phase has the given
// TTFT samples (kept only when keep).
func noisyReport(ttft []float64, keep bool) *report.Report {
	fp := func(x float64) *float64 { return &x }
	m := &report.ServingMetrics{Requests: len(ttft), Succeeded: len(ttft), TTFTMS: report.NewStat(ttft),
		Errors: report.ErrorSummary{Rate: fp(0), ByClass: map[string]int{}}}
	p := &report.Phase{Kind: "decode", ServingMetrics: m}
	if keep {
		ss := make([]report.RequestSample, len(ttft))
		for i := range ttft {
			ss[i] = report.RequestSample{Phase: "decode", Index: i, OK: true, RequestMetrics: report.RequestMetrics{TTFTMS: fp(ttft[i])}}
		}
		p.Samples = ss
	}
	return &report.Report{
		SchemaVersion: 1, Tool: report.Tool{Name: "tollgate"},
		Scenario:  report.ScenarioInfo{Name: "s", SHA256: "abc"},
		Host:      report.Host{Hostname: "h", OS: "linux", Arch: "amd64", CPUModel: "cpu", CPUCores: 8},
		StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Status:    "pass", RunOrder: []string{"server"},
		Runs: map[string]*report.Run{"server": {Name: "server", Status: "ok",
			Target:     report.Target{Kind: "openai", Model: "m"},
			PhaseOrder: []string{"decode"}, Phases: map[string]*report.Phase{"decode": p}}},
	}
}

// lognormal draws n values around median, seeded.
func lognormal(seed uint64, n int, median, sigma float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]float64, n)
	for i := range out {
		out[i] = median * math.Exp(rng.NormFloat64()*sigma)
	}
	return out
}

// judgeNoise compiles expr against run's shape with a baseline and
// evaluates it over run and base, as tollgate run --baseline does.
func judgeNoise(t *testing.T, expr string, run, base *report.Report) report.GateResult {
	t.Helper()
	env, err := Env(run, nil)
	if err != nil {
		t.Fatal(err)
	}
	baseEnv, err := BaselineEnv(base)
	if err != nil {
		t.Fatal(err)
	}
	shape, err := Env(run, nil)
	if err != nil {
		t.Fatal(err)
	}
	set, problems := Compile([]Spec{{Name: "g", Expr: expr}}, withBaseline(t, shape))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	if !set.Gates[0].ReadsBaseline() {
		t.Fatal("a gate calling no_regression does not read baseline")
	}
	env["baseline"] = baseEnv
	return set.EvaluateReports(env, Reports{Run: run, Baseline: base})[0]
}

// no_regression is compare's three-valued test inside a gate: a clear
// slowdown fails, an unchanged build passes, and a change noise cannot
// rule out is inconclusive, never a pass.
func TestNoRegression(t *testing.T) {
	base := noisyReport(lognormal(1, 200, 100, 0.2), true)
	for _, tc := range []struct {
		name   string
		run    *report.Report
		expr   string
		status string
		msg    string // in the message
	}{
		{name: "unchanged", run: noisyReport(lognormal(2, 200, 100, 0.2), true),
			expr: `no_regression("ttft_ms.p50:+10%")`, status: report.StatusPass},
		{name: "30% slower", run: noisyReport(lognormal(3, 200, 130, 0.2), true),
			expr: `no_regression("ttft_ms.p50:+10%")`, status: report.StatusFail, msg: "ttft_ms"},
		{name: "slower on 8 noisy samples", run: noisyReport([]float64{90, 100, 115, 120, 125, 130, 200, 300}, true),
			expr: `no_regression("ttft_ms.p50:+10%")`, status: report.StatusInconclusive, msg: "cannot tell from noise"},
		{name: "no samples kept", run: noisyReport(lognormal(5, 200, 100, 0.2), false),
			expr: `no_regression("ttft_ms.p50:+10%")`, status: report.StatusInconclusive, msg: "cannot tell from noise"},
		{name: "inconclusive and false is a failure", run: noisyReport([]float64{90, 100, 115, 120, 125, 130, 200, 300}, true),
			expr: `no_regression("ttft_ms.p50:+10%") && runs.server.phases.decode.ttft_ms.p50 < 1`, status: report.StatusFail},
		{name: "either of two", run: noisyReport(lognormal(3, 200, 130, 0.2), true),
			expr: `no_regression("ttft_ms.p50:+10%") || no_regression("ttft_ms.p50:+50%")`, status: report.StatusPass},
		{name: "a metric the reports lack", run: noisyReport(lognormal(2, 200, 100, 0.2), true),
			expr: `no_regression("tpot_ms.p50:+10%")`, status: report.StatusError, msg: "tpot_ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := judgeNoise(t, tc.expr, tc.run, base)
			if res.Status != tc.status {
				t.Fatalf("status %s (%s), want %s", res.Status, res.Message, tc.status)
			}
			if !strings.Contains(res.Message, tc.msg) {
				t.Errorf("message %q lacks %q", res.Message, tc.msg)
			}
			if tc.status != report.StatusError && len(res.Observations) == 0 {
				t.Error("no observation recorded")
			}
		})
	}
	t.Run("without the reports", func(t *testing.T) {
		run := noisyReport(lognormal(2, 200, 100, 0.2), true)
		env, _ := Env(run, nil)
		set, problems := Compile([]Spec{{Name: "g", Expr: `no_regression("ttft_ms.p50:+10%")`}}, withBaseline(t, env))
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		if res := set.Evaluate(env)[0]; res.Status != report.StatusSkipped {
			t.Errorf("without a baseline: %s, want skipped", res.Status)
		}
		if res := set.Evaluate(withBaseline(t, env))[0]; res.Status != report.StatusError || !strings.Contains(res.Message, "needs the run and its baseline") {
			t.Errorf("without the reports: %s %q, want an error", res.Status, res.Message)
		}
	})
}

// A threshold that cannot be tested is refused at load, as --fail-on's.
func TestNoRegressionBadThresholds(t *testing.T) {
	shape, err := Env(noisyReport(lognormal(2, 20, 100, 0.2), true), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, expr, msg string
	}{
		{name: "0 percent", expr: `no_regression("ttft_ms.p50:+0%")`, msg: "0%"},
		{name: "no sign", expr: `no_regression("ttft_ms.p50:10%")`, msg: "needs a sign"},
		{name: "no statistic", expr: `no_regression("ttft_ms:+10%")`, msg: "ttft_ms"},
		{name: "not constant", expr: `no_regression(runs.server.name)`, msg: "constant"},
		{name: "a number", expr: `no_regression(10)`, msg: "string"},
		{name: "two arguments", expr: `no_regression("ttft_ms.p50:+10%", 0.05)`, msg: "one threshold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := Compile([]Spec{{Name: "g", Expr: tc.expr}}, withBaseline(t, shape))
			if len(problems) == 0 {
				t.Fatal("compiled")
			}
			if !errors.Is(problems[0], ErrThreshold) && !errors.Is(problems[0], ErrType) {
				t.Errorf("%v: not ErrThreshold", problems[0])
			}
			if !strings.Contains(problems[0].Error(), tc.msg) {
				t.Errorf("%v lacks %q", problems[0], tc.msg)
			}
		})
	}
}

// An inconclusive required gate exits 4, never 0 unless accepted; a
// failure or an error outranks it.
func TestInconclusiveVerdict(t *testing.T) {
	inc := report.GateResult{Status: report.StatusInconclusive}
	for _, tc := range []struct {
		name   string
		gates  []report.GateResult
		accept bool
		status string
		code   int
	}{
		{name: "inconclusive", gates: []report.GateResult{inc, {Status: report.StatusPass}}, status: report.StatusInconclusive, code: ExitInconclusive},
		{name: "accepted", gates: []report.GateResult{inc}, accept: true, status: report.StatusInconclusive, code: ExitPass},
		{name: "optional", gates: []report.GateResult{{Status: report.StatusInconclusive, Optional: true}}, status: report.StatusPass, code: ExitPass},
		{name: "and failed", gates: []report.GateResult{inc, {Status: report.StatusFail}}, accept: true, status: report.StatusFail, code: ExitGateFailed},
		{name: "and errored", gates: []report.GateResult{inc, {Status: report.StatusError}}, status: report.StatusError, code: ExitNotJudged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, code := Verdict(Outcome{Results: tc.gates, Completed: true, AcceptInconclusive: tc.accept})
			if status != tc.status || code != tc.code {
				t.Errorf("%s %d, want %s %d", status, code, tc.status, tc.code)
			}
		})
	}
	if _, code := Verdict(Outcome{Results: []report.GateResult{inc}, Completed: true, OutputFailed: true}); code != ExitNotJudged {
		t.Errorf("inconclusive with an output lost: exit %d, want 3", code)
	}
}
