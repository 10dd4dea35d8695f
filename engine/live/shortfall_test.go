package live

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/sim"
)

// A closed-loop point whose requests are fewer than its concurrency is
// known short of it when the scenario loads, point by point.
func TestConcurrencyWarnings(t *testing.T) {
	for _, tc := range []struct {
		name, load string
		want       []string
	}{
		{"fewer requests than the largest point", "{sweep: {concurrency: [1, 8, 64]}, requests: 32}",
			[]string{"point concurrency 64 sends at most 32 requests (requests: 32), so never more than 32 are in flight: give it at least 64 requests, several times that to hold 64 in flight"}},
		{"as many requests as streams", "{concurrency: 8, requests: 8}", nil},
		{"bounded by a duration only", "{concurrency: 64, duration: 1s}", nil},
		{"an open loop", "{sweep: {rate: [1, 100]}, requests: 4}", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parse(t, "targets:\n  e: {kind: embedded}\nphases:\n  load: "+strings.TrimSuffix(tc.load, "}")+", kind: load, prompt_tokens: 16, max_tokens: 4}\n", nil)
			if got := ConcurrencyWarnings(sc.Runs[0].Phases[0]); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("warnings\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// A point that never held its concurrency says so in the run's warnings,
// naming the point: 4 requests can never keep 8 streams busy.
func TestLoadPointShortOfItsConcurrency(t *testing.T) {
	_, url := startSim(t, sim.Config{DecodeStep: 2 * time.Millisecond, MaxRunningSeqs: 64})
	sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false, metadata: false}
phases:
  load: {sweep: {concurrency: [8]}, requests: 4, prompt_tokens: 32, max_tokens: 8, prompt: {calibrate: false}}
`, url), nil)
	r, err := runFirst(t, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	ph := r.Phases["load"]
	want := "point concurrency 8 held "
	var found string
	for _, w := range ph.Warnings {
		if strings.HasPrefix(w, want) {
			found = w
		}
	}
	if found == "" || !strings.Contains(found, "its 4 requests are too few to keep 8 streams busy") {
		t.Errorf("warnings %q, want one starting %q naming the 4 requests", ph.Warnings, want)
	}
}
