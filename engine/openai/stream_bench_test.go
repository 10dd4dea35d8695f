package openai

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// benchBody is a whole streamed answer of tokens token events, each
// followed by ignored events (one empty delta, one keep-alive comment, one
// role-only chunk) when noise is set, then the finish chunk and [DONE].
func benchBody(tokens int, noise bool) (body []byte, events int) {
	var sb strings.Builder
	for i := range tokens {
		fmt.Fprintf(&sb, "data: %s\n\n", contentChunk(fmt.Sprintf(" t%d", i)))
		events++
		if noise {
			sb.WriteString(`data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}` + "\n\n")
			sb.WriteString(": keep-alive\n\n")
			sb.WriteString(`data: {"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}` + "\n\n")
			events += 3
		}
	}
	sb.WriteString(`data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n")
	sb.WriteString("data: [DONE]\n\n")
	return []byte(sb.String()), events + 2
}

// The client's whole CPU per event of a real loopback request (read,
// timestamp, parse, account, timers), for token events and for events it
// must ignore.
func BenchmarkStreamEvents(b *testing.B) {
	for _, noise := range []bool{false, true} {
		b.Run(fmt.Sprintf("ignored=%v", noise), func(b *testing.B) {
			const tokens = 1024
			body, events := benchBody(tokens, noise)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				drain(r)
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			c, err := New(Config{BaseURL: srv.URL, IdleTimeout: 1e9 * 60, FirstTokenTimeout: 1e9 * 60})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			streamLoop(b, c, chatReq(tokens), tokens)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
		})
	}
}

// simChunk is one of tollgate serve's chunks, byte for byte in shape.
func simChunk(delta, finish string) string {
	return `data: {"id":"chatcmpl-sim1","object":"chat.completion.chunk","created":1796289214,"model":"tollgate-sim","choices":[{"index":0,"delta":` +
		delta + `,"logprobs":null,"finish_reason":` + finish + `}]}` + "\n\n"
}

// The client's whole CPU and allocations per short request (16 tokens, one
// flush per event, the simulator's headers and chunks, every timeout on as
// a scenario's defaults set them) on a real loopback connection: the
// per-request costs (body, headers, trace, timers, pool) that a long
// stream hides. The in-process server's share is in the figure too.
func BenchmarkShortRequest(b *testing.B) {
	const tokens = 16
	events := []string{simChunk(`{"role":"assistant","content":""}`, "null")}
	for i := range tokens {
		events = append(events, simChunk(fmt.Sprintf(`{"content":" w%d"}`, i), "null"))
	}
	events = append(events, simChunk(`{}`, `"length"`),
		`data: {"id":"chatcmpl-sim1","object":"chat.completion.chunk","created":1796289214,"model":"tollgate-sim","choices":[],"usage":{"prompt_tokens":64,"completion_tokens":16,"total_tokens":80,"prompt_tokens_details":{"cached_tokens":0}}}`+"\n\n",
		"data: [DONE]\n\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		drain(r)
		h := w.Header()
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Type", "text/event-stream")
		h.Set("Keep-Alive", "timeout=30")
		h.Set("X-Request-Id", "chatcmpl-sim1")
		fl := w.(http.Flusher)
		for _, ev := range events {
			_, _ = io.WriteString(w, ev)
			fl.Flush()
		}
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, ConnectTimeout: 30 * time.Second, FirstTokenTimeout: 10 * time.Minute,
		IdleTimeout: 2 * time.Minute, TotalTimeout: 30 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	streamLoop(b, c, Request{Model: "tollgate-sim", Messages: []Message{{Role: "user", Content: strings.Repeat("word ", 48)}}, MaxTokens: tokens, Stream: true}, tokens)
}

// streamLoop sends req b.N times; each answer must hold tokens token events.
func streamLoop(b *testing.B, c *Client, req Request, tokens int) {
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.Stream(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if res.SSETokenEvents != tokens {
			b.Fatalf("%d token events", res.SSETokenEvents)
		}
	}
}
