package openai

import (
	"context"
	"encoding/json"
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

// TestTranscriptDeltas: table of delta sequences and what they reassemble to.
func TestTranscriptDeltas(t *testing.T) {
	idx := func(i int) *int { return &i }
	for _, tc := range []struct {
		name   string
		deltas []toolDelta
		want   []string // arguments by call
		err    bool
	}{
		{name: "one call in pieces", deltas: []toolDelta{{Index: idx(0), ID: "a"}, {Index: idx(0), Function: fn("{")}, {Index: idx(0), Function: fn("}")}}, want: []string{"{}"}},
		{name: "no index, new id starts a call", deltas: []toolDelta{{ID: "a", Function: fn("[1")}, {Function: fn("]")}, {ID: "b", Function: fn("2")}}, want: []string{"[1]", "2"}},
		{name: "sparse indexes keep order", deltas: []toolDelta{{Index: idx(3), ID: "d", Function: fn("3")}, {Index: idx(1), ID: "b", Function: fn("1")}}, want: []string{"1", "3"}},
		{name: "index over the bound", deltas: []toolDelta{{Index: idx(MaxToolCalls)}}, err: true},
		{name: "negative index", deltas: []toolDelta{{Index: idx(-1)}}, err: true},
		{name: "arguments over the bound", deltas: []toolDelta{{Index: idx(0), Function: fn(strings.Repeat("x", MaxToolArgumentBytes+1))}}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &transcript{}
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
				return
			}
			r := tr.reply()
			var got []string
			for _, c := range r.ToolCalls {
				got = append(got, c.Function.Arguments)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("arguments %q, want %q", got, tc.want)
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
