package live

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// The search alone, against a known threshold: it converges within the
// precision, probes the found value repeat times and then holds it, and
// handles a repeat that fails, a hold that fails (a server that passes
// short probes above what it sustains), a min that fails and a max that
// passes.
func TestSearchFindsTheThreshold(t *testing.T) {
	for _, tc := range []struct {
		name           string
		c              scenarios.Capacity
		passes         func(v float64, step string) bool
		stop           string
		lo, hi         float64 // the found value lies in [lo, hi]
		wantProbesUpTo int
	}{
		{name: "rate 8.0", c: cap(1, 64, 1, 0.05, "rate", 2), passes: func(v float64, _ string) bool { return v <= 8 }, stop: report.CapacityConverged, lo: 8 / 1.05, hi: 8, wantProbesUpTo: 12},
		{name: "start above the threshold", c: cap(1, 64, 32, 0.05, "rate", 1), passes: func(v float64, _ string) bool { return v <= 5 }, stop: report.CapacityConverged, lo: 5 / 1.05, hi: 5, wantProbesUpTo: 12},
		{name: "concurrency 13", c: cap(1, 256, 1, 0.01, "concurrency", 1), passes: func(v float64, _ string) bool { return v <= 13 }, stop: report.CapacityConverged, lo: 13, hi: 13, wantProbesUpTo: 12},
		{name: "min fails", c: cap(2, 64, 2, 0.05, "rate", 1), passes: func(float64, string) bool { return false }, stop: report.CapacityBelowMin, wantProbesUpTo: 1},
		{name: "max passes", c: cap(1, 10, 1, 0.05, "rate", 2), passes: func(float64, string) bool { return true }, stop: report.CapacityAtMax, lo: 10, hi: 10, wantProbesUpTo: 7},
		// Short probes pass up to 9.2, a hold only up to 8: the found value
		// is what holds.
		{name: "a hold fails", c: cap(1, 64, 1, 0.05, "rate", 1), passes: func(v float64, step string) bool {
			return v <= 8 || step != report.StepHold && v <= 9.2
		}, stop: report.CapacityConverged, lo: 8 / 1.05, hi: 8, wantProbesUpTo: 16},
		// The first repeat of the found value fails (a noisy boundary): the
		// search goes on below it.
		{name: "a repeat fails", c: cap(1, 64, 1, 0.05, "rate", 2), passes: func() func(float64, string) bool {
			failed := false
			return func(v float64, _ string) bool {
				if v > 8 {
					return false
				}
				if v > 7.7 && !failed {
					if seen[v]++; seen[v] == 2 {
						failed = true
						return false
					}
				}
				return true
			}
		}(), stop: report.CapacityConverged, lo: 7 / 1.05, hi: 8, wantProbesUpTo: 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSearch(&tc.c)
			n := 0
			for {
				v, step, ok := s.next()
				if !ok {
					break
				}
				if v < tc.c.Min || v > tc.c.Max {
					t.Fatalf("probe %v outside [%v, %v]", v, tc.c.Min, tc.c.Max)
				}
				s.record(v, step, tc.passes(v, step))
				n++
				if n > 100 {
					t.Fatal("no convergence")
				}
			}
			if s.stop != tc.stop {
				t.Errorf("stop %q, want %q", s.stop, tc.stop)
			}
			if tc.hi > 0 && (s.pass < tc.lo || s.pass > tc.hi) {
				t.Errorf("found %v, want within [%v, %v]", s.pass, tc.lo, tc.hi)
			}
			if tc.stop == report.CapacityConverged && s.passes[s.pass] < tc.c.Probe.Repeat {
				t.Errorf("found %v passed %d times, want %d", s.pass, s.passes[s.pass], tc.c.Probe.Repeat)
			}
			if tc.hi > 0 && !s.held[s.pass] {
				t.Errorf("found %v was not held", s.pass)
			}
			if n > tc.wantProbesUpTo {
				t.Errorf("%d probes, want at most %d", n, tc.wantProbesUpTo)
			}
		})
	}
}

var seen = map[float64]int{}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func cap(lo, hi, start, precision float64, by string, repeat int) scenarios.Capacity {
	return scenarios.Capacity{Min: lo, Max: hi, Start: start, By: by, Precision: scenarios.Percent{Fraction: precision}, Probe: scenarios.Probe{Repeat: repeat}}
}

// Saturation over requests of known times: a server keeping up shows no
// signal; one serving half the arrivals shows it falling behind.
func TestSaturationSignals(t *testing.T) {
	t0 := time.Unix(1000, 0)
	build := func(rate float64, service func(i int) time.Duration, n int) []record {
		var out []record
		for i := 0; i < n; i++ {
			sent := t0.Add(time.Duration(float64(i) / rate * float64(time.Second)))
			ttft := float64(service(i).Milliseconds()) / 4
			out = append(out, record{scheduled: sent, sent: sent, end: sent.Add(service(i)), ttftMS: &ttft, ok: true})
		}
		return out
	}
	// A server of capacity mu/s (one queue, served in order) behind a
	// 250 ms pipeline, offered rate/s for 6 s.
	queue := func(rate, mu float64) []record {
		var out []record
		free := t0
		for i := 0; i < int(6*rate); i++ {
			sent := t0.Add(time.Duration(float64(i) / rate * float64(time.Second)))
			free = later(free, sent).Add(time.Duration(float64(time.Second) / mu))
			ttft := float64(free.Sub(sent).Milliseconds())
			out = append(out, record{scheduled: sent, sent: sent, end: free.Add(250 * time.Millisecond), ttftMS: &ttft, ok: true})
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		recs      []record
		saturated bool
		signal    string
	}{
		{name: "keeps up", recs: build(10, func(int) time.Duration { return 200 * time.Millisecond }, 40)},
		{name: "keeps up near capacity", recs: queue(30, 31)},
		// 90 % served: too slow for the 80 % rule, and the latency grows
		// by only 0.1 s a second, but the backlog keeps growing.
		{name: "serves 90 %", recs: queue(30, 27), saturated: true, signal: "served/offered falls"},
		// One server at 5/s under 10/s: the i-th waits i × 100 ms more.
		{name: "falls behind", recs: build(10, func(i int) time.Duration { return time.Duration(200+100*i) * time.Millisecond }, 40), saturated: true, signal: "not served"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to := t0.Add(4 * time.Second)
			if len(tc.recs) > 40 {
				to = t0.Add(6 * time.Second)
			}
			sig, sat := saturation(tc.recs, t0, to, to, true)
			if sat != tc.saturated {
				t.Errorf("saturated %v, want %v (signals %q)", sat, tc.saturated, sig)
			}
			if tc.signal != "" && !strings.Contains(strings.Join(sig, "|"), tc.signal) {
				t.Errorf("signals %q, want one with %q", sig, tc.signal)
			}
		})
	}
}

// The search against the embedded simulator, judged on its own evidence,
// which a loaded machine cannot flip: a starved client or simulator moves
// where the capacity lies, not whether the search's report agrees with its
// probes. Each configuration is bound by the simulated server (4 slots, 8
// slots, or one shared prefill); the one bound that does compare with the
// configuration is physical: the found probes cannot serve more than the
// simulator can (docs/scenarios.md, "Capacity"), and a loaded machine only
// serves less. A search that ignored a failed probe, bisected to the wrong
// side, held the wrong value or named a passing objective fails here.
func TestCapacityFindsTheSimulatorsCapacity(t *testing.T) {
	if testing.Short() {
		t.Skip("three capacity searches take about 2 minutes")
	}
	if raceEnabled {
		t.Skip("three capacity searches take several minutes under the race detector; TestSearchFindsTheThreshold covers the search")
	}
	for _, tc := range []struct {
		name   string
		sim    string
		prompt int
		maxTok int
		truth  float64 // requests/s the simulator can serve at most, from the formula
	}{
		// 4 slots × 1 / (10 ms + 24 × 20 ms + ~10 ms to join a step) ≈ 8/s.
		{name: "slot bound", sim: `{max_running_seqs: 4, ttft_base: 10ms, decode_step: 20ms, decode_step_per_seq: 1ns, prefill_tokens_per_s: 1000000}`, prompt: 32, maxTok: 25, truth: 4 / 0.5},
		// 8 slots × 1 / (10 ms + 24 × 10 ms + ~5 ms) ≈ 31/s.
		{name: "batch bound", sim: `{max_running_seqs: 8, ttft_base: 10ms, decode_step: 10ms, decode_step_per_seq: 1ns, prefill_tokens_per_s: 1000000}`, prompt: 32, maxTok: 25, truth: 8 / 0.255},
		// One prefill of 512 tokens at 5120 tokens/s: 100 ms each, 10/s.
		{name: "prefill bound", sim: `{max_running_seqs: 256, ttft_base: 1ms, decode_step: 5ms, decode_step_per_seq: 1ns, prefill_tokens_per_s: 5120, disable_prefix_cache: true}`, prompt: 512, maxTok: 4, truth: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: embedded, sim: %s}
phases:
  capacity:
    kind: capacity
    capacity:
      min: 1
      max: 64
      start: 2
      precision: 10%%
      budget: 100s
      probe: {warmup: 500ms, duration: 2500ms, min_requests: 20, repeat: 2}
      objectives: ["ttft_ms.p99 <= 300", "error_rate <= 0.01"]
    # The search is under test, not the client: a loaded machine's
    # lateness (TestCapacityProbesJudgeTheClientsLateness) stays out.
    max_dispatch_lag: 1h
    arrival: constant
    prompt_tokens: %d
    max_tokens: %d
`, tc.sim, tc.prompt, tc.maxTok), nil)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
			defer cancel()
			r, err := Run(ctx, sc.Runs[0], Options{Protocol: openai.Protocol()})
			if err != nil {
				t.Fatal(err)
			}
			c := r.Phases["capacity"].Capacity
			if c.MaxRatePerS == nil || c.Bracket.Fail == nil {
				t.Fatalf("no capacity found, or none bound: stop %s, %+v", c.Stop, c)
			}
			got, fail := *c.MaxRatePerS, *c.Bracket.Fail
			t.Logf("found %.3g/s (the configuration's bound %.3g/s), %d probes, bound by %s, bracket [%.3g, %.3g], interval [%s, %s], held %s s",
				got, tc.truth, c.ProbeCount, c.BoundBy, *c.Bracket.Pass, fail, fmtPtr(c.Interval.Low), fmtPtr(c.Interval.High), fmtPtr(c.HoldS))
			checkCapacityEvidence(t, c, 2)
			// Physical: the simulator serves at most its configuration's
			// rate, whatever the machine's load (which only lowers it). The
			// margin is the probe window's edges (a request sent before it
			// and finished in it).
			for _, pr := range c.Probes {
				if pr.Value == got && pr.Verdict == report.ProbePass && pr.ServedPerS != nil && *pr.ServedPerS > 1.3*tc.truth {
					t.Errorf("probe %s at %.3g/s served %.3g/s, more than the simulator's %.3g/s", pr.Step, pr.Value, *pr.ServedPerS, tc.truth)
				}
			}
			if strings.HasPrefix(c.BoundBy, "error_rate") {
				t.Errorf("bound by %s, yet the simulator fails no request", c.BoundBy)
			}
		})
	}
}

// checkCapacityEvidence asserts that a converged search's report agrees
// with its own probes: the found value passed every probe of it, at least
// repeat times, and its hold; bracket.fail failed and lies within the
// precision above it; the interval contains it; bound_by is an objective
// that failed at bracket.fail (or saturation), with its value there.
func checkCapacityEvidence(t *testing.T, c *report.Capacity, repeat int) {
	t.Helper()
	got, fail := *c.MaxRatePerS, *c.Bracket.Fail
	if c.Stop != report.CapacityConverged {
		t.Errorf("stop %s, want %s", c.Stop, report.CapacityConverged)
	}
	if fail <= got || fail/got > 1+c.PrecisionPct/100+1e-9 {
		t.Errorf("bracket [%.3g, %.3g] is not within the precision %g %%", got, fail, c.PrecisionPct)
	}
	passed, held, failedAtFail := 0, false, []*report.CapacityProbe(nil)
	for _, pr := range c.Probes {
		switch pr.Value {
		case got:
			if pr.Verdict != report.ProbePass {
				t.Errorf("the found %.3g/s failed its %s probe: %v", got, pr.Step, pr.Reasons)
			}
			passed++
			held = held || pr.Step == report.StepHold
		case fail:
			if pr.Verdict != report.ProbePass {
				failedAtFail = append(failedAtFail, pr)
			}
		}
	}
	if passed < repeat || !held || !c.Confirmed {
		t.Errorf("the found %.3g/s passed %d probes (want %d and a hold), held %v, confirmed %v", got, passed, repeat, held, c.Confirmed)
	}
	if len(failedAtFail) == 0 {
		t.Errorf("bracket.fail %.3g/s failed no probe", fail)
	}
	if c.Interval.Low == nil || *c.Interval.Low > got || c.Interval.High != nil && *c.Interval.High <= got {
		t.Errorf("interval %s..%s does not contain the found %.3g", fmtPtr(c.Interval.Low), fmtPtr(c.Interval.High), got)
	}
	named := false
	for _, pr := range failedAtFail {
		if c.BoundBy == report.ProbeSaturated && pr.Verdict == report.ProbeSaturated {
			named = true
		}
		for _, o := range pr.Objectives {
			if o.Objective == c.BoundBy && !o.Pass && (o.Value == nil) == (c.BoundValue == nil) && (o.Value == nil || *o.Value == *c.BoundValue) {
				named = true
			}
		}
	}
	if !named {
		t.Errorf("bound by %q (value %s), which failed no probe at bracket.fail %.3g", c.BoundBy, fmtPtr(c.BoundValue), fail)
	}
}

func fmtPtr(f *float64) string {
	if f == nil {
		return "none"
	}
	return fmt.Sprintf("%.3g", *f)
}

// A simulator configured to fall behind (one slot, 200 ms a request: 5/s)
// is called saturated at 20/s: a capacity probe is cut short, and a sweep
// with stop_when_saturated ends at that point with its reason.
func TestSaturationDetectedOnASimulatorFallingBehind(t *testing.T) {
	t.Parallel() // its own simulator; it waits on the clock
	sc := parse(t, `
targets:
  s: {kind: embedded, sim: {max_running_seqs: 1, ttft_base: 1ms, decode_step: 20ms, decode_step_per_seq: 1ns}}
phases:
  sweep:
    kind: load
    sweep: {rate: [2, 20, 40]}
    duration: 3s
    arrival: constant
    prompt_tokens: 16
    max_tokens: 10
    stop_when_saturated: true
  capacity:
    kind: capacity
    capacity:
      min: 20
      max: 40
      budget: 30s
      probe: {warmup: 200ms, duration: 3s, min_requests: 10, repeat: 1}
      objectives: ["e2e_ms.p50 <= 10000", "error_rate <= 0.01"]
    max_dispatch_lag: 1h                # saturation is under test, not the client's lateness
    arrival: constant
    prompt_tokens: 16
    max_tokens: 10
`, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r, err := Run(ctx, sc.Runs[0], Options{Protocol: openai.Protocol()})
	// min already fails: no load meets the objectives, which the run says
	// (it cannot be judged), naming what failed at min and what to change.
	if !errors.Is(err, ErrPhase) || !strings.Contains(err.Error(), "at capacity.min 20/s") || !strings.Contains(err.Error(), "saturated") || !strings.Contains(err.Error(), "lower capacity.min") {
		t.Fatalf("error %v, want one naming the saturation at min", err)
	}
	sw := r.Phases["sweep"]
	if len(sw.Points) != 2 || sw.Stopped == nil || !strings.Contains(*sw.Stopped, "rate 20/s: saturated") {
		t.Errorf("sweep: %d points, stopped %v", len(sw.Points), sw.Stopped)
	}
	if s := sw.Points[0].Saturation; s == nil || len(*s) != 0 {
		t.Errorf("2/s is served, yet signals %v", s)
	}
	c := r.Phases["capacity"].Capacity
	pr := c.Probes[0]
	if pr.Verdict != report.ProbeSaturated || !pr.CutShort || c.Stop != report.CapacityBelowMin || c.BoundBy != report.ProbeSaturated || !pr.Clear {
		t.Errorf("probe %+v, search %s bound by %s", pr, c.Stop, c.BoundBy)
	}
	if c.MaxRatePerS != nil || c.Interval.Low != nil || c.Interval.High == nil || *c.Interval.High != 20 {
		t.Errorf("found %v, interval %+v below a min that fails", fmtPtr(c.MaxRatePerS), c.Interval)
	}
	// The requests the cut cancelled are not errors.
	for _, o := range pr.Objectives {
		if strings.HasPrefix(o.Objective, "error_rate") && (o.Value == nil || *o.Value != 0) {
			t.Errorf("error_rate %v after a cut with no failed request", fmtPtr(o.Value))
		}
	}
}
