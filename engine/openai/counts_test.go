package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A count no server can mean must fail the request as a protocol error that
// names the field and the value, on every path a count enters by: streamed
// (byte scanner and encoding/json fallback) and non-streamed, usage and
// llama.cpp timings.
func TestBadCountsAreProtocolErrors(t *testing.T) {
	tests := []struct {
		name   string
		member string // a top-level member of the final chunk / the body
		field  string // what the message must name
		value  string // and the value it must quote
	}{
		{"negative prompt", `"usage":{"prompt_tokens":-5,"completion_tokens":2}`, "usage.prompt_tokens", "-5"},
		{"negative cached", `"usage":{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":-1}}`, "cached_tokens", "-1"},
		{"huge completion", `"usage":{"prompt_tokens":5,"completion_tokens":1e308}`, "usage.completion_tokens", "1e308"},
		{"long integer", `"usage":{"prompt_tokens":5,"completion_tokens":99999999999999999999}`, "usage.completion_tokens", "99999999999999999999"},
		{"fractional", `"usage":{"prompt_tokens":5.5,"completion_tokens":2}`, "usage.prompt_tokens", "5.5"},
		{"string count", `"usage":{"prompt_tokens":"5","completion_tokens":2}`, "usage.prompt_tokens", `"5"`},
		{"cached over prompt", `"usage":{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":9}}`, "cached_tokens 9 exceeds usage.prompt_tokens 5", "9"},
		{"timings negative prompt_n", `"timings":{"prompt_n":-3,"predicted_n":2,"cache_n":0}`, "timings.prompt_n", "-3"},
		{"timings fractional predicted_n", `"timings":{"prompt_n":3,"predicted_n":2.5}`, "timings.predicted_n", "2.5"},
		{"timings huge cache_n", `"timings":{"prompt_n":3,"predicted_n":2,"cache_n":1e300}`, "timings.cache_n", "1e300"},
		{"timings negative prompt_ms", `"timings":{"prompt_n":3,"predicted_n":2,"prompt_ms":-1.5}`, "timings.prompt_ms", "-1.5"},
		{"timings bad beside usage", `"usage":{"prompt_tokens":5,"completion_tokens":2},"timings":{"prompt_n":-3}`, "timings.prompt_n", "-3"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				_, err := countRequest(t, tt.member, stream)
				var e *Error
				if !errors.As(err, &e) || e.Class != ClassProtocol {
					t.Fatalf("err = %v, want a protocol error", err)
				}
				if !errors.Is(err, ErrBadCount) {
					t.Fatalf("err = %v, want ErrBadCount", err)
				}
				if !strings.Contains(e.Message, tt.field) || !strings.Contains(e.Message, tt.value) {
					t.Fatalf("message %q does not name %s and %s", e.Message, tt.field, tt.value)
				}
			})
		}
	}
}

// Counts a server may legitimately send still pass: integral floats, null,
// zero, and a cache hit of the whole prompt.
func TestGoodCountsPass(t *testing.T) {
	tests := []struct {
		name                 string
		member               string
		prompt, compl, cache int
	}{
		{"integral float", `"usage":{"prompt_tokens":7.0,"completion_tokens":2e0}`, 7, 2, -1},
		{"null cached", `"usage":{"prompt_tokens":7,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":null}}`, 7, 2, -1},
		{"all cached", `"usage":{"prompt_tokens":7,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":7}}`, 7, 2, 7},
		{"timings", `"timings":{"prompt_n":3,"predicted_n":2,"cache_n":4,"prompt_ms":1.5}`, 7, 2, 4},
	}
	for _, tt := range tests {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				res, err := countRequest(t, tt.member, stream)
				if err != nil {
					t.Fatal(err)
				}
				if *res.PromptTokens != tt.prompt || *res.CompletionTokens != tt.compl {
					t.Fatalf("prompt %d completion %d, want %d %d", *res.PromptTokens, *res.CompletionTokens, tt.prompt, tt.compl)
				}
				if (tt.cache < 0) != (res.CachedTokens == nil) || (res.CachedTokens != nil && *res.CachedTokens != tt.cache) {
					t.Fatalf("cached = %v, want %d", res.CachedTokens, tt.cache)
				}
			})
		}
	}
}

// countRequest sends one request to a server whose answer (two tokens) ends
// with member: in the last chunk when streamed, in the body when not.
func countRequest(t *testing.T, member string, stream bool) (Result, error) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		drain(r)
		if !stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],%s}`, member)
			return
		}
		sseHeaders(w)
		sendEvent(w, contentChunk("a"))
		sendEvent(w, contentChunk("b"))
		sendEvent(w, `{"choices":[],`+member+`}`)
		sendEvent(w, "[DONE]")
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, nil)
	req := chatReq(2)
	req.Stream = stream
	return c.Stream(context.Background(), req)
}
