package live

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/stats"
)

// maxErrorExamples caps the failed requests quoted per class.
const maxErrorExamples = 3

// aggregator folds request results into ServingMetrics.
// Distributions are histograms, so memory stays bounded however long a load
// phase runs (exact up to 1024 values, within 0.05 % beyond).
type aggregator struct {
	requests, ok                                int
	ttfb, ttft, e2e, decode, tpot, itl, prefill *stats.Histogram
	prompt, completion, cached, events          *stats.Histogram
	connect, write                              *stats.Histogram
	ttfo, reasoning, reasoningRate, answerRate  *stats.Histogram
	// server holds the server's own per-request figures, when it sent any.
	server       *serverAgg
	sources      map[string]int
	clocks       map[string]int
	byClass      map[string]int
	examples     []report.RequestError
	errCount     int
	retries      int
	staleRetries int
	// prompt sizes against their targets (requests built to a size):
	// checked, beyond CalibrationTolerance, and the range of prompt − target.
	promptChecked, promptMisses int
	promptDevMin, promptDevMax  int
	// dists keeps each statistic's histogram in the report (shard reports,
	// so that tollgate merge adds distributions exactly).
	dists bool
}

// errorClasses are every class a request can fail with; by_class lists all
// of them (0 when none), so a gate on one class never reads a missing key.
var errorClasses = measure.ErrorClasses

func newAggregator() *aggregator {
	a := &aggregator{sources: map[string]int{}, clocks: map[string]int{}, byClass: map[string]int{},
		ttfb: stats.New(), ttft: stats.New(), e2e: stats.New(), decode: stats.New(), tpot: stats.New(), itl: stats.New(),
		prefill: stats.New(), prompt: stats.New(), completion: stats.New(), cached: stats.New(), events: stats.New(),
		connect: stats.New(), write: stats.New(),
		ttfo: stats.New(), reasoning: stats.New(), reasoningRate: stats.New(), answerRate: stats.New()}
	for _, c := range errorClasses {
		a.byClass[string(c)] = 0
	}
	return a
}

// addPtr adds a value the request may lack. Values a histogram refuses
// (negative, NaN) cannot come from the client's own arithmetic; they are
// counted by the histogram and left out.
func addPtr(h *stats.Histogram, v *float64) {
	if v != nil {
		_ = h.Add(*v)
	}
}

func addInt(h *stats.Histogram, v *int) {
	if v != nil {
		_ = h.Add(float64(*v))
	}
}

// add records one request. Failed requests count toward errors only: their
// partial timings would bias latency low (a fast 500 is not a fast answer).
func (a *aggregator) add(res measure.Result, name string) {
	a.requests++
	a.staleRetries += res.StaleConnectionRetries
	if res.Err != nil {
		a.errCount++
		class := string(res.Err.Class)
		a.byClass[class]++
		if a.byClass[class] <= maxErrorExamples {
			a.examples = append(a.examples, report.RequestError{Class: class, Status: res.Err.Status, Message: res.Err.Message, Request: name})
		}
		return
	}
	a.ok++
	m := res.Metrics
	addPtr(a.ttfb, m.TTFBMs)
	addPtr(a.ttft, m.TTFTMs)
	addPtr(a.ttfo, m.TTFOMs)
	addInt(a.reasoning, m.ReasoningTokens)
	addPtr(a.reasoningRate, m.ReasoningTokensPerS)
	addPtr(a.answerRate, m.AnswerTokensPerS)
	_ = a.e2e.Add(m.E2EMs)
	addPtr(a.decode, m.DecodeTokensPerS)
	addPtr(a.tpot, m.TPOTMs)
	for _, x := range m.ITLMs {
		_ = a.itl.Add(x)
	}
	addPtr(a.prefill, m.PrefillTokensPerS)
	addInt(a.prompt, m.PromptTokens)
	addInt(a.completion, m.CompletionTokens)
	addInt(a.cached, m.CachedTokens)
	_ = a.events.Add(float64(m.SSETokenEvents))
	if t := res.TargetPromptTokens; t > 0 && m.PromptTokens != nil {
		d := *m.PromptTokens - t
		if a.promptChecked == 0 || d < a.promptDevMin {
			a.promptDevMin = d
		}
		if a.promptChecked == 0 || d > a.promptDevMax {
			a.promptDevMax = d
		}
		a.promptChecked++
		if d > openai.CalibrationTolerance(t) || -d > openai.CalibrationTolerance(t) {
			a.promptMisses++
		}
	}
	addPtr(a.connect, m.ConnectMs)
	addPtr(a.write, m.RequestWriteMs)
	if t := m.Server; t != nil {
		if a.server == nil {
			a.server = &serverAgg{source: t.Source, promptMS: stats.New(), predictedMS: stats.New(), promptPerS: stats.New(),
				predictedPerS: stats.New(), perTokenMS: stats.New(), cacheN: stats.New()}
		}
		a.server.add(t)
	}
	if m.TokenCountSource != "" {
		a.sources[m.TokenCountSource]++
	}
	if res.ArrivalClock != "" {
		a.clocks[res.ArrivalClock]++
	}
}

func (a *aggregator) metrics() *report.ServingMetrics {
	stat := report.StatFrom
	if a.dists {
		stat = report.StatWithHistogram
	}
	m := &report.ServingMetrics{
		Requests:               a.requests,
		Succeeded:              a.ok,
		Errors:                 report.ErrorSummary{Count: a.errCount, ByClass: a.byClass, Examples: a.examples},
		TTFBMS:                 stat(a.ttfb),
		TTFTMS:                 stat(a.ttft),
		TTFOMS:                 stat(a.ttfo),
		ReasoningTokens:        stat(a.reasoning),
		ReasoningTokensPerS:    stat(a.reasoningRate),
		AnswerTokensPerS:       stat(a.answerRate),
		E2EMS:                  stat(a.e2e),
		DecodeTokensPerS:       stat(a.decode),
		TPOTMS:                 stat(a.tpot),
		ITLMS:                  stat(a.itl),
		PrefillTokensPerS:      stat(a.prefill),
		PromptTokens:           stat(a.prompt),
		CompletionTokens:       stat(a.completion),
		CachedTokens:           stat(a.cached),
		SSETokenEvents:         stat(a.events),
		Warnings:               []string{},
		Retries:                a.retries,
		StaleConnectionRetries: a.staleRetries,
	}
	if a.requests > 0 {
		m.Errors.Rate = report.F(float64(a.errCount) / float64(a.requests))
	}
	if a.server != nil {
		m.Server = a.server.report(stat)
	}
	if a.promptMisses > 0 {
		m.Warnings = append(m.Warnings, fmt.Sprintf("prompt size: %d of %d requests' prompts missed their target by more than max(4 tokens, 0.5 %%) by the server's count (prompt_tokens − target from %+d to %+d)",
			a.promptMisses, a.promptChecked, a.promptDevMin, a.promptDevMax))
	}
	m.TokenCountSource = single(a.sources)
	m.ArrivalClock = single(a.clocks)
	return m
}

func sampleOf(res measure.Result, phase, point string, index int, startMS float64) report.RequestSample {
	m := res.Metrics
	s := report.RequestSample{
		Phase: phase, Point: point, Index: index, StartMS: startMS, OK: res.Err == nil,
		HTTPStatus: res.HTTPStatus, BytesReceived: res.BytesReceived,
		TTFBMS: m.TTFBMs, TTFTMS: m.TTFTMs, TTFOMS: m.TTFOMs, ReasoningTokens: m.ReasoningTokens,
		ReasoningTokensPerS: m.ReasoningTokensPerS, AnswerTokensPerS: m.AnswerTokensPerS, E2EMS: m.E2EMs, DecodeTokensPerS: m.DecodeTokensPerS,
		TPOTMS: m.TPOTMs, PrefillTokensPerS: m.PrefillTokensPerS, PromptTokens: m.PromptTokens,
		CompletionTokens: m.CompletionTokens, CachedTokens: m.CachedTokens, TokenCountSource: m.TokenCountSource,
		SSETokenEvents: m.SSETokenEvents, FinishReason: m.FinishReason, DoneSeen: m.DoneSeen, UsageSeen: m.UsageSeen,
		ArrivalClock: res.ArrivalClock, ConnectMS: m.ConnectMs, RequestWriteMS: m.RequestWriteMs, Server: m.Server,
		TargetPromptTokens: res.TargetPromptTokens,
	}
	if res.Err != nil {
		s.Error = &report.RequestError{Class: string(res.Err.Class), Status: res.Err.Status, Message: res.Err.Message}
	}
	return s
}

func requestName(phase, point string, index int) string {
	if point != "" {
		return fmt.Sprintf("%s %s #%d", phase, point, index)
	}
	return fmt.Sprintf("%s #%d", phase, index)
}

// single is the one key of a tally, "mixed" for several, "" for none.
func single(tally map[string]int) string {
	switch len(tally) {
	case 0:
		return ""
	case 1:
		for k := range tally {
			return k
		}
	}
	return "mixed"
}

// serverAgg folds a server's own per-request figures.
type serverAgg struct {
	source                                                               string
	n                                                                    int
	promptMS, predictedMS, promptPerS, predictedPerS, perTokenMS, cacheN *stats.Histogram
}

func (s *serverAgg) add(t *report.ServerTimings) {
	s.n++
	addPtr(s.promptMS, t.PromptMs)
	addPtr(s.predictedMS, t.PredictedMs)
	addPtr(s.promptPerS, t.PromptPerSecond)
	addPtr(s.predictedPerS, t.PredictedPerSecond)
	addPtr(s.perTokenMS, t.PredictedPerTokenMs)
	addInt(s.cacheN, t.CacheN)
}

func (s *serverAgg) report(stat func(*stats.Histogram) report.Stat) *report.ServerReported {
	return &report.ServerReported{Source: s.source, Requests: s.n, PromptMS: stat(s.promptMS),
		PredictedMS: stat(s.predictedMS), PromptPerS: stat(s.promptPerS),
		PredictedPerS: stat(s.predictedPerS), PredictedPerTokenMS: stat(s.perTokenMS),
		CacheN: stat(s.cacheN)}
}
