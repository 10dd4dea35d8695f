package anthropic

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/engine/transport/sse"
)

// Stream events of the Messages API: message_start, content_block_start,
// content_block_delta, content_block_stop, message_delta (stop reason and
// usage), message_stop, ping, error.
//
// Token events (ttft_ms, itl_ms, sse_token_events) are deltas that carry
// text: text_delta (answer), thinking_delta (reasoning), input_json_delta
// with a non-empty partial_json and the start of a tool_use block (a tool
// call). signature_delta, pings, starts and stops are not tokens.

// accumulator records one stream's events into a measure.Timeline.
type accumulator struct {
	tl measure.Timeline
	u  usage
}

func newAccumulator(maxTokens int) *accumulator {
	a := &accumulator{}
	a.tl.Reset(maxTokens)
	a.tl.Body = measure.BodyStream
	return a
}

func (a *accumulator) Timeline() *measure.Timeline { return &a.tl }

// End: a Messages API stream keeps no reply.
func (a *accumulator) End(*measure.Result) {}

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

// record puts the counts seen so far in tl. The Messages API does not count
// thinking tokens apart: Derive counts the thinking deltas.
func (u *usage) record(tl *measure.Timeline) {
	tl.Usage = measure.Usage{Source: measure.SourceUsage, Prompt: u.prompt(), Completion: u.output, Cached: u.cacheRead,
		PromptSet: u.inputSet, CompletionSet: u.outputSet, CachedSet: u.cacheReadSet}
	tl.UsageSeen = u.outputSet
}

// count reads one count; set is false when absent or null.
func count(field string, raw json.RawMessage) (int, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 0 || n > 1<<40 {
		return 0, false, fmt.Errorf("%w: %s is %s", transport.ErrBadCount, field, snippet(raw, 40))
	}
	return int(n), true, nil
}

type errorJSON struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func (e *errorJSON) streamError() *transport.StreamError {
	if e == nil {
		return &transport.StreamError{Message: "error event without an error object"}
	}
	return &transport.StreamError{Message: e.Message, Type: e.Type}
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
	tl := &a.tl
	if tl.Done {
		return nil
	}
	tl.Events++
	if ev.Done {
		// OpenAI's [DONE]: not part of the Messages API, but harmless.
		tl.Done = true
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
			a.u.record(tl)
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
			tl.FinishReason = *e.Delta.StopReason
		}
		if e.Usage != nil {
			if err := a.u.add(e.Usage); err != nil {
				return err
			}
			a.u.record(tl)
		}
	case "message_stop":
		tl.Done = true
	}
	var ch measure.Channel
	if answer > 0 {
		ch |= measure.ChannelAnswer
	}
	if reasoning > 0 {
		ch |= measure.ChannelReasoning
	}
	if tool > 0 {
		ch |= measure.ChannelToolCall
	}
	if ch == 0 {
		return nil
	}
	tl.OutputTextBytes += answer
	tl.ReasoningTextBytes += reasoning
	return tl.Token(ev.At, ch, 0)
}
