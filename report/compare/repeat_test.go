package compare

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/fold"
)

// repeated is a report of runs repetitions whose decode TTFT p50 is drawn
// around median with a spread of sigma between runs; no per-request
// samples are kept, so only the repetitions can tell noise.
func repeated(t *testing.T, seed uint64, runs int, median, sigma float64) *report.Report {
	t.Helper()
	var reps []*report.Report
	for i, p50 := range draw(seed, runs, median, sigma) {
		reps = append(reps, liveReport([]float64{p50, p50 * (1 + 0.01*float64(i%2))}, []float64{100, 100}, false))
	}
	r, err := fold.Repeat(reps)
	if err != nil {
		t.Fatal(err)
	}
	last := reps[len(reps)-1]
	last.Repetitions = r
	return last
}

// Where neither report kept samples, repetitions tell: an unchanged server
// with 5 % drift between runs passes, one 50 % slower fails, and fewer runs
// than the floor cannot tell.
func TestAcrossRunNoise(t *testing.T) {
	th, err := ParseThreshold("ttft_ms.p50:+10%")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		runs       int
		newMedian  float64
		regression bool
		cannotTell bool
	}{
		{name: "unchanged, 10 runs a side", runs: 10, newMedian: 100},
		{name: "50% slower, 10 runs a side", runs: 10, newMedian: 150, regression: true},
		{name: "50% slower, 5 runs a side", runs: 5, newMedian: 150, regression: true},
		{name: "50% slower, 3 runs: too few to tell", runs: 3, newMedian: 150, cannotTell: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := repeated(t, 1, tc.runs, 100, 0.05), repeated(t, 2, tc.runs, tc.newMedian, 0.05)
			res, err := Compare(old, cur, Options{FailOn: []Threshold{th}})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(res.Regressions) > 0; got != tc.regression {
				t.Errorf("regression %v, want %v: %+v", got, tc.regression, res.Regressions)
			}
			if got := len(res.CannotTell) > 0; got != tc.cannotTell {
				t.Errorf("cannot tell %v, want %v", got, tc.cannotTell)
			}
			for _, m := range res.Metrics {
				if m.Name == "ttft_ms" && tc.runs >= 5 && (!m.Noise.AcrossRuns || !strings.Contains(m.Noise.Note, "over runs")) {
					t.Errorf("ttft_ms noise %+v, want across runs", m.Noise)
				}
			}
		})
	}
}

// Across 20 pairs of unchanged servers with 5 % drift between runs, the
// recipe fails none: the error rate is controlled over runs, not requests.
func TestAcrossRunNoNoiseRegressions(t *testing.T) {
	th, _ := ParseThreshold("ttft_ms.p50:+10%")
	for seed := uint64(0); seed < 20; seed++ {
		old, cur := repeated(t, 100+seed, 5, 100, 0.05), repeated(t, 200+seed, 5, 100, 0.05)
		res, err := Compare(old, cur, Options{FailOn: []Threshold{th}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Regressions) > 0 {
			t.Errorf("seed %d: %s", seed, res.Regressions[0].Reason)
		}
	}
}

// A load phase keeps its samples, labelled by point: each point is judged
// over its own requests, not "cannot tell".
func TestLoadPointsJudgedOverTheirSamples(t *testing.T) {
	mk := func(seed uint64, median float64) *report.Report {
		r := liveReport(nil, nil, false)
		var samples []report.RequestSample
		var points []*report.LoadPoint
		for i, c := range []int{1, 8} {
			v := draw(seed+uint64(i), 20, median*float64(i+1), 0.02)
			for j, x := range v {
				samples = append(samples, report.RequestSample{Phase: "load", Point: fmt.Sprintf("concurrency %d", c), Index: j, OK: true, RequestMetrics: report.RequestMetrics{TTFTMS: fp(x)}})
			}
			points = append(points, &report.LoadPoint{Concurrency: c, ServingMetrics: &report.ServingMetrics{Requests: 20, Succeeded: 20,
				TTFTMS: report.NewStat(v), Errors: report.ErrorSummary{Rate: fp(0), ByClass: map[string]int{}}}})
		}
		r.Runs["server"].PhaseOrder = []string{"load"}
		r.Runs["server"].Phases = map[string]*report.Phase{"load": {Kind: "load", Samples: samples, Points: points,
			ServingMetrics: &report.ServingMetrics{Requests: 40, Succeeded: 40, Errors: report.ErrorSummary{Rate: fp(0), ByClass: map[string]int{}}}}}
		return r
	}
	th, err := ParseThreshold("load.points[1].ttft_ms.p50:+10%")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compare(mk(1, 10), mk(9, 15), Options{FailOn: []Threshold{th}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Regressions) != 1 || len(res.CannotTell) != 0 {
		t.Fatalf("regressions %+v, cannot tell %+v", res.Regressions, res.CannotTell)
	}
}
