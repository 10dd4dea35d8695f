// Command client measures tollgate's own client against `tollgate serve` in a
// separate process, to show the client is never the bottleneck of its own
// measurements. Run it by hand (not in CI): go run ./bench/client
//
// Each figure prints with the command that reproduces it.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tollgate-dev/tollgate/bench/internal/rounds"
	"github.com/tollgate-dev/tollgate/bench/internal/serve"
	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/engine/sim"
)

func main() {
	only := flag.String("only", "", "run one measurement: streams, cpu, ttft, rate")
	flag.IntVar(&streamCount, "streams", streamCount, "concurrent streams of the streams measurement (at most the open-file limit less a few)")
	flag.Parse()
	if err := run(*only); err != nil {
		fmt.Fprintln(os.Stderr, "bench/client:", err)
		os.Exit(1)
	}
}

type env struct {
	dir, bin string
}

func run(only string) error {
	dir, err := os.MkdirTemp("", "tollgate-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	e := &env{dir: dir, bin: filepath.Join(dir, "tollgate")}
	if out, err := exec.Command("go", "build", "-o", e.bin, "./cmd/tollgate").CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v\n%s", err, out)
	}
	fmt.Printf("host: %s\n\n", hostFacts())
	for _, m := range []struct {
		name string
		fn   func(*env) error
	}{{"streams", streams}, {"cpu", cpuPerEvent}, {"ttft", ttftError}, {"rate", openLoopRate}} {
		if only != "" && only != m.name {
			continue
		}
		if err := m.fn(e); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		fmt.Println()
	}
	return nil
}

func hostFacts() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	model := ""
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			model = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
			break
		}
	}
	return fmt.Sprintf("%s, %d CPUs visible", model, rounds.NumCPU())
}

// cpuSeconds reads a live process's user+system CPU from /proc.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return math.NaN()
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var ut, st float64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return (ut + st) / 100 // USER_HZ
}

type runResult struct {
	report   map[string]any
	cpuS     float64
	maxRSSKB int64 // the child's peak resident set (getrusage ru_maxrss, KiB)
	// windowRSSKB is the most VmRSS the child had within the window asked
	// of runWindow (sampled every 20 ms from /proc); 0 without one.
	windowRSSKB int64
	wall        time.Duration
	samples     string
}

// tollgate runs a scenario in a child process and returns its report and CPU time.
func (e *env) tollgate(name, scenario string, extra ...string) (*runResult, error) {
	return e.tollgateWindow(name, scenario, 0, extra...)
}

// tollgateWindow is tollgate, also sampling the child's resident set for
// the first window of its run (runWindow).
func (e *env) tollgateWindow(name, scenario string, window time.Duration, extra ...string) (*runResult, error) {
	samples := filepath.Join(e.dir, name+".samples.jsonl")
	return e.runWindow(name, scenario, window, append([]string{"--samples-out", samples}, extra...)...)
}

// run is tollgate without --samples-out: nothing streamed to a file beside
// the load, so its CPU is the load's.
func (e *env) run(name, scenario string, extra ...string) (*runResult, error) {
	return e.runWindow(name, scenario, 0, extra...)
}

// runWindow is run; with a window, it also records the most resident
// memory the child had in the first window of its run.
func (e *env) runWindow(name, scenario string, window time.Duration, extra ...string) (*runResult, error) {
	path := filepath.Join(e.dir, name+".yaml")
	if err := os.WriteFile(path, []byte(scenario), 0o644); err != nil {
		return nil, err
	}
	rep := filepath.Join(e.dir, name+".json")
	samples := ""
	for i, a := range extra {
		if a == "--samples-out" && i+1 < len(extra) {
			samples = extra[i+1]
		}
	}
	args := append([]string{"run", path, "--json-out", rep, "--quiet", "--no-gate"}, extra...)
	cmd := exec.Command(e.bin, args...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("tollgate %s: %w", strings.Join(args, " "), err)
	}
	var windowRSS atomic.Int64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		if window <= 0 {
			return
		}
		for time.Since(start) < window {
			if kb := vmRSSKB(cmd.Process.Pid); kb > windowRSS.Load() {
				windowRSS.Store(kb)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	err := cmd.Wait()
	<-sampled
	if err != nil {
		return nil, fmt.Errorf("tollgate %s: %w", strings.Join(args, " "), err)
	}
	r := &runResult{wall: time.Since(start), samples: samples, windowRSSKB: windowRSS.Load()}
	r.cpuS = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSSKB = ru.Maxrss
	}
	b, err := os.ReadFile(rep)
	if err != nil {
		return nil, err
	}
	return r, json.Unmarshal(b, &r.report)
}

// vmRSSKB is a process's resident set now (VmRSS, KiB); 0 once it is gone.
func vmRSSKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func point(r *runResult) map[string]any {
	pts, _ := dig(r.report, "runs", "server", "phases", "load", "points").([]any)
	if len(pts) == 0 {
		return nil
	}
	m, _ := pts[0].(map[string]any)
	return m
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

const loadScenario = `targets:
  server: {kind: openai, base_url: %q, metadata: false, metrics: false, ready_timeout: 10s,
           timeouts: {connect: 30s, total: 5m}, arrival_clock: kernel}
phases:
  load:
    kind: load
    %s
    prompt_tokens: %d
    max_tokens: %d
    prompt: {calibrate: false}
    max_error_rate: 0
report: {samples: false}
`

// streamCount is the streams measurement's concurrency (-streams).
var streamCount = 2000

// streams holds streamCount streams open at once, every one of them in
// flight together (requests = concurrency, each long enough to outlast
// the ramp), and reports the client's resident memory per open stream: the
// peak RSS of that run less that of a run of base streams, over the
// difference in streams, so start-up, the binary and the report are not
// counted. The peak is of the whole run, the end included, where finished
// streams' results are folded into the phase's histograms while the
// memory the streams held is not yet collected; the same difference of
// the most RSS while every stream is still open (before the first can
// end) is printed beside it.
func streams(e *env) error {
	const base, tokens = 100, 100
	c := streamCount
	if c <= base {
		return fmt.Errorf("-streams %d: at least %d", c, base+1)
	}
	// 200 ms steps: a stream lasts 20 s or more, the ramp to c streams is
	// well inside it, and the client's reads stay a small part of its time.
	srv, err := serve.Start(e.bin, "--max-running-seqs", strconv.Itoa(2*c), "--decode-step", "200ms", "--decode-step-per-seq", "1us")
	if err != nil {
		return err
	}
	defer srv.Stop()
	// No stream ends before tokens steps of 200 ms from its own send:
	// until then every stream the run has started is still open.
	const open = tokens * 200 * time.Millisecond * 9 / 10
	var baseRSS, baseOpenRSS int64
	for _, n := range []int{base, c} {
		r, err := e.tollgateWindow(fmt.Sprintf("streams-%d", n), fmt.Sprintf(loadScenario, srv.URL, fmt.Sprintf("concurrency: %d\n    requests: %d", n, n), 64, tokens), open)
		if err != nil {
			return err
		}
		p := point(r)
		if n == base {
			baseRSS, baseOpenRSS = r.maxRSSKB, r.windowRSSKB
			continue
		}
		perStream := float64(r.maxRSSKB-baseRSS) * 1024 / float64(c-base)
		perOpen := float64(r.windowRSSKB-baseOpenRSS) * 1024 / float64(c-base)
		fmt.Printf("== %d concurrent streams (%d tokens each, 200 ms steps)\n", c, tokens)
		fmt.Printf("   requests %v ok %v errors %v, peak in flight %v, ttft p99 %.1f ms, wall %.1fs\n",
			p["requests"], p["succeeded"], dig(p, "errors", "count"), p["peak_in_flight"], num(dig(p, "ttft_ms", "p99")), r.wall.Seconds())
		fmt.Printf("   client peak RSS %.1f MiB at %d streams, %.1f MiB at %d: %.1f KB per open stream\n",
			float64(r.maxRSSKB)/1024, c, float64(baseRSS)/1024, base, perStream/1000)
		fmt.Printf("   while all are open (first %v): %.1f MiB at %d, %.1f MiB at %d: %.1f KB per open stream\n",
			open, float64(r.windowRSSKB)/1024, c, float64(baseOpenRSS)/1024, base, perOpen/1000)
		fmt.Printf("   reproduce: go run ./bench/client -only streams -streams %d\n", c)
		if num(dig(p, "errors", "count")) != 0 || num(p["peak_in_flight"]) < float64(c) {
			return errors.New("did not hold every stream without errors")
		}
	}
	return nil
}

func cpuPerEvent(e *env) error {
	const c, n, tokens = 256, 1024, 256
	srv, err := serve.Start(e.bin, "--max-running-seqs", "1024", "--decode-step", "10ms", "--decode-step-per-seq", "1us")
	if err != nil {
		return err
	}
	defer srv.Stop()
	simBefore := cpuSeconds(srv.PID)
	r, err := e.tollgate("cpu", fmt.Sprintf(loadScenario, srv.URL, fmt.Sprintf("concurrency: %d\n    requests: %d", c, n), 64, tokens))
	if err != nil {
		return err
	}
	simCPU := cpuSeconds(srv.PID) - simBefore
	p := point(r)
	events := num(dig(p, "sse_token_events", "mean")) * num(p["succeeded"])
	fmt.Printf("== client CPU per received token event (%d streams × %d tokens)\n", c, tokens)
	fmt.Printf("   tollgate process CPU %.2fs (user+sys, whole process incl. start-up and report) over %.0f token events = %.2f µs/event\n",
		r.cpuS, events, r.cpuS/events*1e6)
	fmt.Printf("   simulator process CPU %.2fs over the same run (wall %.1fs, %d cores): %.0f%% of one core\n",
		simCPU, r.wall.Seconds(), rounds.NumCPU(), simCPU/r.wall.Seconds()*100)
	fmt.Printf("   tpot p50 %.2f ms (configured step 10 ms + 1 µs × 255 = 10.26 ms): the simulator kept its schedule\n", num(dig(p, "tpot_ms", "p50")))
	fmt.Printf("   reproduce: go run ./bench/client -only cpu\n")
	return nil
}

// ttftError pairs, request by request, the client's TTFT with the
// server's own record of the same request (tollgate serve --request-log):
// the figures are the client's error, not a difference of two percentiles.
// Both arrival clocks run in the same open loop, alternating request by
// request, so they see the same load. One row per load: 1, 32, 256 and
// 1,000 streams in flight, each at 100 tokens/s (10 ms steps).
func ttftError(e *env) error {
	for _, row := range []struct{ streams, tokens, n int }{
		{1, 32, 30}, {32, 64, 400}, {256, 128, 1500}, {1000, 128, 4000},
	} {
		if err := ttftRow(e, row.streams, row.tokens, row.n); err != nil {
			return fmt.Errorf("%d streams: %w", row.streams, err)
		}
	}
	fmt.Printf("   reproduce: go run ./bench/client -only ttft\n")
	return nil
}

// ttftRow is one row of ttftError: an open loop whose arrivals keep about
// streams requests of tokens tokens in flight, spread in time (a closed
// loop would send in synchronised bursts, which on few shared cores
// measures the scheduler more than either process).
func ttftRow(e *env, streams, tokens, n int) error {
	const base, step, perSeq = 50 * time.Millisecond, 10 * time.Millisecond, time.Microsecond
	life := base + time.Duration(tokens)*(step+time.Duration(streams)*perSeq)
	rate := float64(streams) / life.Seconds()
	logPath := filepath.Join(e.dir, fmt.Sprintf("requests-%d.jsonl", streams))
	srv, err := serve.Start(e.bin, "--max-running-seqs", "2048", "--ttft-base", base.String(), "--prefill-tokens-per-s", "1e12",
		"--decode-step", step.String(), "--decode-step-per-seq", perSeq.String(), "--request-log", logPath)
	if err != nil {
		return err
	}
	defer srv.Stop()
	clocks := []struct {
		name      string
		userspace bool
	}{{"kernel", false}, {"read", true}}
	clients := make([]*openai.Client, len(clocks))
	for i, c := range clocks {
		cl, err := openai.New(openai.Config{BaseURL: srv.URL, MaxConns: 2 * streams, UserspaceClock: c.userspace, TotalTimeout: 5 * time.Minute})
		if err != nil {
			return err
		}
		defer cl.Close()
		clients[i] = cl
	}

	type sample struct {
		clock    int
		ttft     float64   // client TTFT, ms
		sentAt   time.Time // the client's GetConn hook: just after its own start
		calledAt time.Time // just before Stream: a bound on how early its start can be
		events   int       // token events
		// coalesced are the token events that came in one read with the one
		// before; firstShared: the first token's read held the next.
		coalesced   int
		firstShared bool
		err         error
	}
	samples := make([]sample, n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var inFlight, peak atomic.Int64
	begin := time.Now()
	for i := range n {
		if err := sleepUntil(ctx, begin.Add(time.Duration(float64(i)/rate*float64(time.Second)))); err != nil {
			return err
		}
		wg.Go(func() {
			sm := &samples[i]
			sm.clock = i % len(clocks)
			rctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
				GetConn: func(string) { sm.sentAt = time.Now() },
			})
			k := inFlight.Add(1)
			for p := peak.Load(); k > p && !peak.CompareAndSwap(p, k); p = peak.Load() {
			}
			defer inFlight.Add(-1)
			sm.calledAt = time.Now()
			res, err := clients[sm.clock].Stream(rctx, openai.Request{
				Messages:  []openai.Message{{Role: "user", Content: fmt.Sprintf("ttft pairing request %d", i)}},
				MaxTokens: tokens, Stream: true,
				ExtraBody: map[string]any{"request_id": fmt.Sprintf("bench-%d", i)},
			})
			switch {
			case err != nil:
				sm.err = err
			case res.TTFTMS == nil:
				sm.err = errors.New("no TTFT")
			default:
				sm.ttft = *res.TTFTMS
				sm.events = res.SSETokenEvents
				sm.coalesced, sm.firstShared = coalesced(res.Metrics)
			}
		})
	}
	wg.Wait()
	srv.Stop() // flushes the request log
	recs, err := readRequestLog(logPath)
	if err != nil {
		return err
	}

	// Per request, per clock: (a) client TTFT − server TTFT (arrival → first
	// token send), which adds the request's trip to the server; (b) client
	// arrival of the first token − the server's send of it, both wall clocks
	// on this host: the arrival clock's own error plus loopback delivery.
	ttftDiff := make([][]float64, len(clocks))
	arrDiff := make([][]float64, len(clocks))
	events := make([]int, len(clocks))
	coal := make([]int, len(clocks))
	shared := make([]int, len(clocks))
	var lead []float64 // GetConn − call: bounds (b)'s overestimate
	failed := 0
	for i, sm := range samples {
		r, ok := recs["chatcmpl-bench-"+strconv.Itoa(i)]
		if sm.err != nil || !ok || r.FirstTokenSendUnixNs == 0 {
			failed++
			continue
		}
		serverTTFT := float64(r.FirstTokenSendUnixNs-r.ArrivalUnixNs) / 1e6
		ttftDiff[sm.clock] = append(ttftDiff[sm.clock], sm.ttft-serverTTFT)
		clientArrival := float64(sm.sentAt.UnixNano())/1e6 + sm.ttft
		arrDiff[sm.clock] = append(arrDiff[sm.clock], clientArrival-float64(r.FirstTokenSendUnixNs)/1e6)
		lead = append(lead, float64(sm.sentAt.Sub(sm.calledAt).Nanoseconds())/1e6)
		events[sm.clock] += sm.events
		coal[sm.clock] += sm.coalesced
		if sm.firstShared {
			shared[sm.clock]++
		}
	}
	fmt.Printf("== TTFT error at %d streams × %d tokens, 100 tok/s: paired per request by id, open loop %.1f/s, %d requests (%d failed or unpaired), peak %d in flight\n",
		streams, tokens, rate, n, failed, peak.Load())
	for c, clk := range clocks {
		fmt.Printf("   clock %-6s client TTFT − server TTFT:          %s\n", clk.name, quantiles(ttftDiff[c]))
		fmt.Printf("   clock %-6s first token: client arrival − send: %s\n", clk.name, quantiles(arrDiff[c]))
		fmt.Printf("   clock %-6s coalesced token events %d of %d (%.2f%%), first token shared its read in %d of %d requests\n",
			clk.name, coal[c], events[c], 100*float64(coal[c])/float64(max(events[c], 1)), shared[c], len(arrDiff[c]))
	}
	fmt.Printf("   (client start ≤ its GetConn hook; GetConn − call to Stream: %s)\n", quantiles(lead))
	if failed > n/100 {
		return fmt.Errorf("%d of %d requests failed or were not in the request log", failed, n)
	}
	return nil
}

// coalesced reads a request's coalesced_events and ttft_coalesced through
// its JSON, so this program also measures a client from before they were
// counted (both then read 0).
func coalesced(m openai.Metrics) (int, bool) {
	b, err := json.Marshal(m)
	if err != nil {
		return 0, false
	}
	var v struct {
		Events int  `json:"coalesced_events"`
		First  bool `json:"ttft_coalesced"`
	}
	_ = json.Unmarshal(b, &v)
	return v.Events, v.First
}

// quantiles formats p50/p90/p99/max of xs in ms.
func quantiles(xs []float64) string {
	if len(xs) == 0 {
		return "no samples"
	}
	xs = slices.Clone(xs)
	sort.Float64s(xs)
	q := func(p float64) float64 { return xs[max(0, int(math.Ceil(float64(len(xs))*p/100))-1)] }
	return fmt.Sprintf("p50 %.3f  p90 %.3f  p99 %.3f  max %.3f ms  (n %d)", q(50), q(90), q(99), xs[len(xs)-1], len(xs))
}

// sleepUntil waits until t or ctx's end.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readRequestLog reads the simulator's request log, keyed by request id.
func readRequestLog(path string) (map[string]sim.RequestRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs := map[string]sim.RequestRecord{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r sim.RequestRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("request log %s: %w", path, err)
		}
		recs[r.ID] = r
	}
	return recs, sc.Err()
}

// openLoopRate offers 1,000 and 3,000 short streams per second (16
// tokens each, constant arrivals, 5 s) to a server in its own process that
// logs each request's arrival, and prints the rate the server saw beside
// the client's own account, with the client's CPU per request (the whole
// process: start-up and the report, about 30 ms, are under 2 µs a
// request at these counts). The server's decode steps are 1 ms and its
// prefill free, so it is not the limit.
func openLoopRate(e *env) error {
	for _, rate := range []int{1000, 3000} {
		n := 5 * rate
		log := filepath.Join(e.dir, fmt.Sprintf("requests-%d.jsonl", rate))
		srv, err := serve.Start(e.bin, "--max-running-seqs", "8192", "--decode-step", "1ms", "--decode-step-per-seq", "1ns",
			"--ttft-base", "1ms", "--prefill-tokens-per-s", "1e12", "--request-log", log)
		if err != nil {
			return err
		}
		r, err := e.run(fmt.Sprintf("rate-%d", rate), fmt.Sprintf(loadScenario, srv.URL, fmt.Sprintf("rate: %d\n    arrival: constant\n    requests: %d", rate, n), 32, 16))
		srv.Stop()
		if err != nil {
			return err
		}
		recs, err := readRequestLog(log)
		if err != nil {
			return err
		}
		first, last := int64(math.MaxInt64), int64(math.MinInt64)
		for _, rec := range recs {
			first, last = min(first, rec.ArrivalUnixNs), max(last, rec.ArrivalUnixNs)
		}
		server := math.NaN()
		if len(recs) > 1 {
			server = float64(len(recs)-1) / (float64(last-first) / 1e9)
		}
		p := point(r)
		got := num(p["achieved_rate_per_s"])
		fmt.Printf("== open loop at %d requests/s (%d requests of 16 tokens, constant arrivals)\n", rate, n)
		fmt.Printf("   server's request log: %d requests arrived, %.2f/s (%+.3f%% of target)\n", len(recs), server, (server-float64(rate))/float64(rate)*100)
		fmt.Printf("   client's report: achieved %.2f/s (%+.3f%% of target), queue_ms p50 %.3f p99 %.3f max %.3f, dispatch lag p99 %.3f ms, errors %v\n",
			got, (got-float64(rate))/float64(rate)*100, num(dig(p, "queue_ms", "p50")), num(dig(p, "queue_ms", "p99")), num(dig(p, "queue_ms", "max")),
			num(dig(p, "dispatch_lag_ms", "p99")), dig(p, "errors", "count"))
		fmt.Printf("   client CPU: %.1f µs per request (%.2f s for %d), %.2f cores at this rate\n", r.cpuS/float64(n)*1e6, r.cpuS, n, r.cpuS/r.wall.Seconds())
	}
	fmt.Printf("   reproduce: go run ./bench/client -only rate\n")
	return nil
}
