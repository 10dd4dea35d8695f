package openai

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const (
	finishChunk = `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	roleChunk   = `{"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`
	emptyDelta  = `{"choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}`
)

func usageChunk(completion int) string {
	return fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":%d}}`, completion)
}

// wantErr checks err against a class and, when given, a sentinel and a
// piece of the message; class "" wants success.
func wantErr(t *testing.T, err error, class ErrorClass, is error, msg string) {
	t.Helper()
	if class == "" {
		if err != nil {
			t.Fatalf("want success, got %v", err)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) || e.Class != class {
		t.Fatalf("err = %v, want class %s", err, class)
	}
	if is != nil && !errors.Is(err, is) {
		t.Fatalf("err = %v, want it to wrap %v", err, is)
	}
	if !strings.Contains(e.Message, msg) {
		t.Fatalf("message %q lacks %q", e.Message, msg)
	}
}

// A stream is a success only when it says it finished: a finish_reason or
// [DONE] (either is enough); a clean close before both is truncated.
func TestStreamMustSayItFinished(t *testing.T) {
	tests := []struct {
		name   string
		events []string
		class  ErrorClass
		is     error
		msg    string
	}{
		{name: "one token then close", events: []string{contentChunk("a")},
			class: ClassTruncated, is: ErrTruncated, msg: "the stream ended after 1 events (1 token events) with neither a finish_reason nor [DONE]"},
		{name: "tokens and usage then close", events: []string{contentChunk("a"), contentChunk("b"), usageChunk(2)},
			class: ClassTruncated, is: ErrTruncated, msg: "neither a finish_reason nor [DONE]"},
		{name: "empty finish_reason then close", events: []string{contentChunk("a"), `{"choices":[{"index":0,"delta":{},"finish_reason":""}]}`},
			class: ClassTruncated, is: ErrTruncated, msg: "neither a finish_reason nor [DONE]"},
		{name: "role chunk only then close", events: []string{roleChunk},
			class: ClassTruncated, is: ErrTruncated, msg: "after 1 events (0 token events)"},
		{name: "finish_reason without [DONE]", events: []string{contentChunk("a"), finishChunk, usageChunk(1)}},
		{name: "finish_reason, no usage, no [DONE]", events: []string{contentChunk("a"), finishChunk}},
		{name: "[DONE] without finish_reason", events: []string{contentChunk("a"), usageChunk(1), "[DONE]"}},
		{name: "finish_reason and [DONE]", events: []string{contentChunk("a"), finishChunk, usageChunk(1), "[DONE]"}},
		{name: "error chunk is the server's error", events: []string{contentChunk("a"), `{"error":{"message":"out of memory","type":"server_error"}}`},
			class: ClassProtocol, msg: `server error event: out of memory (type "server_error"`},
		{name: "finished but no token is no output", events: []string{roleChunk, finishChunk, "[DONE]"},
			class: ClassProtocol, is: ErrNoOutput, msg: "without a token event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				drain(r)
				sseHeaders(w)
				for _, e := range tt.events {
					sendEvent(w, e)
				}
			}))
			defer srv.Close()
			_, err := newClient(t, srv.URL, nil).Stream(t.Context(), chatReq(0))
			wantErr(t, err, tt.class, tt.is, tt.msg)
			if tt.class == ClassProtocol && tt.is == nil {
				var se *StreamError
				if !errors.As(err, &se) {
					t.Fatalf("err = %v, want a *StreamError inside", err)
				}
			}
		})
	}
}

// The same rule for a whole answer: a body cut inside its JSON, or one
// whose choices carry no finish_reason, is truncated.
func TestWholeAnswerMustSayItFinished(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		class ErrorClass
		msg   string
	}{
		{name: "cut inside the JSON", body: `{"choices":[{"message":{"content":"hel`,
			class: ClassTruncated, msg: `the body ended after 38 bytes inside its JSON (it ends "{\"choices\":[{\"message\":{\"content\":\"hel")`},
		{name: "no finish_reason", body: `{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`,
			class: ClassTruncated, msg: "the answer's 1 choices carry no finish_reason"},
		{name: "null finish_reason", body: `{"choices":[{"message":{"content":"hi"},"finish_reason":null}]}`,
			class: ClassTruncated, msg: "carry no finish_reason"},
		{name: "malformed, not cut", body: `{"choices":[}`, class: ClassProtocol, msg: "decode response"},
		{name: "finished", body: `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				drain(r)
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, tt.body)
				// Chunked, ended cleanly: the cut is the body's, not the connection's.
				w.(http.Flusher).Flush()
			}))
			defer srv.Close()
			req := chatReq(4)
			req.Stream = false
			_, err := newClient(t, srv.URL, nil).Stream(t.Context(), req)
			is := error(nil)
			if tt.class == ClassTruncated {
				is = ErrTruncated
			}
			wantErr(t, err, tt.class, is, tt.msg)
		})
	}
}

// After the first token the idle clock runs from the last token event:
// whatever else the server sends (empty deltas, comments, role-only or
// usage chunks) does not keep a stalled generation alive.
func TestIdleTimeoutCountsOnlyTokens(t *testing.T) {
	const idle = 300 * time.Millisecond
	tests := []struct {
		name  string
		noise string // written every 5 ms between tokens
		gap   time.Duration
		// tokens the server sends (4 unless set)
		tokens int
		class  ErrorClass
		msg    string
	}{
		{name: "empty deltas", noise: "data: " + emptyDelta + "\n\n", gap: 3 * time.Second, class: ClassTimeoutIdle,
			msg: "no token event for 300ms after the last one ("},
		{name: "comments", noise: ": keep-alive\n\n", gap: 3 * time.Second, class: ClassTimeoutIdle, msg: "comments since it)"},
		{name: "role-only chunks", noise: "data: " + roleChunk + "\n\n", gap: 3 * time.Second, class: ClassTimeoutIdle, msg: "no token event for 300ms"},
		{name: "usage chunks", noise: "data: " + usageChunk(1) + "\n\n", gap: 3 * time.Second, class: ClassTimeoutIdle, msg: "no token event for 300ms"},
		// Neighbours: tokens closer than the timeout pass, noise or not,
		// however long the whole stream takes (600 ms, twice the timeout).
		// Each gap is a sixth of it, so a busy machine that wakes the
		// server late does not stretch one past it.
		{name: "tokens within the timeout, with noise", noise: "data: " + emptyDelta + "\n\n", gap: 50 * time.Millisecond, tokens: 12},
		{name: "tokens within the timeout", gap: 50 * time.Millisecond, tokens: 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				drain(r)
				sseHeaders(w)
				for i := range max(tt.tokens, 4) {
					sendEvent(w, contentChunk(fmt.Sprint(i)))
					for end := time.Now().Add(tt.gap); time.Now().Before(end); {
						if tt.noise != "" {
							fmt.Fprint(w, tt.noise)
							w.(http.Flusher).Flush()
						}
						if !sleepCtx(r, 5*time.Millisecond) {
							return
						}
					}
				}
				sendEvent(w, finishChunk)
				sendEvent(w, "[DONE]")
			}))
			defer srv.Close()
			c := newClient(t, srv.URL, func(c *Config) { c.IdleTimeout = idle })
			start := time.Now()
			res, err := c.Stream(t.Context(), chatReq(0))
			wantErr(t, err, tt.class, nil, tt.msg)
			if tt.class == "" {
				if want := max(tt.tokens, 4); res.SSETokenEvents != want {
					t.Fatalf("%d token events, want %d", res.SSETokenEvents, want)
				}
				return
			}
			// Timers fire late on a busy machine, never early: a bound
			// from below cannot flip. The class above says it was the
			// idle timeout that ended it, not the server.
			if el := time.Since(start); el < idle {
				t.Fatalf("timed out after %v, before the idle timeout %v", el, idle)
			}
			if res.SSETokenEvents != 1 {
				t.Fatalf("%d token events before the timeout, want 1", res.SSETokenEvents)
			}
		})
	}
}

// A completion count the stream contradicts is a bad count (a protocol
// error, as every impossible count is), never a rate.
func TestImplausibleUsageIsABadCount(t *testing.T) {
	tests := []struct {
		name      string
		maxTokens int
		usage     string
		msg       string // "" : success
	}{
		{name: "1e9 for 8 events", usage: usageChunk(1e9),
			msg: "the server counts 1000000000 completion tokens (usage) for 8 streamed token events (at most 64 per event + 64 is plausible)"},
		{name: "just past the bound", usage: usageChunk(64*8 + 64 + 1), msg: "for 8 streamed token events"},
		{name: "at the bound", usage: usageChunk(64*8 + 64)},
		{name: "as streamed", usage: usageChunk(8)},
		{name: "past max_tokens", maxTokens: 8, usage: usageChunk(1e9),
			msg: "the server counts 1000000000 completion tokens (usage) for max_tokens 8 (at most 24 is plausible)"},
		{name: "within max_tokens' slack", maxTokens: 8, usage: usageChunk(24)},
		{name: "hidden reasoning is not held against the events",
			usage: `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2000,"completion_tokens_details":{"reasoning_tokens":1990}}}`},
		{name: "timings too", usage: `{"choices":[],"timings":{"prompt_n":5,"predicted_n":100000}}`,
			msg: "100000 completion tokens (timings) for 8 streamed token events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				drain(r)
				sseHeaders(w)
				for i := range 8 {
					sendEvent(w, contentChunk(fmt.Sprint(i)))
				}
				sendEvent(w, finishChunk)
				sendEvent(w, tt.usage)
				sendEvent(w, "[DONE]")
			}))
			defer srv.Close()
			_, err := newClient(t, srv.URL, nil).Stream(t.Context(), chatReq(tt.maxTokens))
			if tt.msg == "" {
				wantErr(t, err, "", nil, "")
				return
			}
			wantErr(t, err, ClassProtocol, ErrBadCount, tt.msg)
		})
	}
	t.Run("whole answer past max_tokens", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			drain(r)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"choices":[{"message":{"content":"hi"},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":1000000}}`)
		}))
		defer srv.Close()
		req := chatReq(4)
		req.Stream = false
		_, err := newClient(t, srv.URL, nil).Stream(t.Context(), req)
		wantErr(t, err, ClassProtocol, ErrBadCount, "1000000 completion tokens (usage) for max_tokens 4")
	})
}
