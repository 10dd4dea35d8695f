package live

import (
	"context"
	"math"
	"reflect"
	"time"

	"github.com/tollgate-dev/tollgate/engine/load"
	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
	"github.com/tollgate-dev/tollgate/stats"
)

// Shape returns the report a live run will produce, with placeholder values,
// for checking gates when the scenario loads. It runs the very phase code a
// real run does, with a sender that answers every request with a placeholder
// result shaped like the real one (a 1-token answer has no decode interval,
// a non-streamed one no first token), so the keys a gate may read are
// exactly the keys a real run fills.
//
// Counts of requests (repeat, a warmup's requests) are capped at
// shapeRequests: the keys of a report do not grow with how many requests
// fill them, and a repeat of a million would otherwise be a million
// placeholder requests, and samples, at load.
func Shape(run *scenarios.Run, samples bool, protocol transport.Protocol) *report.Run {
	return shape(capCounts(run, shapeRequests), samples, protocol)
}

// shapeRequests is the most requests of one count a shape sends. No key
// depends on a count today; a few leave a margin should one come to need
// several requests, and TestShapeCountsCapped checks that more add none.
const shapeRequests = 3

// capCounts is run with every phase's request counts at most n; the
// phases are copies, so the run itself is left as loaded.
func capCounts(run *scenarios.Run, n int) *scenarios.Run {
	c := *run
	c.Phases = make([]*scenarios.Phase, len(run.Phases))
	for i, p := range run.Phases {
		q := *p
		q.Repeat = min(q.Repeat, n)
		if q.Requests.List == nil {
			q.Requests.Count = min(q.Requests.Count, n)
		}
		c.Phases[i] = &q
	}
	return &c
}

func shape(run *scenarios.Run, samples bool, protocol transport.Protocol) *report.Run {
	cfg := run.Target.OpenAI
	one := 1.0
	out := &report.Run{Phases: map[string]*report.Phase{}, PhaseOrder: []string{}}
	out.Target = report.Target{BaseURL: "http://shape", Model: "shape", ModelSource: "shape", Endpoint: cfg.Endpoint, ReadyMS: &one}
	if *cfg.Metadata {
		out.Target.Metadata = map[string]any{"*": map[string]any{"*": 1.0}}
	}
	clock := measure.ArrivalKernel
	if cfg.ArrivalClock == "read" {
		clock = measure.ArrivalRead
	}
	send := &shapeSender{clock: clock, serverTimings: !run.Target.Embedded(), reasoning: -1, uncountedReasoning: protocol.UncountedReasoning}
	if run.Target.Embedded() && cfg.Sim != nil {
		send.reasoning = cfg.Sim.ReasoningTokens
	}
	r := &runner{run: run, cfg: cfg, send: send, model: "shape", opts: Options{Samples: samples},
		out: out, metrics: *cfg.Metrics, hard: context.Background()}
	// Placeholders never fail, so neither does the fold.
	_ = r.phases(context.Background())
	return out
}

// shapeSender answers without a network.
type shapeSender struct {
	clock string
	// serverTimings: the target may report per-request timings (a live
	// server; the embedded simulator never does).
	serverTimings bool
	// reasoning is the simulator's reasoning tokens; -1 for a live server,
	// which may or may not reason.
	reasoning int
	// uncountedReasoning: the protocol's usage counts no reasoning tokens
	// (Protocol.UncountedReasoning).
	uncountedReasoning bool
	scrapes            int
}

// placeholder is a successful result for req with every value the real
// client would measure for such a request, and only those: its metrics are
// measure.Derive's over a synthetic timeline shaped like the real one (a
// 1-token answer has no decode interval, a non-streamed one no first
// token, a tool call no answer content), so the presence rules are the
// client's own.
func (s *shapeSender) stream(_ context.Context, req *measure.Request, out *measure.Result) {
	*out = s.result(*req)
}

// result is the shape's answer to req.
func (s *shapeSender) result(req measure.Request) measure.Result {
	one, f := 1, 1.0
	completion := max(req.MaxTokens, 2)
	if req.MaxTokens == 1 {
		completion = 1
	}
	res := measure.Result{HTTPStatus: 200}
	res.Reply = shapeReply(req)
	tools := res.Reply != nil && len(res.Reply.ToolCalls) > 0
	reasoning := max(s.reasoning, 0)
	if req.Endpoint == measure.EndpointCompletions {
		reasoning = 0
	}
	m := measure.Derive(s.timeline(req, completion, reasoning, tools))
	if s.reasoning < 0 && req.Endpoint != measure.EndpointCompletions {
		// A live server may or may not reason: what either answer has,
		// a gate may read.
		unionMetrics(&m, measure.Derive(s.timeline(req, completion, 2, tools)))
	}
	m.ConnectMS, m.RequestWriteMS = &f, &f
	m.TargetPromptTokens = req.TargetPromptTokens
	if req.Stream {
		m.ArrivalClock = s.clock
	}
	if s.serverTimings {
		// A live server may describe each request itself (llama.cpp's
		// timings); only its answers tell, so gates may read them.
		t := &measure.ServerTimings{Source: measure.ServerLlamaCppTimings, PromptN: &one, CacheN: &one, PredictedN: &completion,
			PromptMs: &f, PromptPerSecond: &f, PredictedMs: &f}
		if completion > 1 {
			// As the client's: no generation rate over a single token.
			t.PredictedPerTokenMs, t.PredictedPerSecond = &f, &f
		}
		m.Server = t
	}
	res.Metrics = m
	return res
}

// timeline is a successful answer of completion tokens, reasoning of them
// (at most) on the reasoning channel first, the rest answer text or, for a
// tool call, its arguments: counted by the server's usage (reasoning apart
// unless the protocol's usage does not count it), a prompt with some of it cached,
// and, streamed, at most two token events per channel a millisecond apart
// (enough for every interval; the counts come from the usage).
func (s *shapeSender) timeline(req measure.Request, completion, reasoning int, tools bool) *measure.Timeline {
	reasoning = min(reasoning, completion)
	ms := time.Millisecond
	tl := &measure.Timeline{Body: measure.BodyJSON, Headers: ms, HeadersSet: true, End: ms, UsageSeen: true, FinishReason: "length",
		Usage: measure.Usage{Source: measure.SourceUsage, Prompt: 2, Completion: completion, Cached: 1,
			PromptSet: true, CompletionSet: true, CachedSet: true}}
	if !s.uncountedReasoning {
		tl.Usage.Reasoning, tl.Usage.ReasonSet = reasoning, true
	}
	answer := completion - reasoning
	tl.ReasoningTextBytes = reasoning
	ch := measure.ChannelAnswer
	if tools {
		ch = measure.ChannelToolCall
	} else {
		tl.OutputTextBytes = answer
	}
	if !req.Stream {
		return tl
	}
	tl.Body, tl.Done = measure.BodyStream, true
	at := ms
	for _, c := range []struct {
		ch     measure.Channel
		tokens int
	}{{measure.ChannelReasoning, reasoning}, {ch, answer}} {
		for range min(c.tokens, 2) {
			at += ms
			_ = tl.Token(at, c.ch, 0) // no max_tokens bound: never errs
		}
	}
	tl.End = at + ms
	return tl
}

// unionMetrics gives m every optional figure it lacks that o has (the
// figures are report.RequestMetrics'; the stream's counts are not optional).
func unionMetrics(m *measure.Metrics, o measure.Metrics) {
	mv, ov := reflect.ValueOf(&m.RequestMetrics).Elem(), reflect.ValueOf(o.RequestMetrics)
	for i := range mv.NumField() {
		f := mv.Field(i)
		if (f.Kind() == reflect.Pointer || f.Kind() == reflect.Slice) && f.IsNil() {
			f.Set(ov.Field(i))
		}
	}
}

func (s *shapeSender) calibrate(_ context.Context, target int, _ int64, _ measure.CalibrateOptions) (measure.Calibration, error) {
	return measure.Calibration{Prompt: "shape", Words: 1, Tokens: target, Target: target, Method: "shape", Iterations: 1}, nil
}

// execute runs two jobs a millisecond apart, so every rate and duration of
// a load point is defined.
// An open loop's dispatch lag has figures, as the executor's would.
func (s *shapeSender) execute(ctx context.Context, plan load.Plan, job load.Job) load.Result {
	t0 := time.Unix(0, 0)
	t1 := t0.Add(time.Millisecond)
	job(ctx, 0, t0, t0)
	job(ctx, 1, t1, t1)
	res := load.Result{Sent: 2, Start: t0, LastSend: t1, End: t1, PeakInFlight: 1}
	if plan.Concurrency == 0 {
		res.DispatchLag = stats.New()
		_, _ = res.DispatchLag.Add(0), res.DispatchLag.Add(0)
	}
	return res
}

// scrapeMetrics gives one series of each type that changes between the
// scrapes around a phase, all named "*": the keys are the server's, unknown
// until it answers. A histogram's bounds are too, but for the +Inf bucket
// every histogram has.
func (s *shapeSender) scrapeMetrics(context.Context) (measure.Scrape, error) {
	s.scrapes++
	n := float64(s.scrapes)
	return measure.Scrape{Series: []measure.Series{
		{Key: "*", Family: "*", Type: measure.MetricCounter, Value: n},
		{Key: "*", Family: "*", Type: measure.MetricGauge, Value: n},
		{Key: "*", Family: "*", Type: measure.MetricHistogram, Count: n, Sum: n,
			Buckets: []measure.Bucket{{LE: "*", UpperBound: 1, Count: n}, {LE: "+Inf", UpperBound: math.Inf(1), Count: n}}},
		{Key: "*", Family: "*", Type: measure.MetricSummary, Count: n, Sum: n, Quantiles: []measure.Quantile{{Q: "*", Value: 1}}},
	}}, nil
}
