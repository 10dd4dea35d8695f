package live

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/sim"
)

// chatServer answers every chat request by streaming reply(messages); it
// keeps every request's messages. /v1/models lists one model.
func chatServer(t *testing.T, reply func(msgs []map[string]any) string) (*httptest.Server, func() [][]map[string]any) {
	t.Helper()
	var mu sync.Mutex
	var seen [][]map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"data":[{"id":"m"}]}`))
			return
		}
		var body struct {
			Messages []map[string]any `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		seen = append(seen, body.Messages)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for _, word := range strings.SplitAfter(reply(body.Messages), " ") {
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": word}}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			fl.Flush()
		}
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n", 10*len(body.Messages))
	}))
	t.Cleanup(srv.Close)
	return srv, func() [][]map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return append([][]map[string]any(nil), seen...)
	}
}

// Each turn sends the whole history with the server's own replies, exactly
// as they streamed, and the new user message last.
func TestSessionsSendTheRealHistory(t *testing.T) {
	srv, seen := chatServer(t, func(msgs []map[string]any) string {
		return fmt.Sprintf("reply to %d messages", len(msgs))
	})
	sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false, metadata: false}
phases:
  chat: {kind: sessions, sessions: 3, turns: 4, concurrency: 3, prompt_tokens: 8, max_tokens: 4}
`, srv.URL), nil)
	r, err := runFirst(t, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	reqs := 0
	for _, msgs := range seen() {
		if len(msgs) == 0 || msgs[0]["role"] != "user" {
			continue
		}
		reqs++ // turns, and the calibration's one-message probes
		if len(msgs)%2 != 1 {
			t.Fatalf("a turn with %d messages: history plus one user message is odd", len(msgs))
		}
		for i, m := range msgs {
			want := "user"
			if i%2 == 1 {
				want = "assistant"
				if got := m["content"]; got != fmt.Sprintf("reply to %d messages", i) {
					t.Errorf("message %d is %q, not the server's reply to the %d messages before it", i, got, i)
				}
			}
			if m["role"] != want {
				t.Errorf("message %d has role %v, want %s", i, m["role"], want)
			}
		}
	}
	ph := r.Phases["chat"]
	if reqs < 12 || ph.Sessions.Completed != 3 || len(ph.ByTurn) != 4 {
		t.Fatalf("%d turns sent, %d sessions completed, by_turn %d keys", reqs, ph.Sessions.Completed, len(ph.ByTurn))
	}
	for turn := 1; turn <= 4; turn++ {
		p := ph.ByTurn[fmt.Sprint(turn)]
		if p.Requests != 3 || p.PromptTokens.Mean == nil || *p.PromptTokens.Mean != float64(10*(2*turn-1)) {
			t.Errorf("turn %d: %d requests, prompt tokens %v", turn, p.Requests, p.PromptTokens.Mean)
		}
	}
}

// On the simulator's prefix cache, every turn after the first finds the
// whole history cached: cached tokens grow turn by turn and cover all but
// the new message.
func TestSessionsCachedTokensGrowOnTheSimulator(t *testing.T) {
	_, url := startSim(t, sim.Config{DecodeStep: time.Millisecond})
	sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false, metadata: false}
phases:
  chat: {kind: sessions, sessions: 2, turns: 5, prompt_tokens: 64, max_tokens: 16}
`, url), nil)
	r, err := runFirst(t, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	prev := -1.0
	for turn := 1; turn <= 5; turn++ {
		p := r.Phases["chat"].ByTurn[fmt.Sprint(turn)]
		cached, prompt := *p.CachedTokens.Mean, *p.PromptTokens.Mean
		t.Logf("turn %d: prompt %.0f, cached %.0f", turn, prompt, cached)
		if turn == 1 && cached != 0 || turn > 1 && (cached <= prev || prompt-cached > 64+16+2*16) {
			t.Errorf("turn %d: cached %.0f of %.0f (previous turn %.0f)", turn, cached, prompt, prev)
		}
		prev = cached
	}
}

// toolServer answers a request whose last message is a user message with
// two tool calls whose arguments it streams a character per event; a request
// after tool results gets a text answer.
func toolServer(t *testing.T, args [2]string) (*httptest.Server, func() [][]map[string]any) {
	t.Helper()
	var mu sync.Mutex
	var seen [][]map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"data":[{"id":"m"}]}`))
			return
		}
		var body struct {
			Messages []map[string]any `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		seen = append(seen, body.Messages)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		event := func(delta any, finish any) {
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			fl.Flush()
		}
		if last := body.Messages[len(body.Messages)-1]; last["role"] == "tool" {
			event(map[string]any{"content": "done"}, "stop")
		} else {
			for k, name := range []string{"search", "fetch"} {
				event(map[string]any{"tool_calls": []any{map[string]any{"index": k, "id": fmt.Sprintf("call_%d", k), "type": "function",
					"function": map[string]any{"name": name, "arguments": ""}}}}, nil)
				for _, ch := range args[k] { // a character per event: JSON cannot carry half of one
					event(map[string]any{"tool_calls": []any{map[string]any{"index": k, "function": map[string]any{"arguments": string(ch)}}}}, nil)
				}
			}
			event(map[string]any{}, "tool_calls")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, func() [][]map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return append([][]map[string]any(nil), seen...)
	}
}

// An agent task answers each streamed tool call (arguments a character
// per event) with a tool message naming its id; arguments that do not match
// the tool's schema are counted.
func TestAgentAnswersToolCalls(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    [2]string
		invalid int
	}{
		{name: "valid arguments", args: [2]string{`{"q": "café"}`, `{"url": "http://x"}`}},
		{name: "a missing required field", args: [2]string{`{}`, `{"url": "http://x"}`}, invalid: 2},
		{name: "not JSON", args: [2]string{`{"q": "a"}`, `{"url": `}, invalid: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, seen := toolServer(t, tc.args)
			sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false, metadata: false}
phases:
  agent:
    kind: agent
    sessions: 2
    max_steps: 4
    prompt_tokens: 8
    tool_latency_ms: {distribution: uniform, min: 1, max: 3}
    tools:
      - {name: search, parameters: {type: object, properties: {q: {type: string}}, required: [q]}}
      - {name: fetch, parameters: {type: object, properties: {url: {type: string}}}}
`, srv.URL), nil)
			r, err := runFirst(t, sc, nil)
			if err != nil {
				t.Fatal(err)
			}
			a := r.Phases["agent"].Agent
			if a.Tasks != 2 || a.Answered != 2 || a.ToolCalls != 4 || a.InvalidArguments != tc.invalid || a.StepsPerTask.Max == nil || *a.StepsPerTask.Max != 2 {
				t.Errorf("agent %+v", a)
			}
			if a.TimeToFirstToolCallMS.Count != 2 || a.ToolLatencyMS.Count != 2 {
				t.Errorf("first tool call %d, tool latency %d samples", a.TimeToFirstToolCallMS.Count, a.ToolLatencyMS.Count)
			}
			for _, msgs := range seen() {
				if len(msgs) != 4 {
					continue // calibration, or a task's first step
				}
				calls, _ := msgs[1]["tool_calls"].([]any)
				if len(calls) != 2 {
					t.Fatalf("the assistant message carries %d tool calls, want 2", len(calls))
				}
				for k, c := range calls {
					f := c.(map[string]any)["function"].(map[string]any)
					if f["arguments"] != tc.args[k] {
						t.Errorf("call %d sent back with arguments %q, want %q", k, f["arguments"], tc.args[k])
					}
					if tm := msgs[2+k]; tm["role"] != "tool" || tm["tool_call_id"] != fmt.Sprintf("call_%d", k) {
						t.Errorf("message %d: %v", 2+k, tm)
					}
				}
			}
		})
	}
}

// The step limit ends a task that never stops calling tools.
func TestAgentStepLimit(t *testing.T) {
	_, url := startSim(t, sim.Config{DecodeStep: time.Millisecond, ToolCalls: &sim.ToolCalls{Probability: 1, ArgumentTokens: 5, PerReply: 3}})
	sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false, metadata: false}
phases:
  agent:
    kind: agent
    sessions: 2
    max_steps: 3
    prompt_tokens: 16
    tools: [{name: search, parameters: {type: object, properties: {input: {type: string}}, required: [input], additionalProperties: false}}]
`, url), nil)
	r, err := runFirst(t, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := r.Phases["agent"].Agent
	// 2 tasks × 3 steps × 3 calls received; the third step's are never answered.
	if a.StepLimit != 2 || a.Answered != 0 || a.ToolCallsReceived != 2*3*3 || a.ToolCalls != 2*2*3 || a.InvalidArguments != 0 || len(r.Phases["agent"].ByStep) != 3 {
		t.Errorf("agent %+v, by_step %d keys", a, len(r.Phases["agent"].ByStep))
	}
}
