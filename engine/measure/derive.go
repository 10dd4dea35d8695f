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
	// The figures a request has point into one block, not one
	// allocation each: Derive runs once per request.
	v := new(values)
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
		m.TTFBMS = v.float(durMs(t.Headers))
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
		m.TTFTMS = v.float(durMs(ttft))
	}
	if t.Answer.Events > 0 {
		m.TTFOMS = v.float(durMs(t.Answer.First))
	}

	u := &t.Usage
	counted := false // completion is the server's count
	switch {
	case u.CompletionSet:
		m.TokenCountSource = u.Source
		m.CompletionTokens = v.int(u.Completion)
		counted = true
	case streamed:
		m.TokenCountSource = SourceSSEEvents
		m.CompletionTokens = v.int(t.All.Tokens)
	}
	if u.PromptSet {
		m.PromptTokens = v.int(u.Prompt)
	}
	if u.CachedSet {
		m.CachedTokens = v.int(u.Cached)
	}
	switch {
	case u.ReasonSet:
		m.ReasoningTokens = v.int(u.Reasoning)
	case streamed:
		m.ReasoningTokens = v.int(t.Reasoning.Tokens)
	case t.ReasoningTextBytes == 0:
		m.ReasoningTokens = v.int(0)
	}

	if c := m.CompletionTokens; c != nil {
		span := t.All.interval()
		if m.DecodeTokensPerS = v.rate(*c-1, span); m.DecodeTokensPerS != nil {
			m.TPOTMS = v.float(durMs(span) / float64(*c-1))
		}
	}
	if r := m.ReasoningTokens; r != nil {
		m.ReasoningTokensPerS = v.rate(*r-1, t.Reasoning.interval())
		answer := t.Answer.Tokens
		if counted && *m.CompletionTokens-*r >= 1 {
			answer = *m.CompletionTokens - *r
		}
		m.AnswerTokensPerS = v.rate(answer-1, t.Answer.interval())
	}
	if p := m.PromptTokens; p != nil {
		cached := 0
		if m.CachedTokens != nil {
			cached = *m.CachedTokens
		}
		m.PrefillTokensPerS = v.rate(*p-cached, ttft)
	}
	return m
}

// values holds what one request's Metrics point at: a float figure each
// (ttfb, ttft, ttfo, tpot, and the four rates) and an int count each
// (completion, prompt, cached, reasoning).
type values struct {
	f      [8]float64
	i      [4]int
	nf, ni int
}

func (v *values) float(x float64) *float64 {
	p := &v.f[v.nf]
	v.nf++
	*p = x
	return p
}

func (v *values) int(x int) *int {
	p := &v.i[v.ni]
	v.ni++
	*p = x
	return p
}

// rate is tokens per second over d: present only when tokens ≥ 1 and d > 0.
func (v *values) rate(tokens int, d time.Duration) *float64 {
	if tokens < 1 || d <= 0 {
		return nil
	}
	return v.float(float64(tokens) / d.Seconds())
}
