// Package live is the executor for live targets: any OpenAI-compatible
// server (kind openai), tollgate's embedded simulator (kind embedded), or
// another wire protocol's server (e.g. kind anthropic), each through the
// transport.Protocol its engine.Drivers entry names.
// Each phase kind lives in its own file and is registered by its row in
// scenarios' phaseKindTable, from which Kinds is generated (PhaseKind says
// what else a new kind touches); the
// shape that gates are checked against comes from running the very same
// phase code over placeholder results (shape.go), so there is no second,
// hand-written copy of the report's shape.
package live

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/engine/embedded"
	"github.com/tollgate-dev/tollgate/engine/load"
	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/internal/redact"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// Options for a live run.
type Options struct {
	// LookupEnv resolves api_key_env; nil means no environment.
	LookupEnv func(string) (string, bool)
	// Samples keeps every request in the report.
	Samples bool
	// OnProgress, when set, gets a live view of load phases a few times a second.
	OnProgress func(Progress)
	// Grace is how long requests in flight may finish after ctx ends (an
	// interrupt): sending stops at once, measuring a little later.
	Grace time.Duration
	// SampleSink, when set, receives every request sample as it completes
	// (from any goroutine, serialised per phase point); load phases never keep
	// samples in memory.
	SampleSink func(report.RequestSample)
	// OpenFileLimit, when set, replaces the process's soft limit on open
	// files (RLIMIT_NOFILE) in the check that a load phase's concurrency
	// fits (tests); 0 from it means unknown.
	OpenFileLimit func() uint64
	// MaxLoadSamples bounds the samples a load phase keeps in the report
	// (0: MaxLoadSamples).
	MaxLoadSamples int
	// Shard, when set, makes this run one shard of a sharded run (shard.go).
	Shard *Shard
	// Protocol is the wire protocol the target speaks; engine.Drivers
	// names it for each target kind. Required.
	Protocol transport.Protocol
}

// ErrPhase marks a phase stopped because its error rate exceeded max_error_rate.
var ErrPhase = errors.New("phase stopped")

// sender is what phases send through: the target's client on a real run,
// placeholders when the shape is built.
type sender interface {
	// stream sends req and writes its result to *out (pointers: see
	// runner.streamInto).
	stream(ctx context.Context, req *measure.Request, out *measure.Result)
	calibrate(ctx context.Context, target int, seed int64, opt measure.CalibrateOptions) (measure.Calibration, error)
	// execute runs one load point.
	execute(ctx context.Context, plan load.Plan, job load.Job) load.Result
	scrapeMetrics(ctx context.Context) (measure.Scrape, error)
}

// runner holds one run's sender and state.
type runner struct {
	run     *scenarios.Run
	cfg     *scenarios.OpenAITarget
	send    sender
	model   string
	opts    Options
	salt    int64
	out     *report.Run
	metrics bool
	// hard ends Grace after the run's context: requests use it, so those
	// in flight at an interrupt may still finish and be measured.
	hard context.Context
	// warnings collects the current phase's findings before its metrics exist.
	warnings []string
}

// clientSender sends through the target's real client.
type clientSender struct{ c measure.Client }

func (s clientSender) stream(ctx context.Context, req *measure.Request, out *measure.Result) {
	if si, ok := s.c.(streamIntoer); ok {
		si.StreamInto(ctx, req, out)
		return
	}
	streamCopy(ctx, s.c, req, out)
}

// streamIntoer is a client that writes a result in place
// (transport.Client).
type streamIntoer interface {
	StreamInto(ctx context.Context, req *measure.Request, res *measure.Result)
}

// streamCopy is the copying call, in a frame of its own.
//
//go:noinline
func streamCopy(ctx context.Context, c measure.Client, req *measure.Request, out *measure.Result) {
	*out, _ = c.Stream(ctx, *req)
}

func (s clientSender) calibrate(ctx context.Context, target int, seed int64, opt measure.CalibrateOptions) (measure.Calibration, error) {
	return s.c.Calibrate(ctx, target, seed, opt)
}

func (s clientSender) execute(ctx context.Context, plan load.Plan, job load.Job) load.Result {
	return load.Execute(ctx, plan, job)
}

func (s clientSender) scrapeMetrics(ctx context.Context) (measure.Scrape, error) {
	return s.c.ScrapeMetrics(ctx)
}

// transportConfig is the transport configuration every protocol shares.
func transportConfig(cfg *scenarios.OpenAITarget, baseURL, apiKey string, secrets []string, maxConns int) transport.Config {
	return transport.Config{
		Secrets: secrets,
		BaseURL: baseURL, APIKey: apiKey, Headers: cfg.Headers, ExtraBody: cfg.Body,
		ConnectTimeout: cfg.Timeouts.Connect.Duration, FirstTokenTimeout: cfg.Timeouts.FirstToken.Duration,
		IdleTimeout: cfg.Timeouts.Idle.Duration, TotalTimeout: cfg.Timeouts.Total.Duration,
		CAFile: cfg.CAFile, MaxConns: maxConns, MaxLineBytes: int(cfg.MaxLineBytes),
		FollowRedirects: cfg.FollowRedirects,
		UserspaceClock:  cfg.ArrivalClock == "read",
	}
}

// Run executes one run against its live target. The report run is returned
// even on error, holding what was measured.
func Run(ctx context.Context, run *scenarios.Run, opts Options) (*report.Run, error) {
	cfg := run.Target.OpenAI
	out := &report.Run{Phases: map[string]*report.Phase{}, PhaseOrder: []string{}}
	out.Target.Endpoint = cfg.Endpoint
	baseURL := cfg.BaseURL
	salt := int64(0)
	if run.Target.Embedded() {
		url, stop, err := embedded.Start(ctx, cfg.Sim)
		if err != nil {
			return out, err
		}
		defer stop()
		baseURL = url
	} else {
		// A live server keeps its prefix cache between runs: a per-run salt
		// keeps "fresh" prompts fresh. The embedded simulator starts empty,
		// so its prompts stay deterministic.
		var b [8]byte
		_, _ = rand.Read(b[:])
		salt = int64(binary.LittleEndian.Uint32(b[:]))
	}
	out.Target.BaseURL = redact.URL(baseURL)

	apiKey := ""
	if cfg.APIKeyEnv != "" {
		lookup := opts.LookupEnv
		if lookup == nil {
			lookup = func(string) (string, bool) { return "", false }
		}
		v, ok := lookup(cfg.APIKeyEnv)
		if !ok || v == "" {
			return out, fmt.Errorf("api_key_env: environment variable %s is not set", cfg.APIKeyEnv)
		}
		apiKey = v
	}
	var secrets []string
	for k, v := range cfg.Headers {
		if redact.IsSecretHeader(k, cfg.SecretHeaders) {
			secrets = append(secrets, v)
		}
	}
	if opts.Protocol.Client == nil {
		return out, fmt.Errorf("target kind %q speaks no known protocol", run.Target.Kind)
	}
	client, err := opts.Protocol.Client(transportConfig(cfg, baseURL, apiKey, secrets, poolSize(run.Phases)))
	if err != nil {
		return out, err
	}
	defer client.Close()
	r := &runner{run: run, cfg: cfg, send: clientSender{client}, opts: opts, salt: salt, out: out, metrics: *cfg.Metrics}
	hard, cancelHard := afterGrace(ctx, opts.Grace)
	defer cancelHard()
	r.hard = hard

	readyStart := time.Now()
	if err := waitReady(ctx, client, cfg, baseURL); err != nil {
		return out, err
	}
	out.Target.ReadyMS = report.F(float64(time.Since(readyStart).Microseconds()) / 1000)
	opts.Shard.measureClock(ctx, baseURL)

	r.model, out.Target.ModelSource = cfg.Model, "scenario"
	if r.model == "" {
		ids, err := client.Models(ctx)
		if err != nil || len(ids) == 0 {
			return out, fmt.Errorf("no model named and /v1/models listed none (set targets.%s.model): %v", run.Target.Name, err)
		}
		r.model, out.Target.ModelSource = ids[0], "first id from /v1/models"
	}
	out.Target.Model = r.model

	if *cfg.Metadata {
		out.Target.Metadata = map[string]any{}
		for path, e := range client.Metadata(ctx) {
			out.Target.Metadata[path] = metadataValue(e)
		}
	}
	err = r.phases(ctx)
	if err != nil {
		if unserved := r.unservedModel(ctx, client, err); unserved != nil {
			return out, unserved // the cause, not the phase it showed in
		}
	}
	return out, err
}

// phases runs every phase in order, each through its kind.
func (r *runner) phases(ctx context.Context) error {
	for _, p := range r.run.Phases {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !r.opts.Shard.runs(p) {
			continue // shard 0 runs it
		}
		ph, err := r.phase(ctx, p)
		r.out.Phases[p.Name] = ph
		r.out.PhaseOrder = append(r.out.PhaseOrder, p.Name)
		if err != nil {
			return fmt.Errorf("phase %s: %w", p.Name, err)
		}
	}
	return nil
}

func metadataValue(e measure.MetadataEntry) any {
	if len(e.JSON) > 0 {
		var v any
		if json.Unmarshal(e.JSON, &v) == nil {
			return v
		}
	}
	m := map[string]any{}
	if e.Status != 0 {
		m["status"] = e.Status
	}
	if e.Text != "" {
		m["text"] = e.Text
	}
	if e.Note != "" {
		m["note"] = e.Note
	}
	return m
}

// phase runs one phase through its kind and returns its report (also on error).
func (r *runner) phase(ctx context.Context, p *scenarios.Phase) (*report.Phase, error) {
	ph := &report.Phase{Kind: p.Kind}
	kind, ok := Kinds()[p.Kind]
	if !ok {
		return ph, fmt.Errorf("a live target cannot run a %s phase", p.Kind)
	}
	var before measure.Scrape
	var scrapeErr error
	if r.metrics {
		before, scrapeErr = r.send.scrapeMetrics(ctx)
	}
	err := kind.Run(ctx, r, p, ph)
	r.warnings = nil
	ph.Dataset = datasetReport(p)
	if r.metrics {
		switch after, err2 := r.send.scrapeMetrics(ctx); {
		case scrapeErr != nil:
			ph.ServerMetricsNote = "no /metrics: " + scrapeErr.Error()
		case err2 != nil:
			ph.ServerMetricsNote = "no /metrics after the phase: " + err2.Error()
		default:
			ph.ServerMetrics = metricsDelta(before, after)
			if ph.ServerMetrics != nil {
				ph.ServerMetricsDelta = ph.ServerMetrics.Counters
			}
		}
	}
	return ph, err
}

// seed is the synthetic-prompt seed of a phase: the phase's seed, the run's
// salt and the phase name, so no two phases (or runs on a live server) ever
// share a prompt prefix by accident.
func (r *runner) seed(p *scenarios.Phase) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(p.Name))
	return p.Seed + r.salt + int64(h.Sum64()>>33)
}

func (r *runner) request(prompt string, messages []measure.Message, maxTokens int) measure.Request {
	req := measure.Request{Endpoint: r.cfg.Endpoint, Model: r.model, MaxTokens: maxTokens, Stream: *r.cfg.Stream}
	if req.Endpoint == measure.EndpointCompletions {
		if prompt == "" {
			parts := make([]string, len(messages))
			for i, m := range messages {
				parts[i] = m.Content
			}
			prompt = strings.Join(parts, "\n")
		}
		req.Prompt = prompt
		return req
	}
	if messages == nil {
		messages = []measure.Message{{Role: "user", Content: prompt}}
	}
	req.Messages = messages
	return req
}

// calibrated reports whether the phase's synthetic prompts are calibrated.
func calibrated(p *scenarios.Phase) bool { return p.Prompt.Calibrate == nil || *p.Prompt.Calibrate }

// synthetic returns a prompt of about target tokens, calibrated with the
// server's tokenizer unless prompt.calibrate is false.
func (r *runner) synthetic(ctx context.Context, p *scenarios.Phase, ph *report.Phase, target, index int, name string) (string, error) {
	seed := r.seed(p)
	if !calibrated(p) {
		return transport.SyntheticPrompt(seed, index, max(1, target*3/4), ""), nil
	}
	c, err := r.send.calibrate(ctx, target, seed, measure.CalibrateOptions{Model: r.model, Index: index})
	if err != nil && c.Prompt == "" {
		if ctx.Err() != nil {
			return "", err
		}
		return "", calibrationError(name, target, err)
	}
	ph.Calibration = append(ph.Calibration, report.CalibrationResult{
		TargetTokens: target, Tokens: c.Tokens, Words: c.Words, Method: c.Method, Iterations: c.Iterations, Request: name, Note: c.Note,
	})
	if err != nil {
		r.warnings = append(r.warnings, fmt.Sprintf("%s: calibration stopped at %d tokens for a target of %d: %v", name, c.Tokens, target, err))
	}
	return c.Prompt, nil
}

func toMessages(ms []scenarios.MessageSpec) []measure.Message {
	if len(ms) == 0 {
		return nil
	}
	out := make([]measure.Message, len(ms))
	for i, m := range ms {
		out[i] = measure.Message{Role: m.Role, Content: m.Content}
	}
	return out
}

// fixedPrompt returns prompt.text, or the index-th line of prompt.file (cycling).
func (r *runner) fixedPrompt(p *scenarios.Phase, index int) (string, []measure.Message, bool) {
	if p.Prompt.Text != "" {
		return p.Prompt.Text, nil, true
	}
	if len(p.FilePrompts) > 0 {
		f := p.FilePrompts[index%len(p.FilePrompts)]
		return f.Prompt, toMessages(f.Messages), true
	}
	return "", nil, false
}

// minPoolConns is the keep-alive pool's size when no phase keeps more
// requests in flight.
const minPoolConns = 4

// maxPoolConns bounds what an open loop's kind asks of the pool when the
// phase sets no max_in_flight (and what any max_in_flight may ask).
const maxPoolConns = 4096

// poolSize sizes the keep-alive pool to the most requests any phase keeps in
// flight (each kind's MaxInFlight), so load never pays for connection
// churn. A phase of a kind the live target does not run asks for nothing;
// running it fails later, with its name.
func poolSize(phases []*scenarios.Phase) int {
	n := minPoolConns
	for _, p := range phases {
		if kind, ok := Kinds()[p.Kind]; ok {
			n = max(n, kind.MaxInFlight(p))
		}
	}
	return n
}

// stream sends a request, retrying 429 and 503 answers when the target
// allows it. Only the last attempt is measured: a retried attempt's time
// is never mixed into latency; the number of retries is returned apart.
func (r *runner) stream(ctx context.Context, req measure.Request) (measure.Result, int) {
	var res measure.Result
	retries := r.streamInto(ctx, &req, &res)
	return res, retries
}

// streamInto is stream with the request and its result behind pointers,
// for the load phases' jobs: every frame between a job and the socket
// read it parks in is on the stack of each request in flight, and a
// Request and a Result (150 and 360 bytes) copied into each of them took
// a stream's goroutine from an 8 KB stack to 16 KB.
func (r *runner) streamInto(ctx context.Context, req *measure.Request, res *measure.Result) int {
	rt := r.cfg.Retries
	backoff := rt.Backoff.Duration
	for attempt := 0; ; attempt++ {
		r.send.stream(ctx, req, res)
		e := res.Err
		if e == nil || attempt >= rt.Max || e.Class != measure.ClassHTTPStatus || (e.Status != 429 && e.Status != 503) {
			return attempt
		}
		wait := max(backoff, e.RetryAfter) // never sooner than the server asked
		backoff = min(backoff*2, rt.MaxBackoff.Duration)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return attempt
		}
	}
}

// afterGrace returns a context that ends grace after ctx does (or when the
// returned cancel is called).
func afterGrace(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	hard, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var mu sync.Mutex
	var timer *time.Timer
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		timer = time.AfterFunc(grace, cancel)
		mu.Unlock()
	})
	return hard, func() {
		stop()
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}
