package live

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

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

// Known truth: the simulator's capacity follows from its configuration
// (docs/scenarios.md, "Capacity"). Each configuration is bound by the
// simulated server (4 slots, or one shared prefill), at rates a loaded
// client sends without effort; the search must find it within its
// precision plus the probes' noise (±15 %).
func TestCapacityFindsTheSimulatorsCapacity(t *testing.T) {
	if testing.Short() {
		t.Skip("three capacity searches take about 2 minutes")
	}
	if raceEnabled {
		t.Skip("under the race detector the client, not the simulated server, bounds the load")
	}
	for _, tc := range []struct {
		name   string
		sim    string
		prompt int
		maxTok int
		truth  float64 // requests/s, from the formula
	}{
		// 4 slots × 1 / (10 ms + 24 × 20 ms + ~10 ms to join a step) ≈ 8/s.
		{name: "slot bound", sim: `{max_running_seqs: 4, ttft_base: 10ms, decode_step: 20ms, decode_step_per_seq: 1ns, prefill_tokens_per_s: 1000000}`, prompt: 32, maxTok: 25, truth: 4 / 0.5},
		// One prefill of 512 tokens at 5120 tokens/s: 100 ms each, 10/s.
		// 8 slots × 1 / (10 ms + 24 × 10 ms + ~5 ms) ≈ 31/s: short probes
		// pass up to 10 % above it (the queue grows slowly), the hold not.
		{name: "batch bound", sim: `{max_running_seqs: 8, ttft_base: 10ms, decode_step: 10ms, decode_step_per_seq: 1ns, prefill_tokens_per_s: 1000000}`, prompt: 32, maxTok: 25, truth: 8 / 0.255},
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
    arrival: constant
    prompt_tokens: %d
    max_tokens: %d
`, tc.sim, tc.prompt, tc.maxTok), nil)
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
			defer cancel()
			started := time.Now()
			r, err := Run(ctx, sc.Runs[0], Options{Protocol: OpenAI()})
			if err != nil {
				t.Fatal(err)
			}
			c := r.Phases["capacity"].Capacity
			if c.MaxRatePerS == nil {
				t.Fatalf("no capacity found: %+v", c)
			}
			got := *c.MaxRatePerS
			t.Logf("found %.3g/s, truth %.3g/s (%+.1f%%), %d probes, %.1f s, bound by %s, bracket [%.3g, %v], interval [%s, %s], held %s s",
				got, tc.truth, 100*(got/tc.truth-1), c.ProbeCount, time.Since(started).Seconds(), c.BoundBy, *c.Bracket.Pass, fmtPtr(c.Bracket.Fail),
				fmtPtr(c.Interval.Low), fmtPtr(c.Interval.High), fmtPtr(c.HoldS))
			if math.Abs(got/tc.truth-1) > 0.15 {
				t.Errorf("found %.3g/s, truth %.3g/s", got, tc.truth)
			}
			if c.Stop != report.CapacityConverged || c.Bracket.Fail == nil || *c.Bracket.Fail/got > 1.10+1e-9 {
				t.Errorf("stop %s bracket %v..%v", c.Stop, got, fmtPtr(c.Bracket.Fail))
			}
			if !c.Confirmed || c.Interval.Low == nil || *c.Interval.Low > got || c.Interval.High != nil && *c.Interval.High <= got {
				t.Errorf("confirmed %v, interval %s..%s around %.3g", c.Confirmed, fmtPtr(c.Interval.Low), fmtPtr(c.Interval.High), got)
			}
			if strings.HasPrefix(c.BoundBy, "error_rate") {
				t.Errorf("bound by %s, yet the simulator fails no request", c.BoundBy)
			}
		})
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
    arrival: constant
    prompt_tokens: 16
    max_tokens: 10
`, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r, err := Run(ctx, sc.Runs[0], Options{Protocol: OpenAI()})
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
