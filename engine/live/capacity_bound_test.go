package live

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// What bound a search is the failed objective furthest past its limit at
// the lowest failing value, whatever order the objectives were written in.
func TestBoundByIsTheObjectiveFurthestPastItsLimit(t *testing.T) {
	objs := scenarios.Objectives{
		{Text: "ttft_ms.p99 <= 2000", Metric: "ttft_ms", Stat: "p99", Op: "<=", Limit: 2000},
		{Text: "tpot_ms.p99 <= 100", Metric: "tpot_ms", Stat: "p99", Op: "<=", Limit: 100},
		{Text: "goodput_pct >= 90", Metric: "goodput_pct", Op: ">=", Limit: 90},
	}
	v := func(x float64) *float64 { return &x }
	ov := func(i int, val *float64) report.ObjectiveValue {
		o := objs[i]
		return report.ObjectiveValue{Objective: o.Text, Value: val, Pass: val != nil && meets(o, *val)}
	}
	for _, tc := range []struct {
		name      string
		probe     *report.CapacityProbe
		want      string
		wantValue *float64
		wantAlso  []string
	}{
		{name: "only tpot failed", want: "tpot_ms.p99 <= 100", wantValue: v(130),
			probe: &report.CapacityProbe{Verdict: report.ProbeFail, Objectives: []report.ObjectiveValue{ov(0, v(900)), ov(1, v(130)), ov(2, v(99))}}},
		{name: "both failed, tpot further past (written second)", want: "tpot_ms.p99 <= 100", wantValue: v(150), wantAlso: []string{"ttft_ms.p99 <= 2000"},
			probe: &report.CapacityProbe{Verdict: report.ProbeFail, Objectives: []report.ObjectiveValue{ov(0, v(2100)), ov(1, v(150)), ov(2, v(95))}}},
		{name: "both failed, ttft further past", want: "ttft_ms.p99 <= 2000", wantValue: v(5000), wantAlso: []string{"tpot_ms.p99 <= 100"},
			probe: &report.CapacityProbe{Verdict: report.ProbeFail, Objectives: []report.ObjectiveValue{ov(0, v(5000)), ov(1, v(110)), ov(2, v(95))}}},
		{name: "a lower bound, by limit over value", want: "goodput_pct >= 90", wantValue: v(30), wantAlso: []string{"tpot_ms.p99 <= 100"},
			probe: &report.CapacityProbe{Verdict: report.ProbeFail, Objectives: []report.ObjectiveValue{ov(0, v(1500)), ov(1, v(110)), ov(2, v(30))}}},
		{name: "an objective with no value is furthest", want: "tpot_ms.p99 <= 100", wantAlso: []string{"ttft_ms.p99 <= 2000"},
			probe: &report.CapacityProbe{Verdict: report.ProbeFail, Objectives: []report.ObjectiveValue{ov(0, v(9000)), ov(1, nil), ov(2, v(95))}}},
		{name: "saturated with every objective met", want: report.ProbeSaturated,
			probe: &report.CapacityProbe{Verdict: report.ProbeSaturated, Objectives: []report.ObjectiveValue{ov(0, v(100)), ov(1, v(50)), ov(2, v(99))}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, val, also := boundBy(tc.probe, objs)
			if got != tc.want || !slices.Equal(also, tc.wantAlso) || (val == nil) != (tc.wantValue == nil) || val != nil && *val != *tc.wantValue {
				t.Errorf("bound by %q (value %v, also %v), want %q (value %v, also %v)", got, fmtPtr(val), also, tc.want, fmtPtr(tc.wantValue), tc.wantAlso)
			}
		})
	}
}

// Through a real search on the simulator: whatever bound it (the machine's
// load may move it), bound_by, bound_value and also_failed say what the
// probe at bracket.fail measured.
func TestBoundByAgreesWithTheFailingProbe(t *testing.T) {
	t.Parallel() // its own simulator; it waits on the clock
	sc := parse(t, `
targets:
  s: {kind: embedded, sim: {max_running_seqs: 64, ttft_base: 20ms, decode_step: 80ms, decode_step_per_seq: 2ms, prefill_tokens_per_s: 1000000}}
phases:
  capacity:
    kind: capacity
    capacity:
      min: 1
      max: 256
      start: 8
      precision: 25%
      budget: 30s
      probe: {warmup: 300ms, duration: 1500ms, min_requests: 10, repeat: 1, hold: 0s}
      objectives: ["ttft_ms.p99 <= 2000", "tpot_ms.p99 <= 100", "error_rate <= 0"]
    # The search is under test, not the client: a loaded machine's
    # lateness (TestCapacityProbesJudgeTheClientsLateness) stays out.
    max_dispatch_lag: 1h
    arrival: poisson
    seed: 1
    prompt_tokens: 64
    max_tokens: 8
`, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r, err := Run(ctx, sc.Runs[0], Options{Protocol: openai.Protocol()})
	if err != nil {
		t.Fatal(err)
	}
	c := r.Phases["capacity"].Capacity
	t.Logf("bound by %q (value %s, also %v), bracket %s..%s", c.BoundBy, fmtPtr(c.BoundValue), c.AlsoFailed, fmtPtr(c.Bracket.Pass), fmtPtr(c.Bracket.Fail))
	if c.Bracket.Fail == nil {
		t.Skipf("nothing failed up to max (bound by %s)", c.BoundBy)
	}
	var at *report.CapacityProbe
	for _, pr := range c.Probes {
		if pr.Value == *c.Bracket.Fail && pr.Verdict != report.ProbePass {
			at = pr
		}
	}
	if at == nil {
		t.Fatalf("no failed probe at bracket.fail %g", *c.Bracket.Fail)
	}
	failed := map[string]*float64{}
	for _, o := range at.Objectives {
		if !o.Pass {
			failed[o.Objective] = o.Value
		}
	}
	if len(failed) == 0 {
		if c.BoundValue != nil || len(c.AlsoFailed) > 0 {
			t.Errorf("no objective failed at %g, yet bound_value %s, also_failed %v", at.Value, fmtPtr(c.BoundValue), c.AlsoFailed)
		}
		return
	}
	v, ok := failed[c.BoundBy]
	if !ok || fmtPtr(v) != fmtPtr(c.BoundValue) {
		t.Errorf("bound by %q at %s; the probe's failed objectives %v", c.BoundBy, fmtPtr(c.BoundValue), failed)
	}
	if len(c.AlsoFailed) != len(failed)-1 {
		t.Errorf("also_failed %v; the probe's failed objectives %v", c.AlsoFailed, failed)
	}
	for _, o := range c.AlsoFailed {
		if _, ok := failed[o]; !ok || o == c.BoundBy {
			t.Errorf("also_failed names %q; the probe's failed objectives %v", o, failed)
		}
	}
}
