package live

import (
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/sim"
	"github.com/tollgate-dev/tollgate/internal/peertest"
	"github.com/tollgate-dev/tollgate/report"
)

// TestEveryPhaseKindSurvivesLlamaServerConnections runs every phase kind,
// with default settings, against the simulator behind llama-server's
// connection habit (Keep-Alive advertised, the connection closed anyway):
// no request fails, and the resends are in the report.
func TestEveryPhaseKindSurvivesLlamaServerConnections(t *testing.T) {
	s, err := sim.New(sim.Config{DecodeStep: time.Millisecond, TTFTBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	srv := peertest.Start(s.Handler(), peertest.Policy{KeepAlive: peertest.Header(5, 100), CloseAfterEach: true})
	t.Cleanup(srv.Close)
	sc := parse(t, fmt.Sprintf(`
targets:
  llama: {kind: openai, base_url: %q}
phases:
  warmup: {requests: 2}
  prefill: {prompt_tokens: [64, 128], repeat: 2}
  decode: {prompt_tokens: 64, max_tokens: 8, repeat: 2}
  prefix_cache: {prompt_tokens: 128, suffix_tokens: 8, repeat: 2}
  capture: {kind: requests, requests: [{messages: [{role: user, content: "hello"}], max_tokens: 4}]}
  load: {kind: load, concurrency: 4, requests: 32, prompt_tokens: 32, max_tokens: 4}
`, srv.URL), nil)
	r, err := runFirst(t, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	retries := 0
	check := func(where string, m *report.ServingMetrics) {
		if m == nil {
			return
		}
		if m.Errors.Count != 0 || m.Succeeded != m.Requests {
			t.Errorf("%s: %d of %d failed: %+v", where, m.Errors.Count, m.Requests, m.Errors.Examples)
		}
		retries += m.StaleConnectionRetries
	}
	for name, ph := range r.Phases {
		check(name, ph.ServingMetrics)
		for _, lp := range ph.Points {
			check(name+" point", lp.ServingMetrics)
		}
	}
	if retries == 0 || srv.Dropped() == 0 {
		t.Errorf("stale retries %d, dropped %d: llama-server's behaviour was not reproduced", retries, srv.Dropped())
	}
}
