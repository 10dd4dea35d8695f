package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/engine/measure"
)

// toolStream is a chat stream whose answer is two tool calls, told apart
// by index, each call's arguments split over several deltas (one piece
// escapes a quote and carries a multi-byte rune), with an interleaved
// content delta.
const toolStream = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"search","arguments":""}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\": \"caf"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"fetch","arguments":"{\"url\""}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"é \\\"x\\\"\"}"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":": \"http://a\"}"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":9}}

data: [DONE]

`

// TestToolCallsReassembledFromBytes: a server that writes (and flushes)
// every byte apart still yields each call's exact arguments, by index.
func TestToolCallsReassembledFromBytes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		if _, ok := body["tools"]; !ok {
			http.Error(w, "no tools", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := 0; i < len(toolStream); i++ {
			_, _ = w.Write([]byte{toolStream[i]})
			fl.Flush()
		}
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Stream(context.Background(), Request{Model: "m", Stream: true, MaxTokens: 64, Transcript: true,
		Messages: []Message{{Role: "user", Content: "hi"}},
		Tools:    []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"search","parameters":{"type":"object"}}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	want := []measure.ToolCall{
		{ID: "call_a", Type: "function", Function: measure.FunctionCall{Name: "search", Arguments: `{"q": "café \"x\""}`}},
		{ID: "call_b", Type: "function", Function: measure.FunctionCall{Name: "fetch", Arguments: `{"url": "http://a"}`}},
	}
	got := res.Reply
	if got == nil || len(got.ToolCalls) != len(want) {
		t.Fatalf("reply %+v, want %d calls", got, len(want))
	}
	for i, w := range want {
		if got.ToolCalls[i] != w {
			t.Errorf("call %d: %+v, want %+v", i, got.ToolCalls[i], w)
		}
		if !json.Valid([]byte(got.ToolCalls[i].Function.Arguments)) {
			t.Errorf("call %d: arguments %q are not JSON", i, got.ToolCalls[i].Function.Arguments)
		}
	}
	if got.FirstToolCallMs == nil || res.TTFTMS == nil || *got.FirstToolCallMs < *res.TTFTMS {
		t.Errorf("first tool call %v ms, ttft %v ms", got.FirstToolCallMs, res.TTFTMS)
	}
	if res.FinishReason != "tool_calls" || res.BytesReceived != int64(len(toolStream)) {
		t.Errorf("finish %q, %d bytes of %d", res.FinishReason, res.BytesReceived, len(toolStream))
	}
}

// TestTranscriptDeltas: table of delta sequences and what they reassemble
// to, within a limit of bytes kept (MaxReplyBytes when 0).
func TestTranscriptDeltas(t *testing.T) {
	idx := func(i int) *int { return &i }
	for _, tc := range []struct {
		name    string
		limit   int
		deltas  []toolDelta
		want    []string // arguments by call
		ids     []string // ids by call, when checked
		bytes   int      // Reply.Bytes, when checked
		dropped bool
		err     bool
	}{
		{name: "one call in pieces", deltas: []toolDelta{{Index: idx(0), ID: "a"}, {Index: idx(0), Function: fn("{")}, {Index: idx(0), Function: fn("}")}}, want: []string{"{}"}, bytes: 3},
		{name: "no index, new id starts a call", deltas: []toolDelta{{ID: "a", Function: fn("[1")}, {Function: fn("]")}, {ID: "b", Function: fn("2")}}, want: []string{"[1]", "2"}},
		{name: "no index, the same id again continues the call", deltas: []toolDelta{{ID: "a", Function: fn("[1")}, {ID: "a", Function: fn("]")}, {ID: "b", Function: fn("2")}},
			want: []string{"[1]", "2"}, ids: []string{"a", "b"}, bytes: 6},
		{name: "two indexes, one id: two calls", deltas: []toolDelta{{Index: idx(0), ID: "a", Function: fn("1")}, {Index: idx(1), ID: "a", Function: fn("2")}},
			want: []string{"1", "2"}, ids: []string{"a", "a"}},
		{name: "a call without an id is kept without one", deltas: []toolDelta{{Index: idx(0), Function: fn("{}")}}, want: []string{"{}"}, ids: []string{""}},
		{name: "sparse indexes keep order", deltas: []toolDelta{{Index: idx(3), ID: "d", Function: fn("3")}, {Index: idx(1), ID: "b", Function: fn("1")}}, want: []string{"1", "3"}},
		{name: "index over the bound", deltas: []toolDelta{{Index: idx(MaxToolCalls)}}, err: true},
		{name: "negative index", deltas: []toolDelta{{Index: idx(-1)}}, err: true},
		{name: "arguments at the limit are kept", limit: 4, deltas: []toolDelta{{Index: idx(0), ID: "a", Function: fn("{}")}, {Index: idx(0), Function: fn("x")}},
			want: []string{"{}x"}, bytes: 4},
		{name: "arguments past the limit drop the answer", limit: 4, deltas: []toolDelta{{Index: idx(0), ID: "a", Function: fn("{}")}, {Index: idx(0), Function: fn("xy")}, {Index: idx(1), ID: "b"}},
			bytes: 6, dropped: true},
		{name: "arguments past MaxReplyBytes drop the answer", deltas: []toolDelta{{Index: idx(0), Function: fn(strings.Repeat("x", MaxReplyBytes+1))}},
			bytes: MaxReplyBytes + 1, dropped: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &transcript{limit: replyLimit(tc.limit)}
			var err error
			for _, d := range tc.deltas {
				if err = tr.tool(d); err != nil {
					break
				}
			}
			if (err != nil) != tc.err {
				t.Fatalf("err %v, want error %v", err, tc.err)
			}
			if tc.err {
				if !errors.Is(err, ErrReplyTooLarge) {
					t.Errorf("err %v, want ErrReplyTooLarge", err)
				}
				return
			}
			r := tr.reply()
			var got, ids []string
			for _, c := range r.ToolCalls {
				got = append(got, c.Function.Arguments)
				ids = append(ids, c.ID)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("arguments %q, want %q", got, tc.want)
			}
			if tc.ids != nil && strings.Join(ids, "|") != strings.Join(tc.ids, "|") {
				t.Errorf("ids %q, want %q", ids, tc.ids)
			}
			if r.Dropped != tc.dropped || tc.bytes != 0 && r.Bytes != tc.bytes {
				t.Errorf("dropped %v, %d bytes; want dropped %v, %d bytes", r.Dropped, r.Bytes, tc.dropped, tc.bytes)
			}
			if !r.Dropped && r.Bytes != measure.ReplyBytes(r.Content, r.ToolCalls) {
				t.Errorf("Bytes %d, measure.ReplyBytes %d", r.Bytes, measure.ReplyBytes(r.Content, r.ToolCalls))
			}
		})
	}
}

func fn(args string) (f struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}) {
	f.Arguments = args
	return f
}

// A reply past the request's MaxReplyBytes is dropped, not kept and not an
// error: the request is measured whole, streamed or not, and the reply
// says how large it was.
func TestTranscriptDropsAReplyOverItsLimit(t *testing.T) {
	text := strings.Repeat("y", 10<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if !body.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":8}}`, text)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < len(text); i += 1 << 10 {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", text[i:i+1<<10])
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		name    string
		stream  bool
		limit   int
		dropped bool
	}{
		{name: "streamed, over the limit", stream: true, limit: 1 << 10, dropped: true},
		{name: "streamed, at the limit", stream: true, limit: len(text)},
		{name: "streamed, the protocol's own limit", stream: true},
		{name: "not streamed, over the limit", limit: 1 << 10, dropped: true},
		{name: "not streamed, at the limit", limit: len(text)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Stream(context.Background(), Request{Model: "m", Stream: tc.stream, MaxTokens: 8, Transcript: true, MaxReplyBytes: tc.limit,
				Messages: []Message{{Role: "user", Content: "hi"}}})
			if err != nil {
				t.Fatal(err)
			}
			r := res.Reply
			if r == nil || r.Dropped != tc.dropped || r.Bytes != len(text) || r.CalledTools {
				t.Fatalf("reply %+v, want dropped %v, %d bytes", r, tc.dropped, len(text))
			}
			if want := map[bool]string{false: text}[tc.dropped]; r.Content != want {
				t.Errorf("kept %d bytes of content, want %d", len(r.Content), len(want))
			}
			if res.OutputTextBytes != len(text) {
				t.Errorf("output_text_bytes %d, want %d: a dropped reply is still measured", res.OutputTextBytes, len(text))
			}
		})
	}
}
