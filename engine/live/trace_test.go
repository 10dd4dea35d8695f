package live

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/sim"
	"github.com/tollgate-dev/tollgate/scenarios"
	"github.com/tollgate-dev/tollgate/workload"
)

// syncBuffer is a request log the simulator writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// writeMooncake writes n requests arriving every gap, each extending the
// previous prompt by one block (a conversation): request k has ids 0..k%8.
func writeMooncake(t testing.TB, dir string, n int, gap time.Duration, block int) string {
	t.Helper()
	path := filepath.Join(dir, "trace.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for k := 0; k < n; k++ {
		ids := make([]int64, k%8+1)
		for i := range ids {
			ids[i] = int64(i + 1000*(k/8))
		}
		j, _ := json.Marshal(map[string]any{"timestamp": float64(k) * float64(gap) / float64(time.Millisecond), "input_length": len(ids) * block, "output_length": 2, "hash_ids": ids})
		w.Write(j)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// A replay sends every request of the trace, never before its time, and
// the simulator's prefix cache sees the reuse the trace's hash ids imply.
// Nothing here depends on how promptly the machine runs the client or the
// simulator: the rate is bounded by the replay's own lateness (queue_ms),
// and the simulator serves one request at a time, so a prompt is looked up
// only after every request that reached a slot before it was cached.
func TestTraceReplayOnTheSimulator(t *testing.T) {
	log := &syncBuffer{}
	srv, url := startSim(t, sim.Config{DecodeStep: time.Millisecond, BlockTokens: 16, MaxRunningSeqs: 1, RequestLog: log})
	path := writeMooncake(t, t.TempDir(), 80, 10*time.Millisecond, 32)
	sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false, metadata: false}
phases:
  replay: {kind: trace, trace: {file: %q, block_tokens: 32, speed: 2}}
`, url, path), nil)
	t0 := time.Now().UnixNano() // before the phase's start
	r, err := runFirst(t, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = srv.Close() // flushes the request log
	ph := r.Phases["replay"]
	tr := ph.Trace
	if tr == nil || tr.Requests != 80 || tr.Sent != 80 || ph.Succeeded != 80 {
		t.Fatalf("trace %+v, succeeded %d", tr, ph.Succeeded)
	}
	// 80 requests 10 ms apart at speed 2: 200 req/s.
	if tr.TraceRatePerS == nil || math.Abs(*tr.TraceRatePerS-200) > 0.01 {
		t.Errorf("trace rate %v, want 200", tr.TraceRatePerS)
	}
	// Offsets are absolute: no write comes before its offset ÷ speed, and
	// none later than that plus the largest queue_ms, so the 79 gaps of the
	// writes span the trace's 395 ms, give or take that largest lateness.
	// A loaded machine makes queue_ms larger, and the bounds wider with it.
	if tr.QueueMS.Count != 80 || tr.QueueMS.Min == nil || *tr.QueueMS.Min < 0 || tr.QueueMS.Max == nil {
		t.Fatalf("queue_ms %+v, want 80 requests, none written early", tr.QueueMS)
	}
	t.Logf("achieved %s req/s, queue_ms min %.3g max %.3g, server hit rate %s", fmtPtr(tr.AchievedRatePerS), *tr.QueueMS.Min, *tr.QueueMS.Max, fmtPtr(tr.ServerCacheHitRate))
	span, late := 79/200.0, *tr.QueueMS.Max/1000
	hi := math.Inf(1)
	if span > late {
		hi = 79 / (span - late) * (1 + 1e-9)
	}
	if lo := 79 / (span + late) * (1 - 1e-9); tr.AchievedRatePerS == nil || *tr.AchievedRatePerS < lo || *tr.AchievedRatePerS > hi {
		t.Errorf("achieved rate %v, want within [%.4g, %.4g] (queue_ms max %.3g): a replay keeps the trace's clock", fmtPtr(tr.AchievedRatePerS), lo, hi, *tr.QueueMS.Max)
	}
	// Never early, by the simulator's clock: the k-th request to arrive
	// came no sooner than the k-th trace offset (k × 5 ms at speed 2) after
	// t0, which precedes the phase's start. (queue_ms ≥ 0 alone would pass
	// a replay that got the offsets wrong: it is measured against them.)
	var arrivals []int64
	for line := range bytes.Lines(log.b.Bytes()) {
		var rec sim.RequestRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("request log: %v", err)
		}
		arrivals = append(arrivals, rec.ArrivalUnixNs)
	}
	if len(arrivals) != 80 {
		t.Fatalf("%d requests in the simulator's log, want 80", len(arrivals))
	}
	slices.Sort(arrivals)
	const slackNs = int64(time.Millisecond) // wall clocks, not monotonic ones
	for k, a := range arrivals {
		if due := t0 + int64(k)*int64(5*time.Millisecond); a < due-slackNs {
			t.Errorf("arrival %d came %.3f ms after t0, before its offset %d ms", k, float64(a-t0)/1e6, 5*k)
			break
		}
	}
	// Of each conversation of 8 (1+2+…+8 = 36 blocks), 28 blocks repeat
	// an earlier prompt's: 7/9 implied.
	if tr.TraceCacheHitRate == nil || math.Abs(*tr.TraceCacheHitRate-28.0/36) > 1e-9 {
		t.Errorf("trace hit rate %v, want %v", tr.TraceCacheHitRate, 28.0/36)
	}
	// At one slot a prompt is looked up only after the requests served
	// before it were cached, whatever order the requests of a conversation
	// reach the slot in: at worst (longest first) 24.5 of its 36 blocks
	// hit, 0.68; in trace order 28, 0.78 (0.742 measured, idle and loaded).
	if tr.ServerCacheHitRate == nil || *tr.ServerCacheHitRate < 0.6 {
		t.Errorf("server hit rate %v: the same hash ids must give the same prompt text", fmtPtr(tr.ServerCacheHitRate))
	}
	if tr.TraceInputTokens != int64(36*10*32) {
		t.Errorf("trace input tokens %d", tr.TraceInputTokens)
	}
	// One word a token on the simulator: the prompts are the trace's size,
	// plus the chat template's few tokens.
	if ph.PromptTokens.Min == nil || *ph.PromptTokens.Min < 32 || *ph.PromptTokens.Min > 40 {
		t.Errorf("prompt tokens %+v, want the trace's 32 and a template", ph.PromptTokens)
	}
}

// The same hash id is the same text within a run; a new seed (run) gives
// new text, and a block cut short is a prefix of the whole one.
func TestTracePromptBlocks(t *testing.T) {
	e := workload.Entry{InputTokens: 40, HashIDs: []int64{7, 9}}
	a := tracePrompt(1, 0, e, 32)
	b := tracePrompt(1, 5, workload.Entry{InputTokens: 64, HashIDs: []int64{7, 9}}, 32)
	if !strings.HasPrefix(b, a) {
		t.Errorf("a block cut short must be a prefix of the whole one")
	}
	if got := workload.EstimateTokens(a); got != 40 {
		t.Errorf("prompt of %d tokens by the simulator's count, want 40", got)
	}
	if tracePrompt(2, 0, e, 32) == a {
		t.Errorf("another run's seed gave the same text")
	}
	c := tracePrompt(1, 3, workload.Entry{InputTokens: 48}, 32)
	d := tracePrompt(1, 4, workload.Entry{InputTokens: 48}, 32)
	if c == d || workload.EstimateTokens(c) != 48 {
		t.Errorf("requests without ids need prompts of their own, of their size")
	}
}

// Memory of a replay does not grow with the trace: the schedule holds only
// requests between the dispatcher and their jobs (and the hash ids seen,
// up to their bound). Bounded by bytes, not time: over a 4,000-request
// trace the live heap after a GC may grow, between a quarter of the way
// and the end, by at most 256 bytes a request, where holding each request
// built (a prompt of 64 to 512 words, and its body) would be several KB.
// BenchmarkTraceReplaySchedule streams a long trace and reports its peak.
func TestTraceReplayMemoryIsBounded(t *testing.T) {
	const n, block = 4000, 64
	sched, done := traceScheduleOf(t, n, block)
	defer done()
	var quarter uint64
	for i := 0; i < n; i++ {
		if i == n/4 {
			quarter = liveHeap()
		}
		sched.Offset(i)
		if _, ok := sched.take(i); !ok {
			t.Fatalf("request %d not built", i)
		}
	}
	end := liveHeap()
	if sched.err != nil {
		t.Fatal(sched.err)
	}
	grown := int64(end) - int64(quarter)
	perRequest := float64(grown) / float64(n-n/4)
	t.Logf("live heap %d KB at request %d, %d KB at %d: %.0f bytes a request", quarter>>10, n/4, end>>10, n, perRequest)
	if perRequest > 256 {
		t.Errorf("the live heap grew %.0f bytes a request over the replay (%d KB): the schedule keeps what it handed out", perRequest, grown>>10)
	}
	runtime.KeepAlive(sched)
}

// BenchmarkTraceReplaySchedule streams b.N requests of a Mooncake trace
// (prompts up to 8 × 512 tokens) through the schedule, each built and
// taken as a replay would: allocations a request, and the peak of the Go
// heap in use while replaying (sampled every 10,000 requests), which does
// not grow with b.N (e.g. -benchtime 100000x).
func BenchmarkTraceReplaySchedule(b *testing.B) {
	sched, done := traceScheduleOf(b, b.N, 512)
	defer done()
	runtime.GC()
	var m runtime.MemStats
	peak := uint64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sched.Offset(i)
		if _, ok := sched.take(i); !ok {
			b.Fatalf("request %d not built", i)
		}
		if i%10_000 == 0 {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&m)
	peak = max(peak, m.HeapInuse)
	if sched.err != nil {
		b.Fatal(sched.err)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

// traceScheduleOf is the schedule of a replay of an n-request Mooncake
// trace (writeMooncake, blocks of block tokens), building each request as
// the runner does; done closes the trace.
func traceScheduleOf(t testing.TB, n, block int) (*traceSchedule, func()) {
	t.Helper()
	path := writeMooncake(t, t.TempDir(), n, time.Millisecond, block)
	p := &scenarios.Phase{Name: "replay", Kind: scenarios.PhaseTrace}
	p.Trace = scenarios.TraceSpec{File: path, Format: workload.FormatMooncake, BlockTokens: block}
	s, err := workload.Summarize(path, workload.FormatMooncake, 0, 0, 0)
	if err != nil || s.Requests != n {
		t.Fatalf("summary %+v %v", s, err)
	}
	p.TraceInfo = &scenarios.TraceInfo{TraceSummary: s, Path: path, Scale: 1}
	tr, err := workload.OpenTrace(path, workload.FormatMooncake)
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{cfg: &scenarios.OpenAITarget{Stream: new(bool)}}
	sched := &traceSchedule{r: tr, p: p, info: p.TraceInfo, stop: func() {}, ready: map[int]tracedRequest{}, seen: map[int64]struct{}{},
		build: func(i int, e workload.Entry) measure.Request {
			return r.request(tracePrompt(1, i, e, block), nil, e.OutputTokens)
		}}
	return sched, func() { _ = tr.Close() }
}

// liveHeap is the Go heap's live bytes, just after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestTraceReplayAccuracy measures how closely a replay keeps the trace's
// clock, at the simulator: each request's arrival in the simulator's
// request log against its trace timestamp. A measurement, not a check:
// TOLLGATE_MEASURE=1 go test ./engine/live -run TestTraceReplayAccuracy -v
func TestTraceReplayAccuracy(t *testing.T) {
	if os.Getenv("TOLLGATE_MEASURE") == "" {
		t.Skip("a measurement: set TOLLGATE_MEASURE=1")
	}
	const n, rate = 2000, 200.0
	log := &syncBuffer{}
	srv, url := startSim(t, sim.Config{DecodeStep: time.Millisecond, RequestLog: log})
	path := writeMooncake(t, t.TempDir(), n, time.Duration(float64(time.Second)/rate), 64)
	sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false, metadata: false}
phases:
  replay: {kind: trace, trace: {file: %q, block_tokens: 64}}
`, url, path), nil)
	r, err := runFirst(t, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = srv.Close() // flushes the request log
	var arrivals []int64
	sc2 := bufio.NewScanner(bytes.NewReader(log.b.Bytes()))
	for sc2.Scan() {
		var rec sim.RequestRecord
		if json.Unmarshal(sc2.Bytes(), &rec) == nil {
			arrivals = append(arrivals, rec.ArrivalUnixNs)
		}
	}
	if len(arrivals) != n {
		t.Fatalf("%d arrivals logged, want %d (flush?)", len(arrivals), n)
	}
	slices.Sort(arrivals)
	// The k-th arrival against the k-th trace time (the trace is evenly
	// spaced), from the least late request: lateness ≥ 0 by construction.
	gap := float64(time.Second) / rate
	late := make([]float64, n)
	t0 := math.Inf(1)
	for k, a := range arrivals {
		t0 = math.Min(t0, float64(a)-float64(k)*gap)
	}
	for k, a := range arrivals {
		late[k] = (float64(a) - float64(k)*gap - t0) / 1e6
	}
	slices.Sort(late)
	q := func(p float64) float64 { return late[int(math.Ceil(p/100*float64(n)))-1] }
	tr := r.Phases["replay"].Trace
	t.Logf("replay of %d requests at %.0f req/s: arrival at the simulator vs the trace's timestamp: p50 %.3f ms, p99 %.3f ms, max %.3f ms; client queue_ms p50 %.3f p99 %.3f; achieved %.2f req/s",
		n, rate, q(50), q(99), late[n-1], *tr.QueueMS.P50, *tr.QueueMS.P99, *tr.AchievedRatePerS)
}

// A trace that changed after the scenario loaded, so that a request now
// lies past the window's span (which load bounded, scaled, by
// scenarios.MaxTraceReplay), ends the replay with an error naming its
// line: it is not scheduled years ahead, nor wrapped to be sent at once.
func TestTraceChangedAfterLoad(t *testing.T) {
	_, url := startSim(t, sim.Config{DecodeStep: time.Millisecond})
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	line := func(ms string) string {
		return `{"timestamp": ` + ms + `, "input_length": 4, "output_length": 2}` + "\n"
	}
	if err := os.WriteFile(path, []byte(line("0")+line("10")+line("20")), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := parse(t, fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: %q, metrics: false, metadata: false}
phases:
  replay: {kind: trace, trace: {file: %q}}
`, url, path), nil)
	// Three years later, within the trace's own bound: past the span load found.
	if err := os.WriteFile(path, []byte(line("0")+line("10")+line("100000000000")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := runFirst(t, sc, nil)
	if err == nil || !errors.Is(err, ErrPhase) || !strings.Contains(err.Error(), path+":3: 27777h46m40s into the window, past its last request (20ms) when the scenario loaded (did the trace change?)") {
		t.Fatalf("error %v: want ErrPhase naming line 3 and the change", err)
	}
}
