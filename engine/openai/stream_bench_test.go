package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
			req := chatReq(tokens)
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
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
		})
	}
}
