package openai

import (
	"encoding/json"
	"fmt"
)

// Reasoning models stream two channels: reasoning (delta.reasoning_content
// or delta.reasoning) and then the answer (delta.content). ttft_ms is the
// first token of any channel; the timeline times them apart
// (measure.Timeline's channels).

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
