package live

import (
	"strconv"

	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// Shape returns the report a live run will produce, with placeholder values
// and every metric present, for checking gates when the scenario loads. It
// goes through the same aggregation code as a real run, so the shapes agree.
func Shape(run *scenarios.Run, samples bool) *report.Run {
	one, f := 1, 1.0
	fake := openai.Result{Metrics: openai.Metrics{
		TTFBMs: &f, TTFTMs: &f, E2EMs: 1, DecodeTokensPerS: &f, TPOTMs: &f, ITLMs: []float64{1},
		PrefillTokensPerS: &f, PromptTokens: &one, CompletionTokens: &one, CachedTokens: &one,
		TokenCountSource: openai.SourceUsage, SSETokenEvents: 1,
	}}
	metrics := func() *report.ServingMetrics {
		a := newAggregator()
		a.add(fake, "shape")
		return a.metrics()
	}
	cfg := run.Target.OpenAI
	out := &report.Run{Phases: map[string]*report.Phase{}}
	out.Target = report.Target{BaseURL: "http://shape", Model: "shape", ModelSource: "shape", Endpoint: cfg.Endpoint, ReadyMS: &f}
	if *cfg.Metadata {
		out.Target.Metadata = map[string]any{"*": map[string]any{"*": 1.0}}
	}
	for _, p := range run.Phases {
		ph := &report.Phase{Kind: p.Kind, ServingMetrics: metrics()}
		if *cfg.Metrics {
			ph.ServerMetricsDelta = map[string]float64{"*": 1}
		}
		switch p.Kind {
		case scenarios.PhaseWarmup:
			m := ph.ServingMetrics
			ph.ServingMetrics = &report.ServingMetrics{Requests: m.Requests, Succeeded: m.Succeeded, Errors: m.Errors, Warnings: m.Warnings}
		case scenarios.PhasePrefill:
			ph.ByPromptTokens = map[string]*report.Point{}
			for _, n := range p.PromptTokens {
				ph.ByPromptTokens[strconv.Itoa(n)] = &report.Point{ServingMetrics: metrics(), TargetPromptTokens: n}
			}
		case scenarios.PhaseLoad:
			specs := []report.LoadPoint{{Concurrency: p.Concurrency, Rate: p.Rate}}
			if len(p.Sweep.Concurrency)+len(p.Sweep.Rate) > 0 {
				specs = nil
				for _, c := range p.Sweep.Concurrency {
					specs = append(specs, report.LoadPoint{Concurrency: c})
				}
				for _, rt := range p.Sweep.Rate {
					specs = append(specs, report.LoadPoint{Rate: rt})
				}
			}
			for _, sp := range specs {
				lp := sp
				lp.ServingMetrics = metrics()
				lp.QueueMS = report.NewStat([]float64{1})
				lp.DurationS = 1
				lp.AchievedRatePerS, lp.RequestThroughputPerS, lp.OutputTokensPerS, lp.TotalTokensPerS, lp.AchievedConcurrency = &f, &f, &f, &f, &f
				if len(p.SLO.Limits) > 0 {
					lp.Goodput = &report.Goodput{SLO: p.SLO.Limits, GoodRequests: 1, GoodRequestsPerS: &f, AttainedPct: &f}
				}
				ph.Points = append(ph.Points, &lp)
			}
		case scenarios.PhasePrefixCache:
			ph.Variants = map[string]*report.Point{
				"fresh":        {ServingMetrics: metrics()},
				"identical":    {ServingMetrics: metrics(), Speedup: &f},
				"small_suffix": {ServingMetrics: metrics(), Speedup: &f},
			}
		}
		synthetic := p.Prompt.Text == "" && len(p.FilePrompts) == 0 && p.Kind != scenarios.PhaseRequests
		if synthetic && (p.Prompt.Calibrate == nil || *p.Prompt.Calibrate) {
			ph.Calibration = []report.CalibrationResult{{TargetTokens: 1, Tokens: 1, Words: 1, Method: "shape", Iterations: 1, Request: "shape"}}
		}
		if p.Kind != scenarios.PhaseWarmup && p.Kind != scenarios.PhaseLoad && samples {
			ph.Samples = []report.RequestSample{sampleOf(fake, p.Name, "", 0, 0)}
		}
		out.Phases[p.Name] = ph
		out.PhaseOrder = append(out.PhaseOrder, p.Name)
	}
	return out
}
