package live

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/report"
)

// sampleOf is the recorded form of one request: what every fold, the
// report's samples and --samples-out read. retries are the request's
// retried 429/503 attempts.
func sampleOf(res measure.Result, retries int, phase, point string, index int, startMS float64) report.RequestSample {
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
		TargetPromptTokens: res.TargetPromptTokens, Retries: retries, StaleConnectionRetries: res.StaleConnectionRetries,
		ITLMS: m.ITLMs,
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
