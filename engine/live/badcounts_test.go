package live_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine"
	"github.com/tollgate-dev/tollgate/engine/sim"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// A server that sends impossible counts costs those requests (protocol
// errors), never the report: it still validates against its schema, and the
// good requests are still measured.
func TestBadCountsStillWriteAValidReport(t *testing.T) {
	bad := []struct{ name, usage string }{
		{"negative cached", `{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":-3}}`},
		{"huge completion", `{"prompt_tokens":5,"completion_tokens":1e308}`},
		{"cached over prompt", `{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":50}}`},
		{"fractional prompt", `{"prompt_tokens":5.25,"completion_tokens":2}`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			s, err := sim.New(sim.Config{DecodeStep: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			h := s.Handler()
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/chat/completions" || n.Add(1)%2 == 1 {
					h.ServeHTTP(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				for _, d := range []string{
					`{"choices":[{"index":0,"delta":{"content":"a"}}]}`,
					`{"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"length"}]}`,
					`{"choices":[],"usage":` + tt.usage + `}`,
					`[DONE]`,
				} {
					fmt.Fprintf(w, "data: %s\n\n", d)
				}
			}))
			defer srv.Close()
			sc, err := scenarios.Parse("test.yaml", []byte(fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false}
phases:
  decode: {max_tokens: 2, repeat: 4, max_error_rate: 0.9, prompt: {text: hi}}
`, srv.URL)), scenarios.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rep := engine.New(sc, engine.Options{})
			if err := engine.Run(ctx, sc, rep, engine.Options{}); err != nil {
				t.Fatal(err)
			}
			rep.Status = "pass"
			if _, err := report.Marshal(rep); err != nil {
				t.Fatalf("the report must validate: %v", err)
			}
			d := rep.Runs[rep.RunOrder[0]].Phases["decode"]
			if d.Errors.ByClass["protocol"] != 2 || d.Succeeded != 2 {
				t.Fatalf("errors %+v, succeeded %d", d.Errors.ByClass, d.Succeeded)
			}
		})
	}
}
