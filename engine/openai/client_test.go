package openai

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/transport/sse"
)

const testSecret = "sk-test-SECRET-0123456789"

// sleepCtx waits d unless the request goes away first.
func sleepCtx(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

func sendEvent(w http.ResponseWriter, data string) {
	fmt.Fprintf(w, "data: %s\n\n", data)
	w.(http.Flusher).Flush()
}

func contentChunk(s string) string {
	b, _ := json.Marshal(s)
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}`
}

// paced streams tokens: role chunk at once, first token after firstDelay,
// then one token every gap; tokens < 0 streams until the client leaves.
type paced struct {
	firstDelay, gap time.Duration
	tokens          int
	noDone          bool

	mu      sync.Mutex
	body    map[string]any
	headers http.Header
	path    string
}

func (p *paced) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	p.mu.Lock()
	p.body, p.headers, p.path = body, r.Header.Clone(), r.URL.Path
	p.mu.Unlock()
	sseHeaders(w)
	fmt.Fprint(w, ": keep-alive\n\n")
	sendEvent(w, `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
	if !sleepCtx(r, p.firstDelay) {
		return
	}
	for i := 0; p.tokens < 0 || i < p.tokens; i++ {
		if i > 0 && !sleepCtx(r, p.gap) {
			return
		}
		sendEvent(w, contentChunk(fmt.Sprintf(" t%d", i)))
	}
	sendEvent(w, `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`)
	sendEvent(w, fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":%d,"prompt_tokens_details":{"cached_tokens":2}}}`, p.tokens))
	if !p.noDone {
		sendEvent(w, "[DONE]")
	}
}

func newClient(t *testing.T, url string, mod func(*Config)) *Client {
	t.Helper()
	cfg := Config{BaseURL: url, APIKey: testSecret}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func chatReq(maxTokens int) Request {
	return Request{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}}, MaxTokens: maxTokens, Stream: true}
}

func TestRequestBodyDefaultsAndMerge(t *testing.T) {
	tests := []struct {
		name     string
		cfgExtra map[string]any
		reqExtra map[string]any
		req      Request
		want     string // JSON of the expected body
	}{
		{
			name: "defaults",
			req:  chatReq(5),
			want: `{"chat_template_kwargs":{"enable_thinking":false},"ignore_eos":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}],"model":"m",
				"stream":true,"stream_options":{"include_usage":true},"temperature":0,"thinking":{"type":"disabled"},"top_p":1}`,
		},
		{
			name:     "override, deep merge, null removes",
			cfgExtra: map[string]any{"ignore_eos": nil, "temperature": 0.7, "chat_template_kwargs": map[string]any{"foo": 1}, "thinking": nil},
			reqExtra: map[string]any{"top_p": 0.9, "stream_options": map[string]any{"continuous_usage_stats": true}},
			req:      chatReq(0),
			want: `{"chat_template_kwargs":{"enable_thinking":false,"foo":1},"messages":[{"role":"user","content":"hi"}],"model":"m",
				"stream":true,"stream_options":{"continuous_usage_stats":true,"include_usage":true},"temperature":0.7,"top_p":0.9}`,
		},
		{
			name:     "deep merge into every nested default",
			reqExtra: map[string]any{"thinking": map[string]any{"budget_tokens": 5}, "chat_template_kwargs": map[string]any{"x": true}, "stream_options": map[string]any{"y": 1}},
			req:      chatReq(5),
			want: `{"chat_template_kwargs":{"enable_thinking":false,"x":true},"ignore_eos":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}],"model":"m",
				"stream":true,"stream_options":{"include_usage":true,"y":1},"temperature":0,"thinking":{"budget_tokens":5,"type":"disabled"},"top_p":1}`,
		},
		// The nested defaults are shared by every body (thinkingOff and
		// the others): a merge that wrote into them would show here.
		{
			name: "defaults again, after the merges above",
			req:  chatReq(5),
			want: `{"chat_template_kwargs":{"enable_thinking":false},"ignore_eos":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}],"model":"m",
				"stream":true,"stream_options":{"include_usage":true},"temperature":0,"thinking":{"type":"disabled"},"top_p":1}`,
		},
		{
			name: "non-streamed completions drop stream_options",
			req:  Request{Endpoint: EndpointCompletions, Model: "m", Prompt: "p", MaxTokens: 1},
			want: `{"chat_template_kwargs":{"enable_thinking":false},"ignore_eos":true,"max_tokens":1,"model":"m","prompt":"p",
				"stream":false,"temperature":0,"thinking":{"type":"disabled"},"top_p":1}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.ExtraBody = tt.reqExtra
			_, body, err := wire{}.Body(tt.req, tt.cfgExtra)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			_ = json.Unmarshal(body, &got)
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Fatalf("body\n got %s\nwant %s", g, w)
			}
		})
	}
	// The config's ExtraBody must not be mutated by merging.
	extra := map[string]any{"chat_template_kwargs": map[string]any{"foo": 1}}
	_, _, _ = wire{}.Body(chatReq(1), extra)
	if len(extra["chat_template_kwargs"].(map[string]any)) != 1 {
		t.Fatal("ExtraBody was mutated")
	}
}

func TestCompletionsEndpointAndNoDone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			http.NotFound(w, r)
			return
		}
		sseHeaders(w)
		for i := range 3 {
			sendEvent(w, fmt.Sprintf(`{"choices":[{"index":0,"text":"w%d","finish_reason":null}]}`, i))
			time.Sleep(2 * time.Millisecond)
		}
		// llama.cpp: usage in the finish chunk; this server never sends [DONE].
		sendEvent(w, `{"choices":[{"index":0,"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":3}}`)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, nil)
	res, err := c.Stream(context.Background(), Request{Endpoint: EndpointCompletions, Model: "m", Prompt: "x", Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.DoneSeen || *res.CompletionTokens != 3 || res.OutputTextBytes != 6 || res.TTFTMS == nil || res.FinishReason != "length" {
		t.Fatalf("result wrong: %+v", res)
	}
}

func TestNonStreamed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":11,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":8}}}`)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, nil)
	req := chatReq(2)
	req.Stream = false
	res, err := c.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.TTFTMS != nil || res.TPOTMS != nil || res.E2EMS < 20 || *res.PromptTokens != 11 || *res.CompletionTokens != 2 ||
		*res.CachedTokens != 8 || res.OutputTextBytes != 5 || res.FinishReason != "stop" || res.TokenCountSource != SourceUsage {
		t.Fatalf("result wrong: %+v", res)
	}
}

func TestFailuresClassified(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + closed.Addr().String()
	closed.Close()

	tests := []struct {
		name    string
		handler http.Handler
		url     string // instead of a server
		cfg     func(*Config)
		ctx     func() (context.Context, context.CancelFunc)
		class   ErrorClass
		ttft    bool
	}{
		{
			name:    "first token: role chunk arrives but no token",
			handler: &paced{firstDelay: 2 * time.Second, tokens: 3},
			cfg:     func(c *Config) { c.FirstTokenTimeout = 100 * time.Millisecond; c.IdleTimeout = 20 * time.Millisecond },
			class:   ClassTimeoutFirstToken,
		},
		{
			name: "first token: headers never come",
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				drain(r) // lets the server notice the client leaving
				sleepCtx(r, 2*time.Second)
			}),
			cfg:   func(c *Config) { c.FirstTokenTimeout = 100 * time.Millisecond },
			class: ClassTimeoutFirstToken,
		},
		{
			name:    "idle after the first token",
			handler: &paced{gap: 2 * time.Second, tokens: 3},
			cfg:     func(c *Config) { c.FirstTokenTimeout = time.Second; c.IdleTimeout = 100 * time.Millisecond },
			class:   ClassTimeoutIdle,
			ttft:    true,
		},
		{
			name:    "total",
			handler: &paced{gap: 10 * time.Millisecond, tokens: -1},
			cfg:     func(c *Config) { c.TotalTimeout = 150 * time.Millisecond; c.IdleTimeout = time.Second },
			class:   ClassTimeoutTotal,
			ttft:    true,
		},
		{
			name:  "connect refused",
			url:   refusedURL,
			class: ClassConnect,
		},
		{
			name:    "caller canceled",
			handler: &paced{gap: 10 * time.Millisecond, tokens: -1},
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 100*time.Millisecond)
			},
			class: ClassCanceled,
			ttft:  true,
		},
		{
			name: "connection reset mid-stream",
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				sendEvent(w, contentChunk("a"))
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
			}),
			class: ClassReset,
			ttft:  true,
		},
		{
			name: "error event inside a 200 stream",
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				sendEvent(w, contentChunk("a"))
				sendEvent(w, `{"error":{"message":"engine died","code":500}}`)
			}),
			class: ClassProtocol,
			ttft:  true,
		},
		{
			name: "line over the cap",
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				sendEvent(w, contentChunk(strings.Repeat("x", 4096)))
			}),
			cfg:   func(c *Config) { c.MaxLineBytes = 1024 },
			class: ClassProtocol,
		},
		{
			name: "not JSON",
			handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				sendEvent(w, "hello")
			}),
			class: ClassProtocol,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.url
			if tt.handler != nil {
				srv := httptest.NewServer(tt.handler)
				defer srv.Close()
				url = srv.URL
			}
			c := newClient(t, url, tt.cfg)
			ctx, cancel := context.WithCancel(context.Background())
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			res, err := c.Stream(ctx, chatReq(0))
			var e *Error
			if !errors.As(err, &e) || e != res.Err {
				t.Fatalf("want *Error equal to res.Err, got %v", err)
			}
			if e.Class != tt.class {
				t.Fatalf("class %q, want %q (%v)", e.Class, tt.class, e)
			}
			if (res.TTFTMS != nil) != tt.ttft {
				t.Fatalf("ttft presence %v, want %v", res.TTFTMS != nil, tt.ttft)
			}
			if strings.Contains(e.Error(), testSecret) {
				t.Fatal("secret leaked")
			}
		})
	}
}

func TestErrorCausesUnwrap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		sendEvent(w, `{"error":{"message":"engine died","code":500}}`)
		fmt.Fprint(w, "data: "+strings.Repeat("y", 300)+"\n\n")
	}))
	defer srv.Close()
	_, err := newClient(t, srv.URL, nil).Stream(context.Background(), chatReq(0))
	var se *StreamError
	if !errors.As(err, &se) || se.Message != "engine died" {
		t.Fatalf("want *StreamError, got %v", err)
	}
	_, err = newClient(t, srv.URL, func(c *Config) { c.MaxLineBytes = 32 }).Stream(context.Background(), chatReq(0))
	var le *sse.LimitError
	if !errors.As(err, &le) || le.LimitBytes != 32 {
		t.Fatalf("want *sse.LimitError, got %v", err)
	}
}

func TestHTTPStatusErrorsNeverLeakTheKey(t *testing.T) {
	long := strings.Repeat("é", 1000)
	tests := []struct {
		name   string
		status int
		body   func(r *http.Request) string
		want   string
	}{
		{"401 echoing the key", 401, func(r *http.Request) string {
			return `{"error":{"message":"Incorrect API key provided: ` + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + `"}}`
		}, "Incorrect API key provided: [REDACTED]"},
		{"500 with a long body", 500, func(*http.Request) string { return long }, "HTTP 500 Internal Server Error: éé"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body(r))
			}))
			defer srv.Close()
			res, err := newClient(t, srv.URL, nil).Stream(context.Background(), chatReq(0))
			if res.Err == nil || res.Err.Class != ClassHTTPStatus || res.Err.Status != tt.status || res.HTTPStatus != tt.status {
				t.Fatalf("got %+v", res.Err)
			}
			if !strings.Contains(res.Err.Message, tt.want) || len(res.Err.Message) > 600 {
				t.Fatalf("message %q (len %d) lacks %q or is too long", res.Err.Message, len(res.Err.Message), tt.want)
			}
			js, _ := json.Marshal(res)
			for _, s := range []string{err.Error(), string(js), fmt.Sprintf("%+v", res), fmt.Sprintf("%v", err)} {
				if strings.Contains(s, testSecret) {
					t.Fatalf("secret leaked in %s", s)
				}
			}
		})
	}
}

// Secrets the client was not told about by value still never come back:
// the always-secret headers (Cookie included) and the base URL's password.
func TestEchoedHeadersAndURLPasswordNeverLeak(t *testing.T) {
	const cookie, pass = "sid=cookie-secret-31", "url-pass-42"
	for _, tc := range []struct {
		name string
		echo func(r *http.Request) string
	}{
		{name: "cookie echoed", echo: func(r *http.Request) string { return "bad session " + r.Header.Get("Cookie") }},
		{name: "basic auth password echoed", echo: func(r *http.Request) string { _, pw, _ := r.BasicAuth(); return "bad password " + pw }},
		{name: "URL echoed", echo: func(r *http.Request) string { return "see http://bench:" + pass + "@" + r.Host }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, tc.echo(r))
			}))
			defer srv.Close()
			withPass := strings.Replace(srv.URL, "://", "://bench:"+pass+"@", 1)
			c := newClient(t, withPass, func(c *Config) { c.APIKey, c.Headers = "", map[string]string{"Cookie": cookie} })
			res, err := c.Stream(context.Background(), chatReq(0))
			if res.Err == nil || res.Err.Class != ClassHTTPStatus {
				t.Fatalf("got %+v", res.Err)
			}
			if !strings.Contains(res.Err.Message, "[REDACTED]") {
				t.Errorf("the server's answer was not echoed: %q", res.Err.Message)
			}
			for _, s := range []string{err.Error(), res.Err.Message} {
				for _, secret := range []string{cookie, pass} {
					if strings.Contains(s, secret) {
						t.Errorf("%q leaked in %s", secret, s)
					}
				}
			}
		})
	}
}

func TestCAFile(t *testing.T) {
	srv := httptest.NewTLSServer(&paced{tokens: 2})
	defer srv.Close()
	dir := t.TempDir()
	caPath := filepath.Join(dir, "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caPath, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := newClient(t, srv.URL, func(c *Config) { c.CAFile = caPath }).Stream(context.Background(), chatReq(2))
	if err != nil || *res.CompletionTokens != 2 {
		t.Fatalf("with CA: %v %+v", err, res)
	}
	_, err = newClient(t, srv.URL, nil).Stream(context.Background(), chatReq(2))
	var e *Error
	if !errors.As(err, &e) || e.Class != ClassConnect {
		t.Fatalf("without CA want connect error, got %v", err)
	}
	if _, err := New(Config{BaseURL: srv.URL, CAFile: filepath.Join(dir, "missing.pem")}); err == nil {
		t.Fatal("missing CA file must fail")
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "localhost:8000", "ftp://x", "http://"} {
		if _, err := New(Config{BaseURL: u}); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
}

func TestConcurrentStreamsShareThePool(t *testing.T) {
	srv := httptest.NewServer(&paced{gap: time.Millisecond, tokens: 5})
	defer srv.Close()
	c := newClient(t, srv.URL, func(c *Config) { c.MaxConns = 8 })
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			res, err := c.Stream(context.Background(), chatReq(5))
			if err == nil && *res.CompletionTokens != 5 {
				err = fmt.Errorf("completion tokens %d", *res.CompletionTokens)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// drain is used by servers that must read the request fully.
func drain(r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }
