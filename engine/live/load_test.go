package live

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/engine/sim"
	"github.com/tollgate-dev/tollgate/report"
)

func startSim(t *testing.T, cfg sim.Config) (*sim.Server, string) {
	t.Helper()
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url, err := s.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, url
}

// The simulator counts running sequences itself: a closed loop of N never
// has more than N requests running, whatever the client does.
func TestClosedLoopConcurrencyCountedByTheSimulator(t *testing.T) {
	t.Parallel() // its own simulator; it waits on the clock
	for _, c := range []int{1, 6} {
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			s, url := startSim(t, sim.Config{DecodeStep: 2 * time.Millisecond, MaxRunningSeqs: 256})
			sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false, metadata: false}
phases:
  load: {concurrency: %d, requests: 48, prompt_tokens: 64, max_tokens: 8}
`, url, c), nil)
			r, err := runFirst(t, sc, nil)
			if err != nil {
				t.Fatal(err)
			}
			st := s.Stats()
			if st.PeakRunning > int64(c) {
				t.Errorf("the simulator saw %d running at once, concurrency is %d", st.PeakRunning, c)
			}
			if c > 1 && st.PeakRunning < 2 {
				t.Errorf("peak running %d: the load never overlapped", st.PeakRunning)
			}
			lp := r.Phases["load"].Points[0]
			if lp.Requests != 48 || lp.Succeeded != 48 || lp.PeakInFlight > int64(c) {
				t.Errorf("point %+v", lp)
			}
			// A closed loop sends when a worker is free: its queue_ms is
			// getting a connection only, within the request's own time,
			// and it has no schedule to lag.
			if lp.QueueMS.Count != 48 || lp.QueueMS.Max == nil || *lp.QueueMS.Max < 0 || *lp.QueueMS.Max > *lp.E2EMS.Max {
				t.Errorf("closed loop queue_ms %+v, e2e max %v", lp.QueueMS, lp.E2EMS.Max)
			}
			if lp.DispatchLagMS.Count != 0 {
				t.Errorf("closed loop dispatch_lag_ms %+v, want none", lp.DispatchLagMS)
			}
			if lp.AchievedConcurrency == nil || *lp.AchievedConcurrency > float64(c)+0.01 {
				var got any
				if lp.AchievedConcurrency != nil {
					got = *lp.AchievedConcurrency
				}
				t.Errorf("achieved concurrency %v > %d", got, c)
			}
		})
	}
}

// An open-loop sweep runs one point per rate, each on an absolute schedule.
// What that guarantees whatever the machine's load: no request is sent
// before its time (queue_ms >= 0), so the achieved rate never exceeds the
// offered one. A loaded machine may send late, so there is no lower bound;
// the exact send times are checked on a fake clock in engine/load.
func TestOpenLoopSweepKeepsTheRate(t *testing.T) {
	_, url := startSim(t, sim.Config{DecodeStep: time.Millisecond})
	const requests = 20
	sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false, metadata: false}
phases:
  load:
    sweep: {rate: [50, 200]}
    arrival: constant
    requests: %d
    prompt_tokens: 32
    max_tokens: 4
    slo: {ttft_ms: 100000}
`, url, requests), nil)
	r, err := runFirst(t, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	pts := r.Phases["load"].Points
	if len(pts) != 2 || pts[0].Rate != 50 || pts[1].Rate != 200 {
		t.Fatalf("points %+v", pts)
	}
	for _, lp := range pts {
		// The executor never sends early: n sends span n-1 gaps of 1/rate
		// at least. Writes may bunch up by at most the largest queue_ms
		// (a first request that waited for its connection), no more.
		if lp.DispatchLagMS.Count != requests || lp.DispatchLagMS.Min == nil || *lp.DispatchLagMS.Min < 0 {
			t.Errorf("rate %v: dispatch_lag_ms %+v, want %d sends, none early", lp.Rate, lp.DispatchLagMS, requests)
		}
		if lp.QueueMS.Count != requests || lp.QueueMS.Min == nil || *lp.QueueMS.Min < 0 {
			t.Errorf("rate %v: queue_ms %+v, want %d requests, none written early", lp.Rate, lp.QueueMS, requests)
			continue
		}
		bound := math.Inf(1)
		if span := float64(requests-1)/lp.Rate - *lp.QueueMS.Max/1000; span > 0 {
			bound = float64(requests-1) / span * (1 + 1e-9)
		}
		if a := lp.AchievedRatePerS; a == nil || *a <= 0 || *a > bound {
			t.Errorf("rate %v: achieved %v, want in (0, %v]", lp.Rate, lp.AchievedRatePerS, bound)
		}
		if g := lp.Goodput; g == nil || g.GoodRequests != requests || *g.AttainedPct != 100 {
			t.Errorf("rate %v: goodput %+v", lp.Rate, g)
		}
	}
	if r.Phases["load"].Requests != 2*requests {
		t.Errorf("phase total %d, want %d over both points", r.Phases["load"].Requests, 2*requests)
	}
}

func TestGoodputArithmetic(t *testing.T) {
	_, url := startSim(t, sim.Config{DecodeStep: time.Millisecond, TTFTBase: 20 * time.Millisecond})
	sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false, metadata: false}
phases:
  load: {concurrency: 4, requests: 20, max_tokens: 4, prompt_tokens: 32, slo: {ttft_ms: 1}}
`, url), nil)
	r, err := runFirst(t, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := r.Phases["load"].Points[0].Goodput
	// Every TTFT is at least the injected 20 ms: none meets a 1 ms SLO.
	if g.GoodRequests != 0 || *g.AttainedPct != 0 || *g.GoodRequestsPerS != 0 {
		t.Errorf("goodput %+v", g)
	}
}

// A load phase streams every request to the sink; it keeps them in the
// report too (point by point, in index order) only with report.samples on,
// so a soak run with samples off holds none in memory.
func TestLoadSamplesStreamedAndKept(t *testing.T) {
	_, url := startSim(t, sim.Config{DecodeStep: time.Millisecond})
	sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false, metadata: false}
phases:
  load: {sweep: {concurrency: [1, 3]}, requests: 15, max_tokens: 2, prompt_tokens: 16}
`, url), nil)
	for _, tc := range []struct {
		name string
		keep bool
	}{{"report.samples on", true}, {"report.samples off", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var got []report.RequestSample
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := Run(ctx, sc.Runs[0], Options{Protocol: openai.Protocol(), Samples: tc.keep, SampleSink: func(s report.RequestSample) { got = append(got, s) }})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 30 {
				t.Errorf("%d samples streamed, want 30", len(got))
			}
			kept, _ := r.Phases["load"].Samples.([]report.RequestSample)
			if !tc.keep {
				if r.Phases["load"].Samples != nil {
					t.Error("with report.samples off a load phase must keep no samples in memory")
				}
				return
			}
			if len(kept) != 30 {
				t.Fatalf("%d samples kept, want 30", len(kept))
			}
			for i, s := range kept {
				wantPoint, wantIndex := "concurrency 1", i
				if i >= 15 {
					wantPoint, wantIndex = "concurrency 3", i-15
				}
				if s.Phase != "load" || s.Point != wantPoint || s.Index != wantIndex || !s.OK {
					t.Errorf("sample %d: phase %q point %q index %d ok %v, want load, %q, %d, true", i, s.Phase, s.Point, s.Index, s.OK, wantPoint, wantIndex)
				}
			}
		})
	}
}

// What a load phase keeps in the report has a bound; the stream has none,
// and the report says how many samples it did not keep.
func TestLoadSamplesKeptUpToTheBound(t *testing.T) {
	_, url := startSim(t, sim.Config{DecodeStep: time.Millisecond})
	sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false, metadata: false}
phases:
  load: {sweep: {concurrency: [1, 3]}, requests: 6, max_tokens: 2, prompt_tokens: 16}
`, url), nil)
	var streamed atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := Run(ctx, sc.Runs[0], Options{Protocol: openai.Protocol(), Samples: true, MaxLoadSamples: 8, SampleSink: func(report.RequestSample) { streamed.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := r.Phases["load"].Samples.([]report.RequestSample)
	if len(kept) != 8 || streamed.Load() != 12 {
		t.Fatalf("kept %d (want 8), streamed %d (want 12)", len(kept), streamed.Load())
	}
	w := strings.Join(r.Phases["load"].Warnings, "\n")
	if !strings.Contains(w, "keeps the first 8 request samples") || !strings.Contains(w, "4 more went only to --samples-out") {
		t.Errorf("warnings %q", w)
	}
}

// A run, faults and interrupts included, leaves no goroutine behind.
func TestNoGoroutineLeftBehind(t *testing.T) {
	before := runtime.NumGoroutine()
	sc := parse(t, `
targets:
  e:
    kind: embedded
    retries: {max: 1, backoff: 1ms}
    sim:
      decode_step: 1ms
      faults:
        - {kind: http_503, every_nth: 4, retry_after: 0s}
        - {kind: reset_mid_stream, every_nth: 7}
phases:
  decode: {prompt: {text: hi}, max_tokens: 4, repeat: 6, max_error_rate: 1}
  load: {concurrency: 8, requests: 40, max_tokens: 4, prompt: {text: hi}, max_error_rate: 1}
`, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := Run(ctx, sc.Runs[0], Options{Protocol: openai.Protocol(), Grace: time.Second}); err != nil {
		t.Fatal(err)
	}
	// Interrupted half way through a load phase.
	ictx, icancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, icancel)
	_, _ = Run(ictx, sc.Runs[0], Options{Protocol: openai.Protocol(), Grace: 100 * time.Millisecond})
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after the runs, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
