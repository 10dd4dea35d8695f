package openai

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tollgate-dev/tollgate/engine/transport"
)

// TestAnswersThatAreNotAnswers: a 200 that carries no token, or cannot be
// read as what was asked, is a classified protocol error, never a success.
func TestAnswersThatAreNotAnswers(t *testing.T) {
	sse := func(w http.ResponseWriter, lines ...string) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, l := range lines {
			fmt.Fprintf(w, "data: %s\n\n", l)
		}
	}
	tests := []struct {
		name    string
		stream  bool
		handler http.HandlerFunc
		want    error // nil: success
	}{
		{name: "empty 200 stream", stream: true, want: ErrNoOutput,
			handler: func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Content-Type", "text/event-stream") }},
		{name: "empty 200 JSON", want: ErrNoOutput,
			handler: func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Content-Type", "application/json") }},
		{name: "HTML to a stream", stream: true, want: ErrBadBody,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, "<html>login</html>")
			}},
		{name: "HTML to a non-streamed request", want: ErrBadBody,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				fmt.Fprint(w, "<html>login</html>")
			}},
		{name: "no content type on a stream", stream: true, want: ErrBadBody,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = nil
				fmt.Fprint(w, "data: {}\n\n")
			}},
		{name: "JSON to a stream (stream: true ignored)", stream: true, want: ErrBadBody,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"choices":[{"message":{"content":"x"}}]}`)
			}},
		{name: "gzip not asked for", stream: true, want: ErrBadBody,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", "gzip")
				sse(w, contentChunk("x"), "[DONE]")
			}},
		{name: "usage but no token event", stream: true, want: ErrNoOutput,
			handler: func(w http.ResponseWriter, r *http.Request) {
				sse(w, `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
					`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3}}`, "[DONE]")
			}},
		{name: "only [DONE]", stream: true, want: ErrNoOutput,
			handler: func(w http.ResponseWriter, r *http.Request) { sse(w, "[DONE]") }},
		{name: "JSON with no choices", want: ErrNoOutput,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":0}}`)
			}},
		{name: "stream with a token", stream: true,
			handler: func(w http.ResponseWriter, r *http.Request) { sse(w, contentChunk("x"), "[DONE]") }},
		{name: "JSON with charset", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			fmt.Fprint(w, `{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`)
		}},
		{name: "vendor +json", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/vnd.example+json")
			fmt.Fprint(w, `{"choices":[{"text":"x","finish_reason":"length"}]}`)
		}},
		{name: "identity encoding", stream: true, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "identity")
			sse(w, contentChunk("x"), "[DONE]")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			c := newClient(t, srv.URL, nil)
			req := chatReq(4)
			req.Stream = tt.stream
			res, err := c.Stream(t.Context(), req)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("want success, got %v", err)
				}
				return
			}
			var oe *Error
			if !errors.As(err, &oe) || oe.Class != ClassProtocol || !errors.Is(err, tt.want) {
				t.Fatalf("error %v (result %+v), want a protocol error wrapping %v", err, res, tt.want)
			}
			if strings.Contains(oe.Message, testSecret) {
				t.Errorf("message leaks the key: %s", oe.Message)
			}
		})
	}
}

// TestRedirects: a 3xx is never followed by default and never a success;
// same_origin follows 307/308 on the same origin only, and no request ever
// reaches another origin. A chain still redirecting after the bound is the
// server's loop: a protocol error that says so.
func TestRedirects(t *testing.T) {
	var otherHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		(&paced{tokens: 1}).ServeHTTP(w, r)
	}))
	defer other.Close()
	var gets, auth atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		to := r.Header.Get("X-Redirect-To")
		code := 302
		fmt.Sscan(r.Header.Get("X-Redirect-Code"), &code)
		switch to {
		case "other":
			to = other.URL + "/v1/chat/completions"
		case "loop":
			to = "/v1/chat/completions"
		default:
			to = "http://user:hunter2@" + r.Host + "/v2/chat/completions?token=s3cret#frag"
		}
		http.Redirect(w, r, to, code)
	})
	mux.HandleFunc("/v2/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		if r.Header.Get("Authorization") != "" {
			auth.Add(1)
		}
		(&paced{tokens: 1}).ServeHTTP(w, r)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tests := []struct {
		name, policy, to string
		code             int
		ok               bool
		class            ErrorClass // ClassRedirect when ""
		message          string
	}{
		{name: "302 on POST, default", code: 302},
		{name: "307 same origin, default", code: 307},
		{name: "302 same origin, same_origin (would become a GET)", policy: transport.FollowSameOrigin, code: 302},
		{name: "303 same origin, same_origin", policy: transport.FollowSameOrigin, code: 303},
		{name: "307 same origin, same_origin", policy: transport.FollowSameOrigin, code: 307, ok: true},
		{name: "308 same origin, same_origin", policy: transport.FollowSameOrigin, code: 308, ok: true},
		{name: "307 to another origin, same_origin", policy: transport.FollowSameOrigin, code: 307, to: "other"},
		{name: "307 loop, same_origin", policy: transport.FollowSameOrigin, code: 307, to: "loop", class: ClassProtocol,
			message: "redirect loop: 6 redirects in a row without an answer (at most 5 are followed)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gets.Store(0)
			c := newClient(t, srv.URL, func(c *Config) {
				c.FollowRedirects = tt.policy
				c.Headers = map[string]string{"X-Redirect-To": tt.to, "X-Redirect-Code": fmt.Sprint(tt.code)}
			})
			res, err := c.Stream(t.Context(), chatReq(1))
			if tt.ok {
				if err != nil || auth.Load() == 0 {
					t.Fatalf("want a followed same-origin redirect with credentials, got %v (auth seen %d)", err, auth.Load())
				}
				return
			}
			class := cmp.Or(tt.class, ClassRedirect)
			var oe *Error
			if !errors.As(err, &oe) || oe.Class != class || oe.Status != tt.code || !strings.Contains(oe.Message, tt.message) {
				t.Fatalf("error %v (%+v), want class %s with status %d and %q", err, res, class, tt.code, tt.message)
			}
			for _, secret := range []string{"hunter2", "s3cret", "frag", testSecret} {
				if strings.Contains(oe.Message, secret) {
					t.Errorf("message %q shows %q", oe.Message, secret)
				}
			}
			if gets.Load() != 0 || otherHits.Load() != 0 {
				t.Errorf("followed anyway: %d GETs, %d requests to the other origin", gets.Load(), otherHits.Load())
			}
		})
	}
}
