package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
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
	tl    measure.Timeline
	u     usage
	phase phase
	block *int   // the open content block's index, when it gave one
	last  string // the last event's type, for messages
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
	Index   *int   `json:"index"`
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

// ErrEventOrder marks a Messages API stream whose events break the
// protocol's order: a protocol error naming the event and what was due.
var ErrEventOrder = errors.New("event out of order")

// phase is where a stream is in the Messages API's order:
//
//	message_start (content_block_start content_block_delta* content_block_stop)*
//	message_delta+ message_stop
//
// with ping and error allowed anywhere. message_delta may repeat (running
// usage totals). Event types the API may add later are skipped, as its
// versioning policy asks of clients.
type phase uint8

const (
	phaseBegin   phase = iota // nothing yet
	phaseMessage              // message started, no block open
	phaseBlock                // a content block open
	phaseDelta                // message_delta seen
	phaseStopped              // message_stop seen
)

// expected is what may come next in p, for messages.
func (p phase) expected() string {
	switch p {
	case phaseBegin:
		return "message_start"
	case phaseMessage:
		return "content_block_start or message_delta"
	case phaseBlock:
		return "content_block_delta or content_block_stop"
	case phaseDelta:
		return "message_delta or message_stop"
	}
	return "the end of the stream"
}

var (
	nameMessage = []byte("message")
	namePing    = []byte("ping")
)

// Event accounts one SSE event, holding the stream to the protocol's
// order (phase).
func (a *accumulator) Event(ev *sse.Event) error {
	tl := &a.tl
	tl.Events++
	if ev.Done {
		// OpenAI's [DONE]: not part of the Messages API, and no end of it.
		return nil
	}
	if bytes.Equal(ev.Name, namePing) {
		// Keep-alives are frequent and carry nothing: not decoded.
		return nil
	}
	var e eventJSON
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		return fmt.Errorf("decode event %q: %w", snippet(ev.Data, 120), err)
	}
	if e.Type == "" {
		e.Type = string(ev.Name)
	} else if len(ev.Name) > 0 && !bytes.Equal(ev.Name, nameMessage) && string(ev.Name) != e.Type {
		return fmt.Errorf("%w: an event named %q carries data of type %q", ErrEventOrder, snippet(ev.Name, 40), snippet([]byte(e.Type), 40))
	}
	if e.Type == "error" {
		return e.Error.streamError()
	}
	switch e.Type {
	case "message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop":
	default:
		return nil // ping, or a type added after this client
	}
	if a.phase == phaseStopped {
		return a.outOfOrder(e.Type)
	}
	var answer, reasoning, tool int
	switch e.Type {
	case "message_start":
		if a.phase != phaseBegin {
			return a.outOfOrder(e.Type)
		}
		a.phase = phaseMessage
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
		if a.phase != phaseMessage {
			return a.outOfOrder(e.Type)
		}
		a.phase, a.block = phaseBlock, e.Index
		if b := e.ContentBlock; b != nil {
			switch b.Type {
			case "text":
				answer = len(b.Text)
			case "thinking":
				reasoning = len(b.Thinking)
				// Claude 4 streams a summary of its thinking and counts
				// the whole of it.
				tl.Unstreamed = true
			case "redacted_thinking":
				tl.Unstreamed = true
			case "tool_use", "server_tool_use":
				tool = 1
			}
		}
	case "content_block_delta":
		if err := a.inBlock(e.Type, e.Index); err != nil {
			return err
		}
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
	case "content_block_stop":
		if err := a.inBlock(e.Type, e.Index); err != nil {
			return err
		}
		a.phase = phaseMessage
	case "message_delta":
		if a.phase != phaseMessage && a.phase != phaseDelta {
			return a.outOfOrder(e.Type)
		}
		a.phase = phaseDelta
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
		if a.phase != phaseDelta {
			return a.outOfOrder(e.Type)
		}
		a.phase = phaseStopped
		tl.Done = true
	}
	a.last = e.Type
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

// inBlock checks that a delta or a stop belongs to the open block (by its
// index, where both give one).
func (a *accumulator) inBlock(typ string, index *int) error {
	if a.phase != phaseBlock {
		return a.outOfOrder(typ)
	}
	if index != nil && a.block != nil && *index != *a.block {
		return fmt.Errorf("%w: %s for content block %d while block %d is open; expected content_block_delta or content_block_stop of block %d",
			ErrEventOrder, typ, *index, *a.block, *a.block)
	}
	return nil
}

func (a *accumulator) outOfOrder(typ string) error {
	after := "before any event"
	if a.last != "" {
		after = "after " + a.last
	}
	return fmt.Errorf("%w: %q %s; expected %s", ErrEventOrder, snippet([]byte(typ), 40), after, a.phase.expected())
}

// Finished is nil once message_stop was seen.
func (a *accumulator) Finished() error {
	if a.phase == phaseStopped {
		return nil
	}
	after := "before any Messages API event"
	if a.last != "" {
		after = "after " + a.last
	}
	return fmt.Errorf("%w: the stream ended %s (%d events, %d token events); expected %s", transport.ErrTruncated, after, a.tl.Events, a.tl.All.Events, a.phase.expected())
}
