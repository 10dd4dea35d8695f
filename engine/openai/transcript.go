package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport/sse"
)

// Bounds on a kept answer, so a server that never stops cannot grow
// memory: the bytes of one answer kept (its text and its calls' ids,
// names and arguments; a request's MaxReplyBytes, when lower, wins), past
// which the answer is dropped rather than kept, and the tool calls of one
// answer, past which it is an error (ErrReplyTooLarge).
const (
	MaxReplyBytes = 4 << 20
	MaxToolCalls  = 64
)

// ErrReplyTooLarge marks an answer with more tool calls than MaxToolCalls.
var ErrReplyTooLarge = errors.New("answer too large to keep")

// replyLimit is the bytes a transcript asked for max keeps of an answer.
func replyLimit(max int) int {
	if max <= 0 || max > MaxReplyBytes {
		return MaxReplyBytes
	}
	return max
}

// transcript reassembles a streamed answer: the content deltas, and the
// tool_calls deltas, whose arguments arrive in pieces and whose calls are
// told apart by index (the id and name come once, in the call's first
// piece). Past limit bytes it drops what it kept and only counts on.
type transcript struct {
	content   strings.Builder
	calls     map[int]*measure.ToolCall
	last      int // index of the call a delta without an index continues
	firstTool time.Duration
	sawTool   bool
	limit     int
	bytes     int // the answer's bytes so far (measure.ReplyBytes while kept)
	dropped   bool
}

// grow counts n more bytes of the answer and reports whether they may be
// kept; the first byte past the limit drops the answer.
func (t *transcript) grow(n int) bool {
	t.bytes += n
	if !t.dropped && t.bytes > t.limit {
		t.dropped = true
		t.content = strings.Builder{}
		t.calls = nil
	}
	return !t.dropped
}

// toolDelta is one streamed piece of a tool call.
type toolDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type transcriptChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta *struct {
			Content   *string     `json:"content"`
			ToolCalls []toolDelta `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
}

// event folds one SSE event. The accumulator has already checked it (error
// events, malformed JSON), so only the parts kept here are decoded.
func (t *transcript) event(ev *sse.Event) error {
	if ev.Done || len(ev.Name) > 0 && string(ev.Name) != "message" {
		return nil
	}
	var c transcriptChunk
	if err := json.Unmarshal(ev.Data, &c); err != nil {
		return fmt.Errorf("decode chunk: %w", err)
	}
	for _, ch := range c.Choices {
		d := ch.Delta
		if ch.Index != 0 || d == nil {
			continue // n=1: only the first choice is the answer
		}
		if d.Content != nil && t.grow(len(*d.Content)) {
			t.content.WriteString(*d.Content)
		}
		if len(d.ToolCalls) > 0 && !t.sawTool {
			t.sawTool, t.firstTool = true, ev.At
		}
		for _, td := range d.ToolCalls {
			if err := t.tool(td); err != nil {
				return err
			}
		}
	}
	return nil
}

// tool adds one piece to its call: a new index (or, from a server that
// sends none, an id other than the current call's) starts a call;
// anything else continues one.
func (t *transcript) tool(td toolDelta) error {
	idx := t.last
	switch {
	case td.Index != nil:
		idx = *td.Index
	case td.ID != "" && t.calls[t.last] != nil && t.calls[t.last].ID != "" && t.calls[t.last].ID != td.ID:
		idx = t.last + 1
	}
	if idx < 0 || idx >= MaxToolCalls {
		return fmt.Errorf("%w: tool call index %d (at most %d calls)", ErrReplyTooLarge, idx, MaxToolCalls)
	}
	t.last = idx
	c := t.calls[idx]
	if c == nil {
		c = &measure.ToolCall{Type: "function"}
	}
	n := len(td.Function.Name) + len(td.Function.Arguments)
	if td.ID != "" && td.ID != c.ID {
		n += len(td.ID) - len(c.ID)
	}
	if !t.grow(n) {
		return nil
	}
	if t.calls == nil {
		t.calls = map[int]*measure.ToolCall{}
	}
	t.calls[idx] = c
	if td.ID != "" {
		c.ID = td.ID
	}
	if td.Type != "" {
		c.Type = td.Type
	}
	c.Function.Name += td.Function.Name
	c.Function.Arguments += td.Function.Arguments
	return nil
}

// reply is the answer so far, its calls in index order.
func (t *transcript) reply() *measure.Reply {
	r := &measure.Reply{Content: t.content.String()}
	idx := make([]int, 0, len(t.calls))
	for i := range t.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		r.ToolCalls = append(r.ToolCalls, *t.calls[i])
	}
	if t.sawTool {
		r.FirstToolCallMs = ptr(durMs(t.firstTool))
	}
	r.Bytes, r.Dropped, r.CalledTools = t.bytes, t.dropped, t.sawTool
	return r
}

// replyJSON reads the answer of a non-streamed response body, dropped
// when it passes limit bytes.
func replyJSON(data []byte, limit int) *measure.Reply {
	var b struct {
		Choices []struct {
			Message *struct {
				Content   *string            `json:"content"`
				ToolCalls []measure.ToolCall `json:"tool_calls"`
			} `json:"message"`
			Text *string `json:"text"`
		} `json:"choices"`
	}
	r := &measure.Reply{}
	if json.Unmarshal(data, &b) != nil || len(b.Choices) == 0 {
		return r
	}
	ch := b.Choices[0]
	if m := ch.Message; m != nil {
		if m.Content != nil {
			r.Content = *m.Content
		}
		r.ToolCalls = m.ToolCalls
		if len(r.ToolCalls) > MaxToolCalls {
			r.ToolCalls = r.ToolCalls[:MaxToolCalls]
		}
	}
	if ch.Text != nil {
		r.Content = *ch.Text
	}
	r.CalledTools = len(r.ToolCalls) > 0
	if r.Bytes = measure.ReplyBytes(r.Content, r.ToolCalls); r.Bytes > limit {
		r.Content, r.ToolCalls, r.Dropped = "", nil, true
	}
	return r
}
