package html

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/compare"
	"github.com/tollgate-dev/tollgate/report/view"
)

// liveReport is a one-run live report whose decode phase kept n samples of
// TTFT around ttft ms (±spread, seeded) and of decode rate around rate.
func liveReport(seed uint64, n int, ttft, rate, spread float64) *report.Report {
	rng := rand.New(rand.NewPCG(seed, 1))
	tt, rr := make([]float64, n), make([]float64, n)
	samples := make([]report.RequestSample, n)
	for i := range n {
		tt[i] = ttft * (1 + spread*(rng.Float64()-0.5))
		rr[i] = rate * (1 + spread*(rng.Float64()-0.5))
		samples[i] = report.RequestSample{Phase: report.KindDecode, Index: i, OK: true, RequestMetrics: report.RequestMetrics{TTFTMS: &tt[i], DecodeTokensPerS: &rr[i], E2EMS: tt[i] * 10}}
	}
	e2e := make([]float64, n)
	for i := range e2e {
		e2e[i] = tt[i] * 10
	}
	m := &report.ServingMetrics{Requests: n, Succeeded: n, TTFTMS: report.NewStat(tt), DecodeTokensPerS: report.NewStat(rr),
		E2EMS: report.NewStat(e2e), Errors: report.ErrorSummary{ByClass: map[string]int{}}}
	return &report.Report{
		SchemaVersion: report.SchemaVersion, Tool: report.Tool{Name: "tollgate", Version: "test"},
		Scenario: report.ScenarioInfo{Name: "live", SHA256: "abc"}, Status: report.StatusPass,
		RunOrder: []string{"server"},
		Runs: map[string]*report.Run{"server": {Name: "server", Status: report.RunOK, Target: report.Target{Kind: report.TargetOpenAI, Model: "m"},
			PhaseOrder: []string{report.KindDecode},
			Phases:     map[string]*report.Phase{report.KindDecode: {Kind: report.KindDecode, ServingMetrics: m, Samples: samples}}}},
	}
}

// TestDeltasAgreeWithCompare holds the page's old-vs-new verdicts to
// tollgate compare's on the same pair of reports, metric by metric and
// statistic by statistic, including changes the old fixed 1% band called
// worse although they were within noise.
func TestDeltasAgreeWithCompare(t *testing.T) {
	route := runExample(t, "route-session.yaml")
	quick := viaJSON(t, runExample(t, "quickstart.yaml"))
	quickAgain := viaJSON(t, runExample(t, "quickstart.yaml"))
	sizes := []string{"256", "4096"}
	slower := viaJSON(t, route)
	*slower.Runs["relay/cached"].Phases["decode"].SeamLatencyMS.P50 *= 1.2
	for _, tc := range []struct {
		name     string
		old, new *report.Report
		want     map[string]compare.Outcome // some outcomes the pair must show, by path.stat
		noRow    string                     // a metric that must not be compared (a pooled distribution)
	}{
		{name: "noisy live, 3% slower: within noise", old: liveReport(1, 40, 100, 50, 0.4), new: liveReport(2, 40, 103, 50, 0.4),
			want: map[string]compare.Outcome{"runs.server.phases.decode.ttft_ms.p50": compare.OutcomeSame}},
		{name: "tight live, 30% slower: worse", old: liveReport(1, 40, 100, 50, 0.02), new: liveReport(2, 40, 130, 60, 0.02),
			want: map[string]compare.Outcome{"runs.server.phases.decode.ttft_ms.p50": compare.OutcomeWorse,
				"runs.server.phases.decode.decode_tokens_per_s.p50": compare.OutcomeBetter}},
		{name: "few samples: noise unknown", old: liveReport(1, 3, 100, 50, 0.02), new: liveReport(2, 3, 130, 50, 0.02),
			want: map[string]compare.Outcome{"runs.server.phases.decode.ttft_ms.p50": compare.OutcomeUnknown}},
		{name: "every prompt size 50% slower, pooled faster: worse per size", old: prefillReport(sizes, map[string][]float64{"256": spread(1, 5, 10), "4096": spread(2, 15, 100)}),
			new: prefillReport(sizes, map[string][]float64{"256": spread(3, 15, 15), "4096": spread(4, 5, 150)}),
			want: map[string]compare.Outcome{"runs.server.phases.prefill.by_prompt_tokens[256].ttft_ms.p50": compare.OutcomeWorse,
				"runs.server.phases.prefill.by_prompt_tokens[4096].ttft_ms.p50": compare.OutcomeWorse},
			noRow: "runs.server.phases.prefill.ttft_ms"},
		{name: "quickstart twice: per prompt size and variant", old: quick, new: quickAgain, noRow: "runs.embedded.phases.prefill.ttft_ms"},
		{name: "seam, deterministic", old: viaJSON(t, route), new: slower,
			want: map[string]compare.Outcome{`runs["relay/cached"].phases.decode.seam_latency_ms.p50`: compare.OutcomeWorse,
				`runs["direct/cached"].phases.decode.seam_latency_ms.p50`: compare.OutcomeSame}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := compare.Compare(tc.old, tc.new, compare.Options{AllowAny: true})
			if err != nil {
				t.Fatal(err)
			}
			// The page renders new against the baseline old.
			p := build(tc.new, tc.old)
			rows := append(append([]deltaRow(nil), p.Deltas...), p.Unchanged...)
			if len(rows) != len(res.Metrics) {
				t.Fatalf("%d delta rows, compare has %d metrics", len(rows), len(res.Metrics))
			}
			got := map[string]string{}
			ds, err := view.Deltas(tc.old, tc.new)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range res.Metrics {
				row := rows[indexOf(t, rows, ds[i])]
				for j, stat := range statsOf(m) {
					want := m.Outcome(stat).String()
					if row.Cells[j].Class != want {
						t.Errorf("%s.%s: page says %s, compare says %s", m.Path, stat, row.Cells[j].Class, want)
					}
					if w := compare.Word(m, stat); row.Cells[j].Word != w {
						t.Errorf("%s.%s: page reads %q, compare reads %q", m.Path, stat, row.Cells[j].Word, w)
					}
					got[m.Path+"."+stat] = row.Cells[j].Class
				}
			}
			for _, m := range res.Metrics {
				if tc.noRow != "" && m.Path == tc.noRow {
					t.Errorf("%s is compared, pooled over different workloads", m.Path)
				}
			}
			for k, want := range tc.want {
				if got[k] != want.String() {
					t.Errorf("%s: %q, want %q (compare's table would mark it so too)", k, got[k], want)
				}
			}
			page := render(t, tc.new, tc.old)
			if !strings.Contains(page, `id="compare"`) {
				t.Error("no old-vs-new section")
			}
		})
	}
}

// spread is n values around v, ±1%, seeded.
func spread(seed uint64, n int, v float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 2))
	out := make([]float64, n)
	for i := range out {
		out[i] = v * (1 + 0.02*(rng.Float64()-0.5))
	}
	return out
}

// prefillReport is a one-run live report whose prefill phase has a slice
// per prompt size with the given TTFT samples, and their pool.
func prefillReport(sizes []string, ttft map[string][]float64) *report.Report {
	r := liveReport(1, 1, 1, 1, 0)
	var all []float64
	var samples []report.RequestSample
	by := map[string]*report.Point{}
	for _, size := range sizes {
		v := ttft[size]
		all = append(all, v...)
		by[size] = &report.Point{ServingMetrics: &report.ServingMetrics{Requests: len(v), Succeeded: len(v), TTFTMS: report.NewStat(v),
			Errors: report.ErrorSummary{ByClass: map[string]int{}}}}
		for i := range v {
			samples = append(samples, report.RequestSample{Phase: report.KindPrefill, Point: size, Index: len(samples), OK: true, RequestMetrics: report.RequestMetrics{TTFTMS: &v[i], E2EMS: v[i]}})
		}
	}
	run := r.Runs["server"]
	run.PhaseOrder = []string{report.KindPrefill}
	run.Phases = map[string]*report.Phase{report.KindPrefill: {Kind: report.KindPrefill, Samples: samples, ByPromptTokens: by,
		ServingMetrics: &report.ServingMetrics{Requests: len(all), Succeeded: len(all), TTFTMS: report.NewStat(all), Errors: report.ErrorSummary{ByClass: map[string]int{}}}}}
	return r
}

func statsOf(m *compare.Metric) []string {
	if m.Scalar {
		return []string{m.Headline()}
	}
	return []string{m.Headline(), "p95"}
}

// indexOf finds a delta's row on the page by run, place and metric.
func indexOf(t *testing.T, rows []deltaRow, d view.Delta) int {
	t.Helper()
	for i, r := range rows {
		if r.Run == d.Run && r.Phase == d.Where && r.Metric == d.Name {
			return i
		}
	}
	t.Fatalf("no row for %s %s %s", d.Run, d.Where, d.Name)
	return -1
}

func TestDeltasAgainstAnIncomparableBaseline(t *testing.T) {
	r := liveReport(1, 10, 100, 50, 0.1)
	other := liveReport(2, 10, 100, 50, 0.1)
	other.Tool.Name = "other"
	page := render(t, r, other)
	if !strings.Contains(page, "not a tollgate report") {
		t.Error("the page does not say why there are no deltas")
	}
}
