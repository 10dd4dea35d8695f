package openai

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const llamaTimings = `"timings":{"cache_n":10,"prompt_n":19,"prompt_ms":141.722,"prompt_per_token_ms":7.459,"prompt_per_second":134.065,"predicted_n":3,"predicted_ms":4.034,"predicted_per_token_ms":2.017,"predicted_per_second":495.785}`

// TestServerTimingsKept: llama.cpp's timings reach the result under their
// own names, streamed (fast and fallback parsers) and not, and never change
// the client's figures.
func TestServerTimingsKept(t *testing.T) {
	tests := []struct {
		name   string
		stream bool
		last   string // the final chunk, carrying the timings
	}{
		{name: "stream", stream: true, last: `{"choices":[],"usage":{"prompt_tokens":29,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":10}},` + llamaTimings + `}`},
		// Whitespace and a float the fast scanner does not take send the
		// chunk through encoding/json.
		{name: "stream, fallback parser", stream: true, last: `{ "choices" : [ ], "usage": {"prompt_tokens": 29, "completion_tokens": 3.0}, ` + llamaTimings + ` }`},
		{name: "non-stream", last: `{"choices":[{"message":{"content":"a b c"},"finish_reason":"length"}],"usage":{"prompt_tokens":29,"completion_tokens":3},` + llamaTimings + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !tt.stream {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, tt.last)
					return
				}
				sseHeaders(w)
				for _, tok := range []string{"a", " b", " c"} {
					sendEvent(w, contentChunk(tok))
				}
				sendEvent(w, tt.last)
				sendEvent(w, "[DONE]")
			}))
			defer srv.Close()
			c := newClient(t, srv.URL, nil)
			req := chatReq(3)
			req.Stream = tt.stream
			res, err := c.Stream(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Server
			if s == nil || s.Source != "llama.cpp timings" || s.PromptMs == nil || *s.PromptMs != 141.722 ||
				s.PredictedPerSecond == nil || *s.PredictedPerSecond != 495.785 || s.CacheN == nil || *s.CacheN != 10 {
				t.Fatalf("server timings %+v", s)
			}
			if *res.CompletionTokens != 3 {
				t.Errorf("completion tokens %d: the client's own count must stay", *res.CompletionTokens)
			}
		})
	}
}

// TestConnectAndWriteTimes: a fresh connection has a connect time, a reused
// one 0; every request has a write time. An IP literal is dialled in the
// request's goroutine, a name through net.Dialer: both report the connect.
func TestConnectAndWriteTimes(t *testing.T) {
	srv := httptest.NewServer(&paced{tokens: 1})
	defer srv.Close()
	for _, tt := range []struct{ name, base string }{
		{"an IP literal", srv.URL},
		{"a name", strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, tt.base, nil)
			first, err := c.Stream(t.Context(), chatReq(1))
			if err != nil {
				t.Fatal(err)
			}
			second, err := c.Stream(t.Context(), chatReq(1))
			if err != nil {
				t.Fatal(err)
			}
			if first.ConnectMS == nil || *first.ConnectMS <= 0 || first.RequestWriteMS == nil {
				t.Errorf("first request: connect %v write %v, want a connect time", first.ConnectMS, first.RequestWriteMS)
			}
			if second.ConnectMS == nil || *second.ConnectMS != 0 || second.RequestWriteMS == nil {
				t.Errorf("reused connection: connect %v write %v, want connect 0", second.ConnectMS, second.RequestWriteMS)
			}
		})
	}
}

// TestServerTimingsOfOneToken: llama.cpp sends predicted_per_second 0 for a
// 1-token answer; that is no rate, so it is absent, never a 0 a gate reads.
func TestServerTimingsOfOneToken(t *testing.T) {
	got, _ := serverTimings([]byte(`{"cache_n":0,"prompt_n":0,"prompt_ms":0.5,"prompt_per_second":0,"predicted_n":1,"predicted_ms":0.001,"predicted_per_token_ms":0.001,"predicted_per_second":0.0}`))
	if got == nil || got.PredictedPerSecond != nil || got.PredictedPerTokenMs != nil || got.PromptPerSecond != nil {
		t.Fatalf("%+v: rates over one token or no prompt must be absent", got)
	}
	if got.PromptMs == nil || got.PredictedMs == nil || *got.PredictedMs != 0.001 {
		t.Errorf("%+v: the times themselves are kept", got)
	}
}
