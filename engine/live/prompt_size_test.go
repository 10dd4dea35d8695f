package live

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/engine/sim"
	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/report"
)

// countSkew serves the simulator, with its token counter off by skew, so
// calibration is fooled and the server's usage tells.
func countSkew(t *testing.T, skew int) string {
	t.Helper()
	s, err := sim.New(sim.Config{DecodeStep: time.Millisecond, TTFTBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages/count_tokens" || skew == 0 {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var out struct {
			InputTokens int `json:"input_tokens"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"input_tokens":%d}`, out.InputTokens+skew)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestLoadPromptsHitTheirOwnTargets: with a distribution of sizes, every
// load request's prompt is within max(4 tokens, 0.5 %) of its own target
// by the server's count; a tokenizer that miscounts shows as a warning.
func TestLoadPromptsHitTheirOwnTargets(t *testing.T) {
	for _, tc := range []struct {
		name string
		skew int
		warn bool
	}{
		{name: "true counts"},
		{name: "count_tokens 30 over what the server bills", skew: 30, warn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := countSkew(t, tc.skew)
			sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false, metadata: false}
phases:
  load: {kind: load, concurrency: 4, requests: 24, prompt_tokens: {distribution: uniform, min: 100, max: 600}, max_tokens: 2}
`, url), nil)
			var mu sync.Mutex
			var samples []report.RequestSample
			r, err := Run(t.Context(), sc.Runs[0], Options{Protocol: openai.Protocol(), SampleSink: func(s report.RequestSample) {
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}})
			if err != nil {
				t.Fatal(err)
			}
			ph := r.Phases["load"]
			targets := map[int]bool{}
			misses := 0
			for _, s := range samples {
				if s.TargetPromptTokens == 0 || s.PromptTokens == nil {
					t.Fatalf("sample without target or count: %+v", s)
				}
				targets[s.TargetPromptTokens] = true
				d := *s.PromptTokens - s.TargetPromptTokens
				if d > transport.CalibrationTolerance(s.TargetPromptTokens) || -d > transport.CalibrationTolerance(s.TargetPromptTokens) {
					misses++
				}
			}
			if len(samples) != 24 || len(targets) < 10 {
				t.Fatalf("%d samples, %d distinct targets", len(samples), len(targets))
			}
			warned := strings.Contains(strings.Join(ph.Points[0].Warnings, "\n"), "prompt size:")
			if tc.warn != warned || tc.warn != (misses > 0) {
				t.Errorf("misses %d, warned %v (%q), want a miss and a warning: %v", misses, warned, ph.Points[0].Warnings, tc.warn)
			}
		})
	}
}
