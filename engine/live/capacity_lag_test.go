package live

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// A probe whose client fell behind its schedule fails for the client: never
// a pass (the server was offered less than the rate), not the server's
// saturation either, with the lateness as its first reason; a search it
// bounds names dispatch_lag_ms and makes the run's measurement invalid.
func TestAClientLateProbeFailsForTheClient(t *testing.T) {
	objs := scenarios.Objectives{{Text: "ttft_ms.p99 <= 500", Metric: "ttft_ms", Stat: "p99", Op: "<=", Limit: 500}}
	c := &scenarios.Capacity{By: "rate", Objectives: objs}
	ttft := 40.0
	m := &report.ServingMetrics{Requests: 50, Succeeded: 50, TTFTMS: report.Stat{P99: &ttft}}
	for _, tc := range []struct {
		name string
		sat  bool
	}{
		{name: "objectives met", sat: false},
		{name: "saturation signals too", sat: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := &report.CapacityProbe{Value: 64, ClientLate: true, DispatchLagP99MS: report.F(35)}
			var sig []string
			if tc.sat {
				sig = []string{"queue_ms grows"}
			}
			judgeProbe(c, pr, probeFigures{m: m, vals: [][]float64{{ttft}}, late: "the client sent 35ms late"}, tc.sat, sig, false)
			if pr.Verdict != report.ProbeFail || !pr.Clear || len(pr.Reasons) == 0 || pr.Reasons[0] != "the client sent 35ms late" {
				t.Fatalf("verdict %s clear %v reasons %q; want a clear fail led by the lateness", pr.Verdict, pr.Clear, pr.Reasons)
			}
			if by, v, _ := boundBy(pr, objs); by != "dispatch_lag_ms" || v == nil || *v != 35 {
				t.Errorf("bound by %q (%v), want dispatch_lag_ms 35", by, v)
			}
		})
	}

	r := &runner{run: &scenarios.Run{Name: "sim"}, out: &report.Run{}}
	p := &scenarios.Phase{Name: "cap"}
	pass := &report.CapacityProbe{Value: 32, Verdict: report.ProbePass}
	late := &report.CapacityProbe{Value: 64, Verdict: report.ProbeFail, ClientLate: true, Reasons: []string{"the client sent 35ms late"}}
	out := &report.Capacity{Probes: []*report.CapacityProbe{pass, late}, BoundBy: "dispatch_lag_ms", Bracket: report.Bracket{Pass: report.F(32), Fail: report.F(64)}}
	r.checkProbeLag(p, out)
	if len(r.out.Invalid) != 1 || r.out.Invalid[0].Reason != report.InvalidDispatchLag ||
		r.out.Invalid[0].Path != "/runs/sim/phases/cap/capacity/probes/1/dispatch_lag_p99_ms" ||
		!strings.Contains(r.out.Invalid[0].Message, "the capacity found, 32,") {
		t.Errorf("invalid = %+v", r.out.Invalid)
	}
	out.BoundBy = "ttft_ms.p99 <= 500"
	r.out.Invalid = nil
	r.checkProbeLag(p, out)
	if len(r.out.Invalid) != 0 {
		t.Errorf("a search bound by the server is invalid: %+v", r.out.Invalid)
	}
}

// End to end: with max_dispatch_lag so small that any wake-up is late, the
// first probe is the client's, and the run says so instead of finding a
// capacity; a generous bound leaves the same search alone.
func TestCapacityProbesJudgeTheClientsLateness(t *testing.T) {
	for _, tc := range []struct {
		name, lag string
		late      bool
	}{
		{name: "any lateness is too late", lag: "1ns", late: true},
		{name: "a generous bound", lag: "1h", late: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parse(t, `
targets:
  s: {kind: embedded, sim: {ttft_base: 1ms, decode_step: 1ms}}
phases:
  cap:
    kind: capacity
    capacity:
      min: 4
      max: 8
      budget: 30s
      probe: {warmup: 100ms, duration: 1s, min_requests: 4, repeat: 1}
      objectives: ["e2e_ms.p50 <= 10000"]
    arrival: constant
    max_dispatch_lag: `+tc.lag+`
    prompt_tokens: 16
    max_tokens: 4
`, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			r, err := Run(ctx, sc.Runs[0], Options{Protocol: openai.Protocol()})
			if r == nil || r.Phases["cap"] == nil || r.Phases["cap"].Capacity == nil || len(r.Phases["cap"].Capacity.Probes) == 0 {
				t.Fatalf("no probes (err %v)", err)
			}
			first := r.Phases["cap"].Capacity.Probes[0]
			if first.DispatchLagP99MS == nil {
				t.Fatalf("probe has no dispatch_lag_p99_ms")
			}
			if first.ClientLate != tc.late {
				t.Fatalf("client_late %v at lag p99 %g ms, want %v", first.ClientLate, *first.DispatchLagP99MS, tc.late)
			}
			if tc.late {
				if ps := r.Phases["cap"].Capacity.Probes; len(ps) != 1+lateReruns || ps[lateReruns].Value != first.Value || !ps[lateReruns].ClientLate {
					t.Errorf("a client-late probe is run %d more times at the same value before it counts; probes %d", lateReruns, len(ps))
				}
				if !errors.Is(err, ErrPhase) || !strings.Contains(err.Error(), "at capacity.min 4/s the client sent") || !strings.Contains(err.Error(), "dispatch_lag_ms") {
					t.Fatalf("error %v, want the client's lateness at min", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c := r.Phases["cap"].Capacity; c.MaxRatePerS == nil || *c.MaxRatePerS < 4 {
				t.Errorf("a generous bound found no capacity: %+v", c)
			}
		})
	}
}
