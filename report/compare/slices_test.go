package compare

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
)

// prefillReport is a one-run live report whose prefill phase has one slice
// per prompt size, each with the given TTFT samples (kept in the report).
func prefillReport(sizes []string, ttft map[string][]float64) *report.Report {
	var all []float64
	var samples []report.RequestSample
	by := map[string]*report.Point{}
	for _, size := range sizes {
		v := ttft[size]
		all = append(all, v...)
		by[size] = &report.Point{ServingMetrics: &report.ServingMetrics{Requests: len(v), Succeeded: len(v),
			TTFTMS: report.NewStat(v), Errors: report.ErrorSummary{Rate: fp(0), ByClass: map[string]int{}}}}
		for _, x := range v {
			samples = append(samples, report.RequestSample{Phase: "prefill", Point: size, Index: len(samples), OK: true, RequestMetrics: report.RequestMetrics{TTFTMS: fp(x)}})
		}
	}
	r := liveReport(nil, nil, false)
	r.Runs["server"].PhaseOrder = []string{"prefill"}
	r.Runs["server"].Phases = map[string]*report.Phase{"prefill": {Kind: "prefill", Samples: samples, ByPromptTokens: by,
		ServingMetrics: &report.ServingMetrics{Requests: len(all), Succeeded: len(all), TTFTMS: report.NewStat(all),
			Errors: report.ErrorSummary{Rate: fp(0), ByClass: map[string]int{}}}}}
	return r
}

// Every prompt size got 50% slower, but the new run has more small
// prompts than the old, so the pooled p50 of the phase fell by 85%: a
// comparison of the pool would call it better. Each size is judged alone.
func TestPerSliceNotPooled(t *testing.T) {
	sizes := []string{"256", "4096"}
	old := prefillReport(sizes, map[string][]float64{"256": draw(1, 5, 10, 0.02), "4096": draw(2, 15, 100, 0.02)})
	new := prefillReport(sizes, map[string][]float64{"256": draw(3, 15, 15, 0.02), "4096": draw(4, 5, 150, 0.02)})
	pooledOld, pooledNew := *old.Runs["server"].Phases["prefill"].TTFTMS.P50, *new.Runs["server"].Phases["prefill"].TTFTMS.P50
	if pooledNew >= pooledOld {
		t.Fatalf("fixture: pooled p50 %v → %v should look better", pooledOld, pooledNew)
	}
	res, err := Compare(old, new, Options{FailOn: thresholds(t, "ttft_ms.p50:+10%")})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Metrics {
		if m.Path == "runs.server.phases.prefill.ttft_ms" {
			t.Errorf("the pooled distribution is compared: %+v", m)
		}
	}
	for _, size := range sizes {
		m := metric(t, res, fmt.Sprintf("runs.server.phases.prefill.by_prompt_tokens[%s].ttft_ms", size))
		if got := m.Outcome("p50"); got != OutcomeWorse {
			t.Errorf("%s: outcome %v, want worse", m.Path, got)
		}
	}
	if len(res.Regressions) != 2 {
		t.Fatalf("%d regressions, want one per prompt size: %+v", len(res.Regressions), res.Regressions)
	}
	if len(res.Pooled) != 1 || !strings.HasPrefix(res.Pooled[0], "server/prefill") {
		t.Errorf("pooled %q, want server/prefill", res.Pooled)
	}
	var b strings.Builder
	if err := Table(&b, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "compared per slice only") {
		t.Errorf("the table does not say the phase is compared per slice:\n%s", b.String())
	}
}

// Many unchanged slices with real noise and a threshold that fails on any
// rise at all: tested one by one at 5%, a few slices in a hundred fail,
// so a comparison of twenty slices often fails somewhere (the log says how
// often); corrected across the family, an unchanged build fails in at most about
// Alpha (1%) of trials.
func TestFamilyWiseControl(t *testing.T) {
	const slices, trials, n = 20, 10, 10
	sizes := make([]string, slices)
	for i := range sizes {
		sizes[i] = fmt.Sprint(256 * (i + 1))
	}
	failedTrials, uncorrected, uncorrectedTrials := 0, 0, 0
	for trial := range trials {
		oldT, newT := map[string][]float64{}, map[string][]float64{}
		for i, s := range sizes {
			seed := uint64(1000*trial + 2*i)
			oldT[s], newT[s] = draw(seed, n, 100, 0.3), draw(seed+1, n, 100, 0.3)
		}
		// α 5%, not the default 1%: the correction is the same, and 5× fewer resamples.
		res, err := Compare(prefillReport(sizes, oldT), prefillReport(sizes, newT), Options{FailOn: thresholds(t, "ttft_ms.p50:+0.01%"), Alpha: 0.05})
		if err != nil {
			t.Fatal(err)
		}
		if res.Tests != slices {
			t.Fatalf("%d tests, want %d", res.Tests, slices)
		}
		if len(res.Regressions) > 0 {
			failedTrials++
		}
		hit := false
		for _, r := range append(append([]Regression(nil), res.Regressions...), res.WithinNoise...) {
			if r.P <= 0.05 {
				uncorrected++
				hit = true
			}
		}
		if hit {
			uncorrectedTrials++
		}
	}
	if failedTrials > 1 {
		t.Errorf("%d of %d unchanged trials failed, want at most 1 (family-wise α 5%%)", failedTrials, trials)
	}
	if uncorrected == 0 {
		t.Errorf("no slice had p ≤ 0.05: the fixture has too little noise to show the correction")
	}
	t.Logf("%d of %d trials failed; one by one at 5%%, %d of %d slice tests and %d of the %d trials would have failed",
		failedTrials, trials, uncorrected, trials*slices, uncorrectedTrials, trials)
}

func TestPValue(t *testing.T) {
	sorted := []float64{-5, 0, 5, 10, 10, 15, 20, 30, 40, 50}
	for _, tc := range []struct {
		name string
		t    string
		want float64
	}{
		{"rise, half at or under the limit", "x.p50:+10%", 6.0 / 11},
		{"rise, two at or under +0.01%", "x.p50:+0.01%", 3.0 / 11},
		{"rise, none over the limit", "x.p50:+60%", 11.0 / 11},
		{"drop, all above -10%", "x.p50:-10%", 11.0 / 11},
		{"drop to below -5% never seen", "x.p50:-5%", 11.0 / 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := thresholds(t, tc.t)[0]
			if got := pValue(sorted, th); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("p %v, want %v", got, tc.want)
			}
		})
	}
}

// loadReport is a one-run live report whose load phase has a point per
// concurrency, each with the given TTFT p50 (no samples: load phases keep
// none in the report).
func loadReport(concurrency []int, ttft []float64) *report.Report {
	r := liveReport(nil, nil, false)
	var points []*report.LoadPoint
	for i, c := range concurrency {
		points = append(points, &report.LoadPoint{Concurrency: c, ServingMetrics: &report.ServingMetrics{Requests: 8, Succeeded: 8,
			TTFTMS: report.NewStat([]float64{ttft[i]}), Errors: report.ErrorSummary{Rate: fp(0), ByClass: map[string]int{}}}})
	}
	r.Runs["server"].PhaseOrder = []string{"load"}
	r.Runs["server"].Phases = map[string]*report.Phase{"load": {Kind: "load", Points: points,
		ServingMetrics: &report.ServingMetrics{Requests: 16, Succeeded: 16, TTFTMS: report.NewStat(ttft), Errors: report.ErrorSummary{Rate: fp(0), ByClass: map[string]int{}}}}}
	return r
}

// Load points are matched by position; the same position under another
// offered load is not the same workload and is not compared.
func TestLoadPointsLikeWithLike(t *testing.T) {
	old := loadReport([]int{1, 4}, []float64{10, 20})
	new := loadReport([]int{1, 8}, []float64{10, 40})
	res, err := Compare(old, new, Options{FailOn: thresholds(t, "points.ttft_ms.p50:+10%"), FailOnUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Regressions) != 0 {
		t.Errorf("regressions %+v: concurrency 4 against 8 is no regression", res.Regressions)
	}
	metric(t, res, "runs.server.phases.load.points[0].ttft_ms")
	for _, m := range res.Metrics {
		if strings.Contains(m.Path, "points[1]") || m.Path == "runs.server.phases.load.ttft_ms" {
			t.Errorf("%s compared", m.Path)
		}
	}
	want := "load point runs.server.phases.load.points[1] is concurrency 4 in old, concurrency 8 in new: not compared"
	if !strings.Contains(strings.Join(res.Notes, "\n"), want) {
		t.Errorf("notes %q lack %q", res.Notes, want)
	}
	// The same sweep: the point is compared, and with --fail-on-unknown its
	// breach (no samples) fails.
	res, err = Compare(old, loadReport([]int{1, 4}, []float64{10, 40}), Options{FailOn: thresholds(t, "points.ttft_ms.p50:+10%"), FailOnUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Regressions) != 1 || res.Regressions[0].Path != "runs.server.phases.load.points[1].ttft_ms" {
		t.Errorf("regressions %+v, want points[1] ttft_ms", res.Regressions)
	}
}
