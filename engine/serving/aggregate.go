package serving

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/report"
)

// maxErrorExamples caps the failed requests quoted per class.
const maxErrorExamples = 3

// aggregator folds request results into ServingMetrics.
type aggregator struct {
	requests, ok                                int
	ttfb, ttft, e2e, decode, tpot, itl, prefill []float64
	prompt, completion, cached, events          []float64
	sources                                     map[string]int
	byClass                                     map[string]int
	examples                                    []report.RequestError
	errCount                                    int
}

// errorClasses are every class a request can fail with; by_class lists all
// of them (0 when none), so a gate on one class never reads a missing key.
var errorClasses = []openai.ErrorClass{
	openai.ClassConnect, openai.ClassTimeoutFirstToken, openai.ClassTimeoutIdle, openai.ClassTimeoutTotal,
	openai.ClassHTTPStatus, openai.ClassProtocol, openai.ClassReset, openai.ClassCanceled,
}

func newAggregator() *aggregator {
	a := &aggregator{sources: map[string]int{}, byClass: map[string]int{}}
	for _, c := range errorClasses {
		a.byClass[string(c)] = 0
	}
	return a
}

func appendPtr(dst []float64, v *float64) []float64 {
	if v == nil {
		return dst
	}
	return append(dst, *v)
}

func appendInt(dst []float64, v *int) []float64 {
	if v == nil {
		return dst
	}
	return append(dst, float64(*v))
}

// add records one request. Failed requests count toward errors only: their
// partial timings would bias latency low (a fast 500 is not a fast answer).
func (a *aggregator) add(res openai.Result, name string) {
	a.requests++
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
	a.ttfb = appendPtr(a.ttfb, m.TTFBMs)
	a.ttft = appendPtr(a.ttft, m.TTFTMs)
	a.e2e = append(a.e2e, m.E2EMs)
	a.decode = appendPtr(a.decode, m.DecodeTokensPerS)
	a.tpot = appendPtr(a.tpot, m.TPOTMs)
	a.itl = append(a.itl, m.ITLMs...)
	a.prefill = appendPtr(a.prefill, m.PrefillTokensPerS)
	a.prompt = appendInt(a.prompt, m.PromptTokens)
	a.completion = appendInt(a.completion, m.CompletionTokens)
	a.cached = appendInt(a.cached, m.CachedTokens)
	a.events = append(a.events, float64(m.SSETokenEvents))
	if m.TokenCountSource != "" {
		a.sources[m.TokenCountSource]++
	}
}

func (a *aggregator) metrics() *report.ServingMetrics {
	m := &report.ServingMetrics{
		Requests:          a.requests,
		Succeeded:         a.ok,
		Errors:            report.ErrorSummary{Count: a.errCount, ByClass: a.byClass, Examples: a.examples},
		TTFBMS:            report.NewStat(a.ttfb),
		TTFTMS:            report.NewStat(a.ttft),
		E2EMS:             report.NewStat(a.e2e),
		DecodeTokensPerS:  report.NewStat(a.decode),
		TPOTMS:            report.NewStat(a.tpot),
		ITLMS:             report.NewStat(a.itl),
		PrefillTokensPerS: report.NewStat(a.prefill),
		PromptTokens:      report.NewStat(a.prompt),
		CompletionTokens:  report.NewStat(a.completion),
		CachedTokens:      report.NewStat(a.cached),
		SSETokenEvents:    report.NewStat(a.events),
		Warnings:          []string{},
	}
	if a.requests > 0 {
		m.Errors.Rate = report.F(float64(a.errCount) / float64(a.requests))
	}
	switch len(a.sources) {
	case 0:
	case 1:
		for s := range a.sources {
			m.TokenCountSource = s
		}
	default:
		m.TokenCountSource = "mixed"
	}
	return m
}

func sampleOf(res openai.Result, phase, point string, index int, startMS float64) report.RequestSample {
	m := res.Metrics
	s := report.RequestSample{
		Phase: phase, Point: point, Index: index, StartMS: startMS, OK: res.Err == nil,
		HTTPStatus: res.HTTPStatus, BytesReceived: res.BytesReceived,
		TTFBMS: m.TTFBMs, TTFTMS: m.TTFTMs, E2EMS: m.E2EMs, DecodeTokensPerS: m.DecodeTokensPerS,
		TPOTMS: m.TPOTMs, PrefillTokensPerS: m.PrefillTokensPerS, PromptTokens: m.PromptTokens,
		CompletionTokens: m.CompletionTokens, CachedTokens: m.CachedTokens, TokenCountSource: m.TokenCountSource,
		SSETokenEvents: m.SSETokenEvents, FinishReason: m.FinishReason, DoneSeen: m.DoneSeen, UsageSeen: m.UsageSeen,
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
