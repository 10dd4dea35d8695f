package markdown

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
)

// A capacity search shows in the Markdown summary with what bound it: the
// objective, its value where the search failed, and the others that failed
// there too.
func TestMarkdownShowsWhatBoundTheCapacity(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	r := &report.Report{Scenario: report.ScenarioInfo{Name: "cap"}, Status: report.StatusPass, RunOrder: []string{"server"},
		Runs: map[string]*report.Run{"server": {Target: report.Target{Kind: report.TargetEmbedded}, PhaseOrder: []string{"mlperf"},
			Phases: map[string]*report.Phase{"mlperf": {Kind: report.KindCapacity, Capacity: &report.Capacity{
				By: "rate", MaxRatePerS: f(11.31), Confirmed: true, Bracket: report.Bracket{Pass: f(11.31), Fail: f(12)},
				BoundBy: "tpot_ms.p99 <= 100", BoundValue: f(104.5), AlsoFailed: []string{"ttft_ms.p99 <= 2000"},
				Stop: report.CapacityConverged, PrecisionPct: 10, Objectives: []string{"ttft_ms.p99 <= 2000", "tpot_ms.p99 <= 100"},
				WallS: 30.5, ProbeCount: 7, Probes: []*report.CapacityProbe{},
			}}}}}}
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"### Capacity",
		"| server | mlperf | 11.31/s | true | fails at 12/s, bound by tpot_ms.p99 &lt;= 100 (was 104.5); also failed: ttft_ms.p99 &lt;= 2000 | converged | 7 in 30.5 s |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, b.String())
		}
	}
}
