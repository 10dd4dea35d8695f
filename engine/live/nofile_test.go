package live

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/openai"
)

// A load phase whose concurrency cannot fit under the open-file limit says
// so in the report; one that fits says nothing.
func TestOpenFileLimitWarning(t *testing.T) {
	for _, tt := range []struct {
		name   string
		phase  string
		limit  uint64
		warned bool
	}{
		{"closed loop over the limit", "{kind: load, concurrency: 8, requests: 8, prompt_tokens: 8, max_tokens: 2}", 20, true},
		{"sweep, largest over the limit", "{kind: load, sweep: {concurrency: [1, 4]}, requests: 4, prompt_tokens: 8, max_tokens: 2}", 35, true},
		{"open loop bounded over the limit", "{kind: load, rate: 200, max_in_flight: 16, requests: 4, prompt_tokens: 8, max_tokens: 2}", 40, true},
		{"fits (two files a connection to the embedded simulator)", "{kind: load, concurrency: 8, requests: 8, prompt_tokens: 8, max_tokens: 2}", 48, false},
		{"embedded needs two files a connection", "{kind: load, concurrency: 8, requests: 8, prompt_tokens: 8, max_tokens: 2}", 47, true},
		{"limit unknown", "{kind: load, concurrency: 8, requests: 8, prompt_tokens: 8, max_tokens: 2}", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc := parse(t, `
targets:
  s: {kind: embedded, metrics: false, sim: {decode_step: 1ms}}
phases:
  load: `+tt.phase+`
`, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := Run(ctx, sc.Runs[0], Options{Protocol: openai.Protocol(), OpenFileLimit: func() uint64 { return tt.limit }})
			if err != nil {
				t.Fatal(err)
			}
			warned := false
			for _, w := range r.Phases["load"].Warnings {
				warned = warned || strings.Contains(w, "open files")
			}
			if warned != tt.warned {
				t.Fatalf("warnings %q, want an open-file warning: %v", r.Phases["load"].Warnings, tt.warned)
			}
		})
	}
}

// A request that never gets a connection (over the open-file limit, or
// refused) was never in flight at the server. The server here stops
// accepting after the readiness probe: of 8 concurrent requests only the
// one that reuses the probe's connection can be in flight, and the peak
// said 8 while it counted sends.
func TestPeakInFlightCountsOnlyRequestsHoldingAConnection(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			_, _ = io.WriteString(w, `{"status":"ok"}`)
			_ = srv.Listener.Close() // existing connections live on
			return
		}
		time.Sleep(20 * time.Millisecond)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"+
			"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, model: m, metrics: false, metadata: false, retries: {max: 0}}
phases:
  load: {concurrency: 8, requests: 32, prompt: {text: hi}, max_tokens: 1, max_error_rate: 1}
`, srv.URL), nil)
	r, err := runFirst(t, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	lp := r.Phases["load"].Points[0]
	if lp.Errors.Count == 0 || lp.Errors.ByClass["connect"] == 0 {
		t.Fatalf("no connect errors: %+v", lp.Errors)
	}
	// One connection, handed from request to request: the next request
	// can get it from the pool a moment before the last one's count is
	// taken back, so 2 is possible; sends counted gave 8.
	if lp.PeakInFlight > 2 {
		t.Errorf("peak_in_flight %d with one connection to hold", lp.PeakInFlight)
	}
}

// A shard needs files for its share of the concurrency, not the whole
// run's: two shards of 16,000 streams need 8,000 sockets each.
func TestOpenFileLimitWarningShard(t *testing.T) {
	sc := parse(t, `
targets:
  s: {kind: openai, base_url: "http://127.0.0.1:1", model: m, metrics: false, metadata: false}
phases:
  load: {kind: load, concurrency: 16000, requests: 16000, prompt_tokens: 8, max_tokens: 2}
`, nil)
	run := sc.Runs[0]
	p := run.Phases[0]
	if w := FileLimitWarning(run, p, 10_000, nil); !strings.Contains(w, "concurrency 16000 needs about 16032 open files") {
		t.Errorf("whole run: %q", w)
	}
	for i := range 2 {
		if w := FileLimitWarning(run, p, 10_000, &Shard{Index: i, Count: 2}); w != "" {
			t.Errorf("shard %d/2 of 16000 under a 10000 limit warned: %q", i, w)
		}
	}
	if w := FileLimitWarning(run, p, 5_000, &Shard{Index: 1, Count: 2}); !strings.Contains(w, "this shard's concurrency (8000, of 2 shards) needs about 8032 open files") {
		t.Errorf("shard over its limit: %q", w)
	}
}
