package live

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/report"
)

// keyPaths are the JSON paths of r, every element of an array as [].
func keyPaths(t *testing.T, r *report.Run) []string {
	t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	var walk func(string, any)
	walk = func(at string, v any) {
		set[at] = true
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(at+"."+k, e)
			}
		case []any:
			for _, e := range x {
				walk(at+"[]", e)
			}
		}
	}
	walk("run", v)
	var out []string
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The shape caps request counts at shapeRequests; the keys must be those
// of the phase as written, so more requests may add none.
func TestShapeCountsCapped(t *testing.T) {
	phases := `
phases:
  warmup: {requests: 40}
  prefill: {prompt_tokens: [16, 32], repeat: 40}
  decode: {prompt_tokens: 16, max_tokens: 4, repeat: 40}
  prefix_cache: {prompt_tokens: 64, suffix_tokens: 4, repeat: 40}
  r: {kind: requests, requests: [{prompt: hi}, {prompt: there, max_tokens: 1}], repeat: 40}
`
	for _, tc := range []struct{ name, targets string }{
		{name: "embedded"},
		{name: "live", targets: "targets:\n  t: {kind: openai, base_url: \"http://127.0.0.1:1\", model: m}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parse(t, tc.targets+phases, nil)
			run := sc.Runs[0]
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan struct{})
			var all, capped []string
			go func() {
				defer close(done)
				all = keyPaths(t, shape(capCounts(run, math.MaxInt), true, openai.Protocol()))
				capped = keyPaths(t, Shape(run, true, openai.Protocol()))
			}()
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatal("the shapes took over a minute")
			}
			if !slices.Equal(all, capped) {
				t.Errorf("capped shape keys differ:\nall:    %s\ncapped: %s", strings.Join(all, " "), strings.Join(capped, " "))
			}
			if run.Phases[1].Repeat != 40 {
				t.Errorf("Shape changed the run's repeat to %d", run.Phases[1].Repeat)
			}
		})
	}
}
