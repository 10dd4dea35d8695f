package measure

import (
	"time"

	"github.com/tollgate-dev/tollgate/report"
)

// Derive computes every per-request metric of t, with DESIGN.md's
// definitions and one set of presence rules:
//
//   - ttfb_ms is present when the first response byte was observed; e2e_ms
//     always is.
//   - Nothing else is present unless an answer body was read (t.Body is not
//     BodyNone): a refused request has only what was measured.
//   - ttft_ms is present when a token event arrived, ttfo_ms when an answer
//     (not reasoning, not a tool call) event did.
//   - Token counts are the server's (t.Usage) where it gave them, and the
//     counted token events of a stream where it did not (token_count_source
//     sse_events); a non-streamed answer without counts has none.
//   - reasoning_tokens is the server's count where it gave one, else the
//     counted reasoning events of a stream; a non-streamed answer without a
//     count has 0 when it carried no reasoning text, else none (unknown).
//   - answer_tokens is completion_tokens − reasoning_tokens where the server
//     counted (and that leaves at least one), else the counted answer events.
//   - Every rate (decode, reasoning, answer, prefill) and tpot_ms is present
//     only when its numerator (tokens − 1, or prompt − cached) is at least
//     one and its interval is positive: no rate of nothing, none over no
//     time, never 0 for lack of work nor NaN or Inf.
func Derive(t *Timeline) Metrics {
	m := Metrics{
		RequestMetrics: report.RequestMetrics{
			E2EMS:        durMs(t.End),
			FinishReason: t.FinishReason,
			DoneSeen:     t.Done,
			UsageSeen:    t.UsageSeen,
			ArrivalClock: t.ArrivalClock,
			Server:       t.Server,
		},
		SSEEvents:          t.Events,
		OutputTextBytes:    t.OutputTextBytes,
		ReasoningTextBytes: t.ReasoningTextBytes,
		KeepAliveComments:  t.KeepAliveComments,
	}
	if t.HeadersSet {
		m.TTFBMS = ptr(durMs(t.Headers))
	}
	if t.Body == BodyNone {
		return m
	}
	streamed := t.Body == BodyStream
	if streamed {
		m.ITLMS = t.itl
		m.SSETokenEvents = t.All.Events
		m.CoalescedEvents, m.TTFTCoalesced = t.Coalesced, t.FirstCoalesced
	}
	var ttft time.Duration
	if t.All.Events > 0 {
		ttft = t.All.First
		m.TTFTMS = ptr(durMs(ttft))
	}
	if t.Answer.Events > 0 {
		m.TTFOMS = ptr(durMs(t.Answer.First))
	}

	u := &t.Usage
	counted := false // completion is the server's count
	switch {
	case u.CompletionSet:
		m.TokenCountSource = u.Source
		m.CompletionTokens = ptr(u.Completion)
		counted = true
	case streamed:
		m.TokenCountSource = SourceSSEEvents
		m.CompletionTokens = ptr(t.All.Tokens)
	}
	if u.PromptSet {
		m.PromptTokens = ptr(u.Prompt)
	}
	if u.CachedSet {
		m.CachedTokens = ptr(u.Cached)
	}
	switch {
	case u.ReasonSet:
		m.ReasoningTokens = ptr(u.Reasoning)
	case streamed:
		m.ReasoningTokens = ptr(t.Reasoning.Tokens)
	case t.ReasoningTextBytes == 0:
		m.ReasoningTokens = ptr(0)
	}

	if c := m.CompletionTokens; c != nil {
		span := t.All.interval()
		if m.DecodeTokensPerS = rate(*c-1, span); m.DecodeTokensPerS != nil {
			m.TPOTMS = ptr(durMs(span) / float64(*c-1))
		}
	}
	if r := m.ReasoningTokens; r != nil {
		m.ReasoningTokensPerS = rate(*r-1, t.Reasoning.interval())
		answer := t.Answer.Tokens
		if counted && *m.CompletionTokens-*r >= 1 {
			answer = *m.CompletionTokens - *r
		}
		m.AnswerTokensPerS = rate(answer-1, t.Answer.interval())
	}
	if p := m.PromptTokens; p != nil {
		cached := 0
		if m.CachedTokens != nil {
			cached = *m.CachedTokens
		}
		m.PrefillTokensPerS = rate(*p-cached, ttft)
	}
	return m
}

// rate is tokens per second over d: present only when tokens ≥ 1 and d > 0.
func rate(tokens int, d time.Duration) *float64 {
	if tokens < 1 || d <= 0 {
		return nil
	}
	return ptr(float64(tokens) / d.Seconds())
}
