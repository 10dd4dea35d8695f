package html

import (
	"bytes"
	"regexp"
	"strconv"
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
	for _, want := range []string{"Capacity search: ttft_ms.p99 against offered rate — server · capacity", "objective ttft_ms.p99 &lt;= 250", "capacity 8.5", "saturated", "offered rate 16 (bracket): ttft_ms.p99 900, cut short",
		">objective ≤ 250<"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

var probeRowRE = regexp.MustCompile(`(?s)<tr(?: class="found")?><td class="num rowhead">(\d+)<.*?</tr>`)

// The run's card tabulates the search: what it found and why it stopped,
// then each probe in the order it ran, with its load, verdict, objective
// values and how it ended; on a phone each probe is a card.
func TestCapacityProbeTable(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	obj := func(v float64, pass bool) []report.ObjectiveValue {
		return []report.ObjectiveValue{{Objective: "ttft_ms.p99 <= 250", Value: f(v), Low: f(v * 0.9), High: f(v), Pass: pass},
			{Objective: "error_rate <= 0.01", Value: f(0), Low: f(0), High: f(0), Pass: true}}
	}
	probes := []*report.CapacityProbe{
		{Value: 4, Step: report.StepBracket, DurationS: 1.5, Requests: 12, Succeeded: 12, AchievedRatePerS: f(4), ServedPerS: f(4),
			Objectives: obj(10, true), Verdict: report.ProbePass, Clear: true},
		{Value: 8, Step: report.StepBracket, DurationS: 0.7, Requests: 12, Succeeded: 5, Unfinished: 7, AchievedRatePerS: f(8.2), ServedPerS: f(4.1),
			Objectives: obj(900, false), Verdict: report.ProbeSaturated, Clear: true, CutShort: true,
			Reasons:    []string{"ttft_ms.p99 <= 250: was 900", "saturated: in flight grows: 3 early in the window, 9 at its end"},
			Saturation: []string{"in flight grows: 3 early in the window, 9 at its end", "ttft trends up: median 40 ms in the first third, 700 ms in the last"}},
		{Value: 5.657, Step: report.StepBisect, DurationS: 1.5, Requests: 9, Succeeded: 9, Objectives: obj(240, true), Verdict: report.ProbePass},
		{Value: 5.657, Step: report.StepHold, DurationS: 6, Requests: 34, Succeeded: 34, Objectives: obj(200, true), Verdict: report.ProbePass, Clear: true},
	}
	r := &report.Report{Scenario: report.ScenarioInfo{Name: "cap"}, Status: report.StatusPass, RunOrder: []string{"server"},
		Runs: map[string]*report.Run{"server": {Target: report.Target{Kind: report.TargetEmbedded}, PhaseOrder: []string{"capacity"},
			Phases: map[string]*report.Phase{"capacity": {Kind: report.KindCapacity, Capacity: &report.Capacity{
				By: "rate", MaxRatePerS: f(5.657), Interval: report.Interval{Low: f(4), High: f(8), ConfidencePct: 95},
				Confirmed: true, HoldS: f(6), HoldWantedS: f(6), Bracket: report.Bracket{Pass: f(5.657), Fail: f(8)}, BoundBy: "ttft_ms.p99 <= 250", BoundValue: f(900),
				Stop: report.CapacityConverged, PrecisionPct: 50, Min: 1, Max: 64, Objectives: []string{"ttft_ms.p99 <= 250", "error_rate <= 0.01"},
				WallS: 9.7, ProbeCount: 4, Probes: probes,
			}}}}}}
	page := render(t, r, nil)
	for _, want := range []string{
		`<div class="card run">`, "Capacity search", "<dt>capacity</dt><dd>5.657 req/s</dd>", "<dt>95 % interval</dt><dd>4 – 8 req/s</dd>",
		"<dt>hold</dt><dd>held 6 s: confirmed</dd>", "<dt>what bound it</dt><dd>fails at 8/s, bound by ttft_ms.p99 &lt;= 250 (was 900)</dd>",
		"<dt>search stopped</dt><dd>converged: the bracket is within the 50 % precision</dd>", "<dt>probes</dt><dd>4 in 9.7 s</dd>",
		`<th class="num obj">ttft_ms.p99 &lt;= 250</th>`, `<th class="num obj">error_rate &lt;= 0.01</th>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	rows := probeRowRE.FindAllStringSubmatch(page, -1)
	if len(rows) != len(probes) {
		t.Fatalf("%d probe rows, want %d", len(rows), len(probes))
	}
	for i, want := range [][]string{
		{"4 req/s · bracket", "✓ pass", "10 ✓", "9–10", "12/12", "4.00 / 4.00", "ran its 1.5 s window"},
		{"8 req/s · bracket", "⊘ saturated", "900 ✗", "5/12", "7 unfinished", "cut short after 0.7 s by saturation",
			"saturated: in flight grows", "signal: ttft trends up"},
		{"5.657 req/s · bisect", "capacity", "240 ✓", "- / -", "not clear of the noise"},
		{"5.657 req/s · hold", "capacity", "held 6 s"},
	} {
		row := rows[i][0]
		if rows[i][1] != strconv.Itoa(i+1) {
			t.Errorf("row %d is numbered %s", i+1, rows[i][1])
		}
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Errorf("probe %d lacks %q:\n%s", i+1, w, row)
			}
		}
	}
	// The objective's failure is its column's ✗, not a line again under why.
	// (The facts above the table say it once, in what bound the search.)
	for _, row := range rows {
		if strings.Contains(row[0], "was 900") {
			t.Error("a failed objective is said twice")
		}
	}
	if strings.Count(rows[0][0], "capacity") != 0 || !strings.Contains(rows[0][0], "error_rate &lt;= 0.01") {
		t.Errorf("the first probe's row: %s", rows[0][0])
	}
}
