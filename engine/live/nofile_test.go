package live

import (
	"context"
	"strings"
	"testing"
	"time"
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
		{"fits", "{kind: load, concurrency: 8, requests: 8, prompt_tokens: 8, max_tokens: 2}", 40, false},
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
			r, err := Run(ctx, sc.Runs[0], Options{OpenFileLimit: func() uint64 { return tt.limit }})
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
