package text

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/tollgate-dev/tollgate/report"
)

var update = flag.Bool("update", false, "rewrite golden files")

func fp(v float64) *float64 { return &v }

func metrics(n int, ttft ...float64) *report.ServingMetrics {
	return &report.ServingMetrics{Requests: n, Succeeded: n, TTFTMS: report.NewStat(ttft), E2EMS: report.NewStat(ttft),
		Errors: report.ErrorSummary{ByClass: map[string]int{}}}
}

// live is a live report with every kind of row, a load sweep, a warning,
// a failed request, a failed run and a failed gate.
func live() *report.Report {
	dec := metrics(3, 10, 11)
	dec.Succeeded = 2
	dec.TPOTMS, dec.DecodeTokensPerS = report.NewStat([]float64{10}), report.NewStat([]float64{99.8})
	dec.Warnings = []string{"no usage"}
	dec.Server = &report.ServerReported{Source: "llama.cpp timings", Requests: 2, PromptMS: report.NewStat([]float64{9.2, 9.4}),
		PromptPerS: report.NewStat([]float64{27000}), PredictedPerS: report.NewStat([]float64{100.2}), PredictedPerTokenMS: report.NewStat([]float64{9.98})}
	dec.Errors.Examples = []report.RequestError{{Class: "http_status", Status: 500, Request: "decode #2", Message: "boom"}}
	return &report.Report{
		Scenario: report.ScenarioInfo{Name: "live"}, Status: report.StatusFail,
		RunOrder: []string{"server", "down"},
		Runs: map[string]*report.Run{
			"down": {Target: report.Target{Kind: report.TargetOpenAI}, Status: report.RunError, Error: "connection refused"},
			"server": {Target: report.Target{Kind: report.TargetOpenAI, BaseURL: "http://127.0.0.1:8000", Model: "m", ModelSource: "from --set"},
				PhaseOrder: []string{"warmup", "prefill", "decode", "prefix_cache", "load"},
				Phases: map[string]*report.Phase{
					"warmup": {Kind: report.KindWarmup, ServingMetrics: metrics(2)},
					"prefill": {Kind: report.KindPrefill, ServingMetrics: metrics(4, 1, 2, 3, 4), ByPromptTokens: map[string]*report.Point{
						"1024": {ServingMetrics: metrics(2, 3, 4), TargetPromptTokens: 1024},
						"256":  {ServingMetrics: metrics(2, 1, 2), TargetPromptTokens: 256},
					}},
					"decode": {Kind: report.KindDecode, ServingMetrics: dec},
					"prefix_cache": {Kind: report.KindPrefixCache, ServingMetrics: metrics(6, 1), Variants: map[string]*report.Point{
						report.VariantIdentical: {ServingMetrics: metrics(2, 5), Speedup: fp(8.14)},
						report.VariantFresh:     {ServingMetrics: metrics(2, 40)},
						"long_suffix":           {ServingMetrics: metrics(2, 9), Speedup: fp(4.4)},
					}},
					"load": {Kind: report.KindLoad, ServingMetrics: metrics(20, 5), Points: []*report.LoadPoint{
						{Concurrency: 1, ServingMetrics: metrics(10, 4), RequestThroughputPerS: fp(9.5)},
						{Rate: 4, AchievedRatePerS: fp(3.96), ServingMetrics: metrics(10, 6),
							Goodput: &report.Goodput{AttainedPct: fp(95), GoodRequestsPerS: fp(3.1)}},
					}},
				}},
		},
		Gates: []report.GateResult{
			{Name: "status ok", Status: report.StatusFail, Observations: []report.Observation{
				{Expr: `runs.down.status == "ok"`, Op: "==", Left: "error", Right: "ok"}}},
			{Name: "fast", Status: report.StatusPass, Observations: []report.Observation{
				{Expr: "ttft <= 100", Op: "<=", Left: 99.6, Right: 100.0, Result: true}}},
		},
	}
}

func TestSummaryGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Summary(&buf, live()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "live.summary.golden")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report/text -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s changed; if intended, run go test ./report/text -update\n--- got\n%s\n--- want\n%s", path, buf.Bytes(), want)
	}
}

type brokenPipe struct{}

var errPipe = errors.New("broken pipe")

func (brokenPipe) Write([]byte) (int, error) { return 0, errPipe }

func TestSummaryReportsWriteErrors(t *testing.T) {
	if err := Summary(brokenPipe{}, live()); !errors.Is(err, errPipe) {
		t.Errorf("error %v, want %v", err, errPipe)
	}
}
