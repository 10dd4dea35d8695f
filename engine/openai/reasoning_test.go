package openai

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/transport/sse"
)

// The reasoning channel: ttft_ms is the first token of any channel, ttfo_ms
// the first answer token; reasoning_tokens come from usage when the server
// counts them, else from the reasoning events; each channel has its rate.
func TestReasoningChannels(t *testing.T) {
	reason := func(field, s string) string {
		return `{"choices":[{"delta":{"` + field + `":"` + s + `"}}]}`
	}
	answer := func(s string) string { return `{"choices":[{"delta":{"content":"` + s + `"}}]}` }
	tool := `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f"}}]}}]}`
	usage := func(details string) string {
		return `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7` + details + `}}`
	}
	tests := []struct {
		name       string
		events     []string
		ttft, ttfo float64 // ms; ttfo < 0: absent
		reasoning  int
		reasonRate float64 // tokens/s; 0: absent
		answerRate float64
		errIs      error
	}{
		{name: "reasoning_content then answer, counted by usage",
			events: []string{reason("reasoning_content", "a"), reason("reasoning_content", "b"), reason("reasoning_content", "c"), answer("x"), answer("y"),
				usage(`,"completion_tokens_details":{"reasoning_tokens":4}`)},
			ttft: 10, ttfo: 40, reasoning: 4, reasonRate: 3 / 0.020, answerRate: 2 / 0.010},
		{name: "reasoning field, counted from events",
			events: []string{reason("reasoning", "a"), reason("reasoning", "b"), answer("x"), answer("y"), usage("")},
			ttft:   10, ttfo: 30, reasoning: 2, reasonRate: 1 / 0.010, answerRate: 4 / 0.010},
		{name: "no reasoning: ttfo is ttft",
			events: []string{answer("x"), answer("y"), answer("z"), usage(`,"completion_tokens_details":{"reasoning_tokens":0}`)},
			ttft:   10, ttfo: 10, reasoning: 0, answerRate: 6 / 0.020},
		{name: "tool call first: not an answer token",
			events: []string{tool, answer("x"), answer("y")},
			ttft:   10, ttfo: 20, reasoning: 0, answerRate: 1 / 0.010},
		{name: "reasoning only",
			events: []string{reason("reasoning_content", "a"), reason("reasoning_content", "b")},
			ttft:   10, ttfo: -1, reasoning: 2, reasonRate: 1 / 0.010},
		{name: "more reasoning than completion tokens",
			events: []string{answer("x"), usage(`,"completion_tokens_details":{"reasoning_tokens":9}`)},
			errIs:  ErrBadCount},
		{name: "slow path: reasoning count as a float",
			events: []string{answer("x"), `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"completion_tokens_details":{"reasoning_tokens":2.0}}}`},
			ttft:   10, ttfo: 10, reasoning: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			acc := NewAccumulator()
			acc.Reset(16)
			var err error
			for i, e := range tc.events {
				if err = acc.Event(&sse.Event{Data: []byte(e), At: time.Duration(i+1) * 10 * time.Millisecond}); err != nil {
					break
				}
			}
			if tc.errIs != nil {
				if !errors.Is(err, tc.errIs) {
					t.Fatalf("error %v, want %v", err, tc.errIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := acc.Metrics(time.Second)
			if m.TTFTMS == nil || *m.TTFTMS != tc.ttft {
				t.Errorf("ttft %v, want %v", m.TTFTMS, tc.ttft)
			}
			if (tc.ttfo < 0) != (m.TTFOMS == nil) || (m.TTFOMS != nil && *m.TTFOMS != tc.ttfo) {
				t.Errorf("ttfo %v, want %v", fmtPtr(m.TTFOMS), tc.ttfo)
			}
			if m.ReasoningTokens == nil || *m.ReasoningTokens != tc.reasoning {
				t.Errorf("reasoning tokens %v, want %d", m.ReasoningTokens, tc.reasoning)
			}
			near := func(name string, got *float64, want float64) {
				if (want == 0) != (got == nil) || (got != nil && (*got < want*0.999 || *got > want*1.001)) {
					t.Errorf("%s %v, want %v", name, fmtPtr(got), want)
				}
			}
			near("reasoning_tokens_per_s", m.ReasoningTokensPerS, tc.reasonRate)
			near("answer_tokens_per_s", m.AnswerTokensPerS, tc.answerRate)
		})
	}
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "absent"
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}
