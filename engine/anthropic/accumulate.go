package anthropic

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/engine/openai/sse"
)

// Stream events of the Messages API: message_start, content_block_start,
// content_block_delta, content_block_stop, message_delta (stop reason and
// usage), message_stop, ping, error.
//
// Token events (ttft_ms, itl_ms, sse_token_events) are deltas that carry
// text: text_delta (answer), thinking_delta (reasoning), input_json_delta
// with a non-empty partial_json and the start of a tool_use block (a tool
// call). signature_delta, pings, starts and stops are not tokens.

// maxITL bounds the ITL gaps kept per request, as openai's accumulator does.
const maxITL = 1 << 16

// accumulator turns one stream's events into measure.Metrics.
type accumulator struct {
	ttfb    time.Duration
	ttfbSet bool

	tokenEvents       int
	firstTok, lastTok time.Duration
	itl               []float64
	itlStride         int
	itlSkip           int
	maxEvents         int
	maxTokens         int

	answer, reasoning             int
	firstAnswer, lastAnswer       time.Duration
	firstReasoning, lastReasoning time.Duration

	events         int
	contentBytes   int
	reasoningBytes int
	finish         string
	done           bool
	u              usage
}

func newAccumulator(maxTokens int) *accumulator {
	a := &accumulator{itlStride: 1, maxTokens: maxTokens, maxEvents: openai.TokenEventLimit(maxTokens)}
	if maxTokens > 0 {
		a.itl = make([]float64, 0, min(maxTokens, maxITL))
	}
	return a
}

func (a *accumulator) FirstByte(at time.Duration) {
	if !a.ttfbSet {
		a.ttfb, a.ttfbSet = at, true
	}
}

func (a *accumulator) TokenEvents() int { return a.tokenEvents }

// usageJSON is the Messages API usage object; counts stay raw so a bad one
// is named.
type usageJSON struct {
	InputTokens              json.RawMessage `json:"input_tokens"`
	OutputTokens             json.RawMessage `json:"output_tokens"`
	CacheReadInputTokens     json.RawMessage `json:"cache_read_input_tokens"`
	CacheCreationInputTokens json.RawMessage `json:"cache_creation_input_tokens"`
}

// usage holds the latest count of each field seen (message_start, then
// message_delta's running totals).
type usage struct {
	input, output, cacheRead, cacheWrite             int
	inputSet, outputSet, cacheReadSet, cacheWriteSet bool
}

func (u *usage) add(j *usageJSON) error {
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		n    *int
		set  *bool
	}{
		{"usage.input_tokens", j.InputTokens, &u.input, &u.inputSet},
		{"usage.output_tokens", j.OutputTokens, &u.output, &u.outputSet},
		{"usage.cache_read_input_tokens", j.CacheReadInputTokens, &u.cacheRead, &u.cacheReadSet},
		{"usage.cache_creation_input_tokens", j.CacheCreationInputTokens, &u.cacheWrite, &u.cacheWriteSet},
	} {
		n, set, err := count(f.name, f.raw)
		if err != nil {
			return err
		}
		if set {
			*f.n, *f.set = n, true
		}
	}
	return nil
}

// prompt is every input token: input_tokens counts only those neither read
// from nor written to the cache.
func (u *usage) prompt() int { return u.input + u.cacheRead + u.cacheWrite }

// count reads one count; set is false when absent or null.
func count(field string, raw json.RawMessage) (int, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 0 || n > 1<<40 {
		return 0, false, fmt.Errorf("%w: %s is %s", openai.ErrBadCount, field, snippet(raw, 40))
	}
	return int(n), true, nil
}

type errorJSON struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func (e *errorJSON) streamError() *openai.StreamError {
	if e == nil {
		return &openai.StreamError{Message: "error event without an error object"}
	}
	return &openai.StreamError{Message: e.Message, Type: e.Type}
}

// eventJSON is any stream event's data.
type eventJSON struct {
	Type    string `json:"type"`
	Message *struct {
		Usage *usageJSON `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	} `json:"content_block"`
	Delta *struct {
		Type        string  `json:"type"`
		Text        string  `json:"text"`
		Thinking    string  `json:"thinking"`
		PartialJSON string  `json:"partial_json"`
		StopReason  *string `json:"stop_reason"`
	} `json:"delta"`
	Usage *usageJSON `json:"usage"`
	Error *errorJSON `json:"error"`
}

// Event accounts one SSE event; events after message_stop are ignored.
func (a *accumulator) Event(ev *sse.Event) error {
	if a.done {
		return nil
	}
	a.events++
	if ev.Done {
		// OpenAI's [DONE]: not part of the Messages API, but harmless.
		a.done = true
		return nil
	}
	var e eventJSON
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		return fmt.Errorf("decode event %q: %w", snippet(ev.Data, 120), err)
	}
	if e.Type == "" {
		e.Type = string(ev.Name)
	}
	var answer, reasoning, tool int
	switch e.Type {
	case "error":
		return e.Error.streamError()
	case "message_start":
		if e.Message != nil && e.Message.Usage != nil {
			// Its output_tokens is a placeholder (1): only message_delta's
			// total counts the answer.
			u := *e.Message.Usage
			u.OutputTokens = nil
			if err := a.u.add(&u); err != nil {
				return err
			}
		}
	case "content_block_start":
		if b := e.ContentBlock; b != nil {
			switch b.Type {
			case "text":
				answer = len(b.Text)
			case "thinking":
				reasoning = len(b.Thinking)
			case "tool_use", "server_tool_use":
				tool = 1
			}
		}
	case "content_block_delta":
		if d := e.Delta; d != nil {
			switch d.Type {
			case "text_delta":
				answer = len(d.Text)
			case "thinking_delta":
				reasoning = len(d.Thinking)
			case "input_json_delta":
				tool = len(d.PartialJSON)
			}
		}
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != nil {
			a.finish = *e.Delta.StopReason
		}
		if e.Usage != nil {
			if err := a.u.add(e.Usage); err != nil {
				return err
			}
		}
	case "message_stop":
		a.done = true
	}
	if answer+reasoning+tool == 0 {
		return nil
	}
	at := ev.At
	if a.tokenEvents == 0 {
		a.firstTok = at
	} else {
		a.addGap(float64(at-a.lastTok) / float64(time.Millisecond))
	}
	a.lastTok = at
	a.tokenEvents++
	if a.maxEvents > 0 && a.tokenEvents > a.maxEvents {
		return fmt.Errorf("%w: the server sent %d token events for max_tokens %d", openai.ErrTooManyTokens, a.tokenEvents, a.maxTokens)
	}
	if answer > 0 {
		if a.answer == 0 {
			a.firstAnswer = at
		}
		a.lastAnswer = at
		a.answer++
		a.contentBytes += answer
	}
	if reasoning > 0 {
		if a.reasoning == 0 {
			a.firstReasoning = at
		}
		a.lastReasoning = at
		a.reasoning++
		a.reasoningBytes += reasoning
	}
	return nil
}

// addGap keeps a bounded, systematic sample of the gaps (openai's rule).
func (a *accumulator) addGap(gap float64) {
	if a.itlSkip++; a.itlSkip < a.itlStride {
		return
	}
	a.itlSkip = 0
	if len(a.itl) == maxITL {
		for i := range maxITL / 2 {
			a.itl[i] = a.itl[2*i+1]
		}
		a.itl = a.itl[:maxITL/2]
		a.itlStride *= 2
	}
	a.itl = append(a.itl, gap)
}

func durMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Metrics computes the per-request figures with openai's definitions.
func (a *accumulator) Metrics(end time.Duration) measure.Metrics {
	m := measure.Metrics{
		E2EMs: durMs(end), ITLMs: a.itl, SSETokenEvents: a.tokenEvents, SSEEvents: a.events,
		FinishReason: a.finish, OutputTextBytes: a.contentBytes, ReasoningTextBytes: a.reasoningBytes,
		DoneSeen: a.done, UsageSeen: a.u.outputSet,
	}
	if a.ttfbSet {
		m.TTFBMs = ptr(durMs(a.ttfb))
	}
	if a.tokenEvents > 0 {
		m.TTFTMs = ptr(durMs(a.firstTok))
	}
	if a.answer > 0 {
		m.TTFOMs = ptr(durMs(a.firstAnswer))
	}
	completion := a.tokenEvents
	m.TokenCountSource = measure.SourceSSEEvents
	if a.u.outputSet {
		completion, m.TokenCountSource = a.u.output, measure.SourceUsage
	}
	if a.u.inputSet {
		m.PromptTokens = ptr(a.u.prompt())
	}
	if a.u.cacheReadSet {
		m.CachedTokens = ptr(a.u.cacheRead)
	}
	m.CompletionTokens = ptr(completion)
	// The Messages API does not count thinking tokens apart: they are the
	// thinking deltas counted.
	m.ReasoningTokens = ptr(a.reasoning)
	if span := a.lastTok - a.firstTok; a.tokenEvents > 0 && completion >= 2 && span > 0 {
		m.DecodeTokensPerS = ptr(float64(completion-1) / span.Seconds())
		m.TPOTMs = ptr(durMs(span) / float64(completion-1))
	}
	if span := a.lastReasoning - a.firstReasoning; a.reasoning >= 2 && span > 0 {
		m.ReasoningTokensPerS = ptr(float64(a.reasoning-1) / span.Seconds())
	}
	answer := a.answer
	if a.u.outputSet && completion-a.reasoning >= 1 {
		answer = completion - a.reasoning
	}
	if span := a.lastAnswer - a.firstAnswer; answer >= 2 && a.answer >= 2 && span > 0 {
		m.AnswerTokensPerS = ptr(float64(answer-1) / span.Seconds())
	}
	if m.PromptTokens != nil && a.tokenEvents > 0 && a.firstTok > 0 {
		cached := 0
		if m.CachedTokens != nil {
			cached = *m.CachedTokens
		}
		m.PrefillTokensPerS = ptr(float64(*m.PromptTokens-cached) / a.firstTok.Seconds())
	}
	return m
}
