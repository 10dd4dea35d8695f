package text

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
)

// capacityReport is a run with one capacity search of three probes.
func capacityReport() *report.Report {
	probe := func(v float64, verdict string, ttft float64, cut bool) *report.CapacityProbe {
		return &report.CapacityProbe{Value: v, Step: "bracket", Verdict: verdict, CutShort: cut,
			Objectives: []report.ObjectiveValue{{Objective: "ttft_ms.p99 <= 250", Value: fp(ttft), Pass: ttft <= 250}}, Reasons: []string{}, Saturation: []string{}}
	}
	hold := probe(8.5, report.ProbePass, 120, false)
	hold.Step, hold.DurationS = report.StepHold, 10
	return &report.Report{Scenario: report.ScenarioInfo{Name: "cap"}, Status: report.StatusPass, RunOrder: []string{"server"},
		Runs: map[string]*report.Run{"server": {Target: report.Target{Kind: report.TargetEmbedded}, PhaseOrder: []string{"capacity"},
			Phases: map[string]*report.Phase{"capacity": {Kind: report.KindCapacity, Capacity: &report.Capacity{
				By: "rate", MaxRatePerS: fp(8.5), Interval: report.Interval{Low: fp(8.5), High: fp(9.3), ConfidencePct: 95},
				Confirmed: true, HoldS: fp(10), HoldWantedS: fp(10), Bracket: report.Bracket{Pass: fp(8.5), Fail: fp(9.3)}, BoundBy: "ttft_ms.p99 <= 250",
				BoundValue: fp(310.25), AlsoFailed: []string{"tpot_ms.p99 <= 100"},
				Stop: report.CapacityConverged, PrecisionPct: 10, Objectives: []string{"ttft_ms.p99 <= 250"}, WallS: 15.3, ProbeCount: 3,
				Probes: []*report.CapacityProbe{probe(4, report.ProbePass, 10, false), probe(16, report.ProbeSaturated, 900, true), probe(8.5, report.ProbePass, 100, false), hold},
			}}}}}}
}

func TestSummaryShowsTheCapacitySearch(t *testing.T) {
	var b bytes.Buffer
	if err := Summary(&b, capacityReport()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"server capacity: capacity 8.5/s (95 % interval 8.5–9.3, held 10 s; fails at 9.3/s, bound by ttft_ms.p99 <= 250 (was 310.2); also failed: tpot_ms.p99 <= 100; converged) — 3 probes in 15.3 s",
		"probes: 4 pass → 16 saturated (cut short) → 8.5 pass → 8.5 pass (held 10 s)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
