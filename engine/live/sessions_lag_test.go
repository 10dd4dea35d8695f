package live

import (
	"context"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/report"
)

// Open-loop sessions and agent tasks are scheduled like a load point's
// requests, so the client's lateness in starting them is kept and judged
// by the same rule: past max_dispatch_lag the run is invalid; a closed
// loop has no schedule to be late for.
func TestOpenLoopConversationsJudgeTheClientsLateness(t *testing.T) {
	for _, tc := range []struct {
		name, phase string
		invalid     bool
		lagged      bool // the phase keeps dispatch_lag_ms
	}{
		{name: "sessions, any lateness too late", phase: `{kind: sessions, sessions: 4, turns: 2, rate: 20, arrival: constant, max_dispatch_lag: 1ns, prompt_tokens: 8, max_tokens: 4}`, invalid: true, lagged: true},
		{name: "sessions, a generous bound", phase: `{kind: sessions, sessions: 4, turns: 2, rate: 20, arrival: constant, max_dispatch_lag: 1h, prompt_tokens: 8, max_tokens: 4}`, lagged: true},
		{name: "agent, any lateness too late", phase: `{kind: agent, sessions: 3, rate: 20, arrival: constant, max_dispatch_lag: 1ns, max_steps: 2, tools: [{name: search, parameters: {type: object}}], prompt_tokens: 8, max_tokens: 4}`, invalid: true, lagged: true},
		{name: "sessions, closed loop", phase: `{kind: sessions, sessions: 2, turns: 2, concurrency: 2, prompt_tokens: 8, max_tokens: 4}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parse(t, `
targets:
  s: {kind: embedded, sim: {ttft_base: 1ms, decode_step: 1ms}}
phases:
  chat: `+tc.phase+`
`, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			r, err := Run(ctx, sc.Runs[0], Options{Protocol: openai.Protocol()})
			if err != nil {
				t.Fatal(err)
			}
			ph := r.Phases["chat"]
			if (ph.DispatchLagMS != nil) != tc.lagged {
				t.Fatalf("dispatch_lag_ms %v, want one: %v", ph.DispatchLagMS, tc.lagged)
			}
			if tc.lagged && (ph.DispatchLagMS.P99 == nil || ph.DispatchLagMS.Count == 0) {
				t.Errorf("dispatch_lag_ms %+v: want the sessions' starts", ph.DispatchLagMS)
			}
			var found []report.Invalidity
			for _, iv := range r.Invalid {
				if iv.Reason == report.InvalidDispatchLag {
					found = append(found, iv)
				}
			}
			if (len(found) == 1) != tc.invalid || tc.invalid && found[0].Path != "/runs/s/phases/chat/dispatch_lag_ms/p99" {
				t.Errorf("invalid %+v, want one dispatch_lag finding: %v", r.Invalid, tc.invalid)
			}
		})
	}
}
