package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/sim"
	"github.com/tollgate-dev/tollgate/engine/transport"
)

const testSecret = "sk-ant-test-SECRET-0123456789"

func ev(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

const (
	msgStart   = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":10,"cache_read_input_tokens":4,"output_tokens":1}}}`
	textStart  = `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`
	thinkStart = `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`
	blockStop  = `{"type":"content_block_stop","index":0}`
	textStop   = `{"type":"content_block_stop","index":1}`
	msgStop    = `{"type":"message_stop"}`
	ping       = `{"type": "ping"}`
)

func textDelta(s string) string {
	return `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"` + s + `"}}`
}
func thinkDelta(s string) string {
	return `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"` + s + `"}}`
}
func msgDelta(out int) string {
	return `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":` + itoa(out) + `}}`
}
func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// scripted serves one stream, written in the given pieces with a flush
// (and a short pause, so the pieces arrive apart) after each; the request's
// headers go to seen (buffered) before the answer starts.
func scripted(t *testing.T, pieces []string, seen chan<- http.Header) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" {
			http.NotFound(w, r)
			return
		}
		select {
		case seen <- r.Header.Clone():
		default:
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for _, p := range pieces {
			_, _ = w.Write([]byte(p))
			w.(http.Flusher).Flush()
			time.Sleep(2 * time.Millisecond)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newClient(t *testing.T, base string) *Client {
	t.Helper()
	c, err := New(transport.Config{BaseURL: base, APIKey: testSecret, TotalTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func stream(t *testing.T, c *Client, maxTokens int) measure.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, _ := c.Stream(ctx, measure.Request{Model: "m", Messages: []measure.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}, MaxTokens: maxTokens, Stream: true})
	return res
}

// splitEvery cuts s into pieces of n bytes: events split mid-line and
// mid-JSON, as a proxy may deliver them.
func splitEvery(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

func TestStreamEvents(t *testing.T) {
	full := ev("message_start", msgStart) + ev("ping", ping) +
		ev("content_block_start", thinkStart) + ev("content_block_delta", thinkDelta("hmm")) + ev("content_block_delta", thinkDelta(" so")) +
		ev("content_block_stop", blockStop) +
		ev("content_block_start", textStart) + ev("content_block_delta", textDelta("Hel")) + ev("content_block_delta", textDelta("lo")) +
		ev("content_block_delta", textDelta("!")) + ev("content_block_stop", textStop) +
		ev("message_delta", msgDelta(5)) + ev("message_stop", msgStop)
	tests := []struct {
		name   string
		pieces []string
		// want
		class                      measure.ErrorClass
		errHas                     string
		events, completion, reason int
		source                     string
		ttfo                       bool
		prompt, cached             int
	}{
		{name: "whole events", pieces: []string{full}, events: 5, completion: 5, reason: 2, source: measure.SourceUsage, ttfo: true, prompt: 14, cached: 4},
		{name: "split every 7 bytes", pieces: splitEvery(full, 7), events: 5, completion: 5, reason: 2, source: measure.SourceUsage, ttfo: true, prompt: 14, cached: 4},
		{name: "CRLF and data-only events", pieces: []string{strings.ReplaceAll(
			"data: "+msgStart+"\n\n: keep-alive\n\ndata: "+textStart+"\n\ndata: "+textDelta("a")+"\n\ndata: "+textDelta("b")+"\n\ndata: "+textStop+"\n\ndata: "+msgDelta(2)+"\n\ndata: "+msgStop+"\n\n", "\n", "\r\n")},
			events: 2, completion: 2, source: measure.SourceUsage, ttfo: true, prompt: 14, cached: 4},
		{name: "pings only between tokens", pieces: []string{ev("message_start", msgStart), ev("ping", ping), ev("ping", ping),
			ev("content_block_start", textStart) + ev("content_block_delta", textDelta("x")), ev("ping", ping), ev("content_block_delta", textDelta("y")),
			ev("ping", ping) + ev("content_block_stop", textStop) + ev("ping", ping) + ev("message_delta", msgDelta(2)) + ev("ping", ping) + ev("message_stop", msgStop)},
			events: 2, completion: 2, source: measure.SourceUsage, ttfo: true, prompt: 14, cached: 4},
		{name: "missing usage counts events", pieces: []string{ev("message_start", `{"type":"message_start","message":{"id":"m"}}`),
			ev("content_block_start", textStart), ev("content_block_delta", textDelta("a")), ev("content_block_delta", textDelta("b")),
			ev("content_block_delta", textDelta("c")), ev("content_block_stop", textStop), ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`), ev("message_stop", msgStop)},
			events: 3, completion: 3, source: measure.SourceSSEEvents, ttfo: true, prompt: -1, cached: -1},
		{name: "error event mid-stream", pieces: []string{ev("message_start", msgStart), ev("content_block_start", textStart), ev("content_block_delta", textDelta("a")),
			ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)},
			class: measure.ClassProtocol, errHas: "overloaded_error"},
		{name: "tool use is a token, not an answer", pieces: []string{ev("message_start", msgStart),
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"get","input":{}}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"q\": 1}"}}`),
			ev("content_block_stop", blockStop), ev("message_delta", msgDelta(4)), ev("message_stop", msgStop)},
			events: 2, completion: 4, source: measure.SourceUsage, prompt: 14, cached: 4},
		{name: "usage and pings without a token", pieces: []string{ev("message_start", msgStart), ev("ping", ping), ev("message_delta", msgDelta(0)), ev("message_stop", msgStop)},
			class: measure.ClassProtocol, errHas: "no output"},
		{name: "not JSON", pieces: []string{ev("message_start", msgStart), ev("content_block_delta", `{"type":`)},
			class: measure.ClassProtocol, errHas: "decode event"},
		{name: "negative count", pieces: []string{ev("message_start", msgStart), ev("content_block_start", textStart), ev("content_block_delta", textDelta("a")),
			ev("content_block_stop", textStop), ev("message_delta", `{"type":"message_delta","usage":{"output_tokens":-3}}`)},
			class: measure.ClassProtocol, errHas: "output_tokens is -3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seen := make(chan http.Header, 1)
			srv := scripted(t, tc.pieces, seen)
			res := stream(t, newClient(t, srv.URL), 16)
			hdr := <-seen
			if hdr.Get("X-Api-Key") != testSecret || hdr.Get("Anthropic-Version") != Version || hdr.Get("Authorization") != "" {
				t.Errorf("headers: x-api-key %q, anthropic-version %q, authorization %q", hdr.Get("X-Api-Key"), hdr.Get("Anthropic-Version"), hdr.Get("Authorization"))
			}
			if tc.class != "" {
				if res.Err == nil || res.Err.Class != tc.class || !strings.Contains(res.Err.Error(), tc.errHas) {
					t.Fatalf("error %v, want class %s with %q", res.Err, tc.class, tc.errHas)
				}
				if !strings.HasPrefix(res.Err.Error(), "anthropic: ") {
					t.Errorf("error %q does not name the protocol", res.Err)
				}
				return
			}
			if res.Err != nil {
				t.Fatalf("error: %v", res.Err)
			}
			m := res.Metrics
			if m.SSETokenEvents != tc.events || *m.CompletionTokens != tc.completion || *m.ReasoningTokens != tc.reason || m.TokenCountSource != tc.source {
				t.Errorf("events %d completion %d reasoning %d source %s; want %d %d %d %s", m.SSETokenEvents, *m.CompletionTokens, *m.ReasoningTokens, m.TokenCountSource,
					tc.events, tc.completion, tc.reason, tc.source)
			}
			if (m.TTFOMS != nil) != tc.ttfo {
				t.Errorf("ttfo_ms %v, want present %v", m.TTFOMS, tc.ttfo)
			}
			if m.TTFTMS == nil || (m.TTFOMS != nil && *m.TTFOMS < *m.TTFTMS) {
				t.Errorf("ttft %v ttfo %v: the answer cannot come before the first token", m.TTFTMS, m.TTFOMS)
			}
			if tc.reason >= 2 && len(tc.pieces) > 1 && (m.TTFOMS == nil || *m.TTFOMS <= *m.TTFTMS || m.ReasoningTokensPerS == nil) {
				t.Errorf("reasoning first: ttft %v ttfo %v reasoning rate %v", *m.TTFTMS, m.TTFOMS, m.ReasoningTokensPerS)
			}
			if got := deref(m.PromptTokens); got != tc.prompt {
				t.Errorf("prompt tokens %d, want %d", got, tc.prompt)
			}
			if got := deref(m.CachedTokens); got != tc.cached {
				t.Errorf("cached tokens %d, want %d", got, tc.cached)
			}
			if len(m.ITLMS) != tc.events-1 {
				t.Errorf("%d gaps for %d token events", len(m.ITLMS), tc.events)
			}
			if !m.DoneSeen {
				t.Error("message_stop not seen")
			}
		})
	}
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// The key never reaches a message, whatever the server echoes.
func TestKeyRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + r.Header.Get("X-Api-Key") + `"}}`))
	}))
	defer srv.Close()
	res := stream(t, newClient(t, srv.URL), 4)
	if res.Err == nil || res.Err.Class != measure.ClassHTTPStatus || res.Err.Status != 401 {
		t.Fatalf("error %v, want http_status 401", res.Err)
	}
	if strings.Contains(res.Err.Error(), testSecret) {
		t.Fatalf("the key leaked: %s", res.Err)
	}
}

func startSim(t *testing.T, cfg sim.Config) string {
	t.Helper()
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url, err := s.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return url
}

// Against the embedded simulator's Messages endpoint, streamed and not,
// with and without a reasoning channel.
func TestSimulator(t *testing.T) {
	tests := []struct {
		name      string
		reasoning int
		stream    bool
		maxTokens int
	}{
		{name: "stream", stream: true, maxTokens: 12},
		{name: "stream reasoning", reasoning: 5, stream: true, maxTokens: 12},
		{name: "stream all reasoning", reasoning: 20, stream: true, maxTokens: 6},
		{name: "not streamed", maxTokens: 7},
		{name: "not streamed reasoning", reasoning: 3, maxTokens: 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url := startSim(t, sim.Config{APIKey: testSecret, ReasoningTokens: tc.reasoning, DecodeStep: 2 * time.Millisecond})
			c := newClient(t, url)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := c.Stream(ctx, measure.Request{Messages: []measure.Message{{Role: "user", Content: "one two three"}}, MaxTokens: tc.maxTokens, Stream: tc.stream})
			if err != nil {
				t.Fatal(err)
			}
			m := res.Metrics
			reasoning := min(tc.reasoning, tc.maxTokens)
			if *m.CompletionTokens != tc.maxTokens || m.TokenCountSource != measure.SourceUsage || m.FinishReason != "max_tokens" {
				t.Errorf("completion %d (%s, %s), want %d from usage, max_tokens", *m.CompletionTokens, m.TokenCountSource, m.FinishReason, tc.maxTokens)
			}
			// The Messages API counts no thinking tokens: a stream's are its
			// thinking deltas, a whole message's are unknown.
			if !tc.stream && reasoning > 0 {
				if m.ReasoningTokens != nil {
					t.Errorf("reasoning tokens %d from a whole message", *m.ReasoningTokens)
				}
			} else if m.ReasoningTokens == nil || *m.ReasoningTokens != reasoning {
				t.Errorf("reasoning tokens %v, want %d", m.ReasoningTokens, reasoning)
			}
			if m.PromptTokens == nil || *m.PromptTokens == 0 {
				t.Errorf("prompt tokens %v", m.PromptTokens)
			}
			if (reasoning > 0) != (m.ReasoningTextBytes > 0) || (reasoning < tc.maxTokens) != (m.OutputTextBytes > 0) {
				t.Errorf("reasoning bytes %d, answer bytes %d", m.ReasoningTextBytes, m.OutputTextBytes)
			}
			if !tc.stream {
				return
			}
			if m.SSETokenEvents != tc.maxTokens {
				t.Errorf("%d token events, want %d", m.SSETokenEvents, tc.maxTokens)
			}
			switch {
			case reasoning == tc.maxTokens:
				if m.TTFOMS != nil {
					t.Errorf("ttfo %v for an answer that is all reasoning", *m.TTFOMS)
				}
			case reasoning > 0:
				if m.TTFOMS == nil || *m.TTFOMS <= *m.TTFTMS {
					t.Errorf("ttfo %v, ttft %v: the answer comes after %d reasoning tokens", m.TTFOMS, *m.TTFTMS, reasoning)
				}
			default:
				if m.TTFOMS == nil || *m.TTFOMS != *m.TTFTMS {
					t.Errorf("ttfo %v, ttft %v: without reasoning they are the same event", m.TTFOMS, *m.TTFTMS)
				}
			}
		})
	}
}

// Calibration counts with POST /v1/messages/count_tokens where the server
// has it, and falls back to a one-token probe where it has neither that nor
// /tokenize.
func TestCalibrate(t *testing.T) {
	url := startSim(t, sim.Config{APIKey: testSecret})
	c := newClient(t, url)
	cal, err := c.Calibrate(context.Background(), 200, 1, measure.CalibrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cal.Method != transport.MethodCountTokens || cal.Tokens < 196 || cal.Tokens > 204 {
		t.Errorf("calibration %+v, want about 200 tokens by count_tokens", cal)
	}

	// A server with /v1/messages only: the probe's usage counts.
	probe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" {
			http.NotFound(w, r)
			return
		}
		var body struct {
			Stream bool `json:"stream"`
		}
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &body)
		input := itoa(len(data) / 6)
		if !body.Stream {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"type":"message","content":[{"type":"text","text":"x"}],"stop_reason":"max_tokens","usage":{"input_tokens":` + input + `,"output_tokens":1}}`))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(ev("message_start", `{"type":"message_start","message":{"usage":{"input_tokens":`+input+`,"output_tokens":1}}}`) +
			ev("content_block_start", textStart) + ev("content_block_delta", textDelta("x")) + ev("content_block_stop", textStop) + ev("message_delta", msgDelta(1)) + ev("message_stop", msgStop)))
	}))
	defer probe.Close()
	cal, err = newClient(t, probe.URL).Calibrate(context.Background(), 100, 1, measure.CalibrateOptions{})
	if cal.Method != transport.MethodProbe {
		t.Errorf("calibration %+v (%v), want the probe", cal, err)
	}
}

func TestCompletionsRefused(t *testing.T) {
	c := newClient(t, "http://127.0.0.1:1")
	_, err := c.Stream(context.Background(), measure.Request{Endpoint: measure.EndpointCompletions, Prompt: "x", Stream: true})
	if !errors.Is(err, ErrEndpoint) {
		t.Fatalf("error %v, want ErrEndpoint", err)
	}
}
