package sim

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// A reasoning model streams its first ReasoningTokens tokens as
// reasoning_content, then the answer as content, and counts them in usage.
func TestReasoningChannel(t *testing.T) {
	tests := []struct {
		name                  string
		reasoning, maxTokens  int
		wantReason, wantAnswr int
	}{
		{name: "reasoning then answer", reasoning: 3, maxTokens: 8, wantReason: 3, wantAnswr: 5},
		{name: "all reasoning", reasoning: 10, maxTokens: 4, wantReason: 4, wantAnswr: 0},
		{name: "no reasoning", reasoning: 0, maxTokens: 4, wantReason: 0, wantAnswr: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fastConfig()
			cfg.ReasoningTokens = tc.reasoning
			ts := startServer(t, cfg)
			_, events := ts.streamEvents(t, context.Background(), "/v1/chat/completions", chatBody("hello there",
				map[string]any{"stream": true, "max_tokens": tc.maxTokens, "ignore_eos": true, "stream_options": map[string]any{"include_usage": true}}))
			var reason, answer int
			var usage map[string]any
			for _, e := range events {
				if e.data == "[DONE]" {
					continue
				}
				m := decodeMap(t, []byte(e.data))
				if u, ok := m["usage"].(map[string]any); ok {
					usage = u
				}
				ch, _ := m["choices"].([]any)
				for _, c := range ch {
					d, _ := c.(map[string]any)["delta"].(map[string]any)
					if s, _ := d["reasoning_content"].(string); s != "" {
						if answer > 0 {
							t.Fatal("reasoning after the answer began")
						}
						reason++
					}
					if s, _ := d["content"].(string); s != "" {
						answer++
					}
				}
			}
			if reason != tc.wantReason || answer != tc.wantAnswr {
				t.Errorf("%d reasoning and %d answer chunks, want %d and %d", reason, answer, tc.wantReason, tc.wantAnswr)
			}
			if usage == nil || num(t, usage, "completion_tokens") != tc.maxTokens {
				t.Fatalf("usage %v, want %d completion tokens", usage, tc.maxTokens)
			}
			d, ok := usage["completion_tokens_details"].(map[string]any)
			if tc.wantReason == 0 {
				if ok {
					t.Errorf("completion_tokens_details %v from a model that does not reason", d)
				}
				return
			}
			if !ok || num(t, d, "reasoning_tokens") != tc.wantReason {
				t.Errorf("completion_tokens_details %v, want reasoning_tokens %d", d, tc.wantReason)
			}

			// Not streamed: the same split, as message.reasoning_content.
			m := ts.postOK(t, "/v1/chat/completions", chatBody("hello there", map[string]any{"max_tokens": tc.maxTokens, "ignore_eos": true}))
			if r, _ := dig(t, m, "choices.0.message").(map[string]any)["reasoning_content"].(string); r == "" {
				t.Error("no message.reasoning_content")
			}
			if num(t, m, "usage.completion_tokens_details.reasoning_tokens") != tc.wantReason {
				t.Errorf("usage %v", m["usage"])
			}
		})
	}
}

// The Messages API: event order, content blocks per channel, usage.
func TestMessagesStream(t *testing.T) {
	cfg := fastConfig()
	cfg.ReasoningTokens = 2
	ts := startServer(t, cfg)
	body := map[string]any{"model": "tollgate-sim", "max_tokens": 5, "stream": true, "system": "be brief",
		"messages": []map[string]any{{"role": "user", "content": []map[string]any{{"type": "text", "text": "hi"}}}}}
	status, raw := ts.do(t, "POST", "/v1/messages", body)
	if status != 200 {
		t.Fatalf("status %d: %s", status, raw)
	}
	var names, deltas []string
	var outTokens int
	for _, block := range strings.Split(strings.TrimSpace(string(raw)), "\n\n") {
		name, data, ok := strings.Cut(block, "\n")
		if !ok || !strings.HasPrefix(name, "event: ") || !strings.HasPrefix(data, "data: ") {
			t.Fatalf("event %q", block)
		}
		name = strings.TrimPrefix(name, "event: ")
		var m map[string]any
		if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &m); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if m["type"] != name {
			t.Errorf("event %s carries type %v", name, m["type"])
		}
		names = append(names, name)
		switch name {
		case "content_block_delta":
			deltas = append(deltas, str(t, m, "delta.type"))
		case "message_delta":
			outTokens = num(t, m, "usage.output_tokens")
			if str(t, m, "delta.stop_reason") != "max_tokens" {
				t.Errorf("stop reason %v", m["delta"])
			}
		case "message_start":
			if num(t, m, "message.usage.input_tokens") == 0 {
				t.Errorf("message_start usage %v", m)
			}
		}
	}
	want := "message_start ping content_block_start content_block_delta content_block_delta content_block_stop content_block_start content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	if got := strings.Join(deltas, " "); got != "thinking_delta thinking_delta text_delta text_delta text_delta" {
		t.Errorf("deltas %s", got)
	}
	if outTokens != 5 {
		t.Errorf("output_tokens %d, want 5", outTokens)
	}

	// A missing max_tokens is refused in the Messages API's error form.
	delete(body, "max_tokens")
	status, raw = ts.do(t, "POST", "/v1/messages", body)
	if m := decodeMap(t, raw); status != 400 || m["type"] != "error" || !strings.Contains(str(t, m, "error.message"), "max_tokens") {
		t.Errorf("status %d: %s", status, raw)
	}
}
