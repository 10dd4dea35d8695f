package fold_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/fold"
	"github.com/tollgate-dev/tollgate/report/internal/testfixture"
)

// Three repetitions whose decode TPOT p50 is 10, 30 and 20 ms: every
// figure is summarised at its own path, samples are not, and the report
// with repetitions still validates.
func TestRepeatSummarisesEveryFigure(t *testing.T) {
	var reps []*report.Report
	for _, tpot := range []float64{10, 30, 20} {
		r := testfixture.LiveReport()
		r.Runs["embedded"].Phases["decode"].ServingMetrics.TPOTMS = report.NewStat([]float64{tpot})
		reps = append(reps, r)
	}
	got, err := fold.Repeat(reps)
	if err != nil {
		t.Fatal(err)
	}
	out := reps[2]
	out.Repetitions = got
	// What the fixture leaves out and a real run fills.
	out.Host.CPUCores, out.Scenario.Vars, out.Runs["embedded"].Params = 1, map[string]any{}, map[string]string{}
	out.Scenario.SHA256 = strings.Repeat("ab", 32)
	b, err := report.Marshal(out)
	if err != nil {
		t.Fatalf("a report with repetitions must validate: %v", err)
	}
	var doc struct {
		Repetitions struct {
			Count int
			Runs  map[string]struct {
				Phases map[string]map[string]any
			}
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Repetitions.Count != 3 {
		t.Errorf("count %d", doc.Repetitions.Count)
	}
	decode := doc.Repetitions.Runs["embedded"].Phases["decode"]
	p50 := decode["tpot_ms"].(map[string]any)["p50"].(map[string]any)
	wantCV := 10 / 20.0 // sample sd 10 over mean 20
	if p50["median"] != 20.0 || p50["mean"] != 20.0 || math.Abs(p50["cv"].(float64)-wantCV) > 1e-12 || p50["n"] != 3.0 {
		t.Errorf("tpot_ms.p50 across repetitions: %v", p50)
	}
	if _, ok := decode["samples"]; ok {
		t.Error("per-request samples must not be summarised")
	}
	// A figure that did not change has a cv of 0.
	ttft := decode["ttft_ms"].(map[string]any)["p50"].(map[string]any)
	if ttft["cv"] != 0.0 || ttft["median"] != 10.51 {
		t.Errorf("ttft_ms.p50: %v", ttft)
	}
}
