package html

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
)

// The page draws a capacity search: the objective against offered load,
// its limit, the capacity found, and the saturated probes apart.
func TestCapacityIsDrawn(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	probe := func(v float64, verdict string, ttft float64) *report.CapacityProbe {
		return &report.CapacityProbe{Value: v, Step: "bracket", Verdict: verdict, CutShort: verdict == report.ProbeSaturated,
			Objectives: []report.ObjectiveValue{{Objective: "ttft_ms.p99 <= 250", Value: f(ttft)}}, Reasons: []string{}, Saturation: []string{}}
	}
	r := &report.Report{Scenario: report.ScenarioInfo{Name: "cap"}, Status: report.StatusPass, RunOrder: []string{"server"},
		Runs: map[string]*report.Run{"server": {Target: report.Target{Kind: report.TargetEmbedded}, PhaseOrder: []string{"capacity"},
			Phases: map[string]*report.Phase{"capacity": {Kind: report.KindCapacity, Capacity: &report.Capacity{
				By: "rate", MaxRatePerS: f(8.5), Bracket: report.Bracket{Pass: f(8.5), Fail: f(9.3)}, BoundBy: "ttft_ms.p99 <= 250",
				Stop: report.CapacityConverged, Objectives: []string{"ttft_ms.p99 <= 250"}, ProbeCount: 3,
				Probes: []*report.CapacityProbe{probe(4, report.ProbePass, 10), probe(16, report.ProbeSaturated, 900), probe(9.3, report.ProbeFail, 300)},
			}}}}}}
	var b bytes.Buffer
	if err := Write(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"Capacity search: ttft_ms.p99 against offered rate — server · capacity", "objective ttft_ms.p99 &lt;= 250", "capacity 8.5", "saturated", "offered rate 16 (bracket): ttft_ms.p99 900, cut short"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
