package openai

import (
	"encoding/json"
	"fmt"
	"time"
)

// Reasoning models stream two channels: reasoning (delta.reasoning_content
// or delta.reasoning) and then the answer (delta.content). ttft_ms is the
// first token of any channel; what follows times them apart.

// channels times the answer and reasoning channels of one stream.
type channels struct {
	answer, reasoning             int // events with non-empty text
	firstAnswer, lastAnswer       time.Duration
	firstReasoning, lastReasoning time.Duration
	usageReasoningSet             bool
	usageReasoning                int
}

// event accounts one chunk's channels at its arrival time.
func (c *channels) event(ci *chunkInfo, at time.Duration) {
	if ci.reasoningBytes > 0 {
		if c.reasoning == 0 {
			c.firstReasoning = at
		}
		c.lastReasoning = at
		c.reasoning++
	}
	if ci.contentBytes > 0 {
		if c.answer == 0 {
			c.firstAnswer = at
		}
		c.lastAnswer = at
		c.answer++
	}
	if ci.usage && ci.reasoningSet {
		c.usageReasoningSet, c.usageReasoning = true, ci.reasoning
	}
}

// fill sets the channel metrics of m, whose completion tokens are completion.
func (c *channels) fill(m *Metrics, completion int) {
	if c.answer > 0 {
		m.TTFOMs = ptr(durMs(c.firstAnswer))
	}
	reasoning := c.reasoning
	if c.usageReasoningSet && m.TokenCountSource == SourceUsage {
		reasoning = c.usageReasoning
	}
	m.ReasoningTokens = ptr(reasoning)
	if span := c.lastReasoning - c.firstReasoning; reasoning >= 2 && c.reasoning >= 2 && span > 0 {
		m.ReasoningTokensPerS = ptr(float64(reasoning-1) / span.Seconds())
	}
	answer := c.answer
	if m.TokenCountSource != SourceSSEEvents && completion-reasoning >= 1 {
		answer = completion - reasoning
	}
	if span := c.lastAnswer - c.firstAnswer; answer >= 2 && c.answer >= 2 && span > 0 {
		m.AnswerTokensPerS = ptr(float64(answer-1) / span.Seconds())
	}
}

// completionDetailsJSON is usage.completion_tokens_details.
type completionDetailsJSON struct {
	ReasoningTokens json.RawMessage `json:"reasoning_tokens"`
}

// reasoningCount reads usage.completion_tokens_details.reasoning_tokens.
func (u *usageJSON) reasoningCount() (int, bool, error) {
	if u.CompletionTokensDetails == nil {
		return 0, false, nil
	}
	return parseCount("usage.completion_tokens_details.reasoning_tokens", u.CompletionTokensDetails.ReasoningTokens)
}

// completionDetails scans usage.completion_tokens_details (fast path).
func (s *scanner) completionDetails(ci *chunkInfo) bool {
	if s.peek() == 'n' {
		return s.lit("null")
	}
	return s.object(func(k []byte) bool {
		if string(k) == "reasoning_tokens" {
			var ok bool
			ci.reasoning, ci.reasoningSet, ok = s.int()
			return ok
		}
		return s.skip()
	})
}

// checkReasoning refuses more reasoning tokens than completion tokens.
func (c *chunkInfo) checkReasoning() error {
	if c.usage && c.reasoningSet && c.reasoning > c.completion {
		return fmt.Errorf("%w: usage.completion_tokens_details.reasoning_tokens %d exceeds usage.completion_tokens %d", ErrBadCount, c.reasoning, c.completion)
	}
	return nil
}

// jsonReasoning is a non-streamed answer's reasoning_tokens: the usage's
// when given, 0 when the answer carried no reasoning text, else unknown.
func jsonReasoning(u *usageJSON, reasoningBytes int) (*int, error) {
	if u != nil {
		n, set, err := u.reasoningCount()
		if err != nil {
			return nil, err
		}
		if set {
			return &n, nil
		}
	}
	if reasoningBytes == 0 {
		return ptr(0), nil
	}
	return nil, nil
}
