// Package serving is the driver for live targets: any OpenAI-compatible
// server (kind openai) or tollgate's embedded simulator (kind embedded). It
// runs the serving phases (warmup, prefill, decode, prefix_cache, requests)
// through engine/openai and folds the results into the report.
package serving

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/engine/sim"
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
}

// ErrPhase marks a phase stopped because its error rate exceeded max_error_rate.
var ErrPhase = errors.New("phase stopped")

// SimConfig maps a scenario's sim block onto the simulator's config.
func SimConfig(s *scenarios.SimConfig) sim.Config {
	if s == nil {
		return sim.Config{}
	}
	// The simulator reads 0 as "default"; a 0 written in the scenario means
	// none, which the simulator spells as a nanosecond.
	dur := func(key string, d scenarios.Duration) time.Duration {
		if d.Duration == 0 && s.Has(key) {
			return time.Nanosecond
		}
		return d.Duration
	}
	return sim.Config{
		Model: s.Model, TTFTBase: dur("ttft_base", s.TTFTBase), PrefillTokensPerS: s.PrefillTokensPerS,
		DecodeStep: dur("decode_step", s.DecodeStep), DecodeStepPerSeq: dur("decode_step_per_seq", s.DecodeStepPerSeq),
		MaxRunningSeqs: s.MaxRunningSeqs, CacheCapacityTokens: s.CacheCapacityTokens, BlockTokens: s.BlockTokens,
		DisablePrefixCache: s.DisablePrefixCache, MaxModelLen: s.MaxModelLen, DefaultMaxTokens: s.DefaultMaxTokens, Seed: s.Seed,
		Faults: simFaults(s.Faults),
	}
}

func simFaults(fs []scenarios.FaultSpec) []sim.Fault {
	out := make([]sim.Fault, 0, len(fs))
	for _, f := range fs {
		out = append(out, sim.Fault{Kind: f.Kind, Probability: f.Probability, EveryNth: f.EveryNth,
			RetryAfter: f.RetryAfter.Duration, Stall: f.Stall.Duration, TrickleInterval: f.TrickleInterval.Duration, AfterTokens: f.AfterTokens})
	}
	return out
}

// runner holds one run's client and state.
type runner struct {
	run     *scenarios.Run
	cfg     *scenarios.OpenAITarget
	client  *openai.Client
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

// Run executes one run against its live target. The report run is returned
// even on error, holding what was measured.
func Run(ctx context.Context, run *scenarios.Run, opts Options) (*report.Run, error) {
	cfg := run.Target.OpenAI
	out := &report.Run{Phases: map[string]*report.Phase{}, PhaseOrder: []string{}}
	out.Target.Endpoint = cfg.Endpoint
	baseURL := cfg.BaseURL
	salt := int64(0)
	if run.Target.Embedded() {
		srv, err := sim.New(SimConfig(cfg.Sim))
		if err != nil {
			return out, fmt.Errorf("embedded simulator: %w", err)
		}
		defer srv.Close()
		// The simulator outlives an interrupt until Run returns, so requests
		// in flight get their grace period (defer Close ends it).
		baseURL, err = srv.Start(context.WithoutCancel(ctx), "127.0.0.1:0")
		if err != nil {
			return out, fmt.Errorf("embedded simulator: %w", err)
		}
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
	client, err := openai.New(openai.Config{
		Secrets: secrets,
		BaseURL: baseURL, APIKey: apiKey, Headers: cfg.Headers, ExtraBody: cfg.Body,
		ConnectTimeout: cfg.Timeouts.Connect.Duration, FirstTokenTimeout: cfg.Timeouts.FirstToken.Duration,
		IdleTimeout: cfg.Timeouts.Idle.Duration, TotalTimeout: cfg.Timeouts.Total.Duration,
		CAFile: cfg.CAFile, MaxConns: poolSize(run.Phases), MaxLineBytes: int(cfg.MaxLineBytes),
		UserspaceClock: cfg.ArrivalClock == "read",
	})
	if err != nil {
		return out, err
	}
	defer client.Close()
	r := &runner{run: run, cfg: cfg, client: client, opts: opts, salt: salt, out: out, metrics: *cfg.Metrics}
	hard, cancelHard := afterGrace(ctx, opts.Grace)
	defer cancelHard()
	r.hard = hard

	readyStart := time.Now()
	if err := client.WaitReady(ctx, readyStart.Add(cfg.ReadyTimeout.Duration)); err != nil {
		return out, fmt.Errorf("target not ready within %s: %w", cfg.ReadyTimeout.Duration, err)
	}
	out.Target.ReadyMS = report.F(float64(time.Since(readyStart).Microseconds()) / 1000)

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

	for _, p := range run.Phases {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		ph, err := r.phase(ctx, p)
		out.Phases[p.Name] = ph
		out.PhaseOrder = append(out.PhaseOrder, p.Name)
		if err != nil {
			return out, fmt.Errorf("phase %s: %w", p.Name, err)
		}
	}
	return out, nil
}

func metadataValue(e openai.MetadataEntry) any {
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

// plan is one request of a phase, prepared before it is sent.
type plan struct {
	point  string
	index  int
	target int // calibrated prompt size, 0 if none
	req    openai.Request
}

// phase runs one phase and returns its report (also on error).
func (r *runner) phase(ctx context.Context, p *scenarios.Phase) (*report.Phase, error) {
	ph := &report.Phase{Kind: p.Kind}
	var before map[string]float64
	var scrapeErr error
	if r.metrics {
		before, scrapeErr = r.client.ScrapeMetrics(ctx)
	}
	err := r.execute(ctx, p, ph)
	if r.metrics {
		switch after, err2 := r.client.ScrapeMetrics(ctx); {
		case scrapeErr != nil:
			ph.ServerMetricsNote = "no /metrics: " + scrapeErr.Error()
		case err2 != nil:
			ph.ServerMetricsNote = "no /metrics after the phase: " + err2.Error()
		default:
			ph.ServerMetricsDelta = metricsDelta(before, after)
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

func (r *runner) request(prompt string, messages []openai.Message, maxTokens int) openai.Request {
	req := openai.Request{Endpoint: r.cfg.Endpoint, Model: r.model, MaxTokens: maxTokens, Stream: *r.cfg.Stream}
	if req.Endpoint == openai.EndpointCompletions {
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
		messages = []openai.Message{{Role: "user", Content: prompt}}
	}
	req.Messages = messages
	return req
}

// synthetic returns a prompt of about target tokens, calibrated with the
// server's tokenizer unless prompt.calibrate is false.
func (r *runner) synthetic(ctx context.Context, p *scenarios.Phase, ph *report.Phase, target, index int, name string) (string, error) {
	seed := r.seed(p)
	if p.Prompt.Calibrate != nil && !*p.Prompt.Calibrate {
		return openai.SyntheticPrompt(seed, index, max(1, target*3/4), ""), nil
	}
	c, err := r.client.Calibrate(ctx, target, seed, openai.CalibrateOptions{Model: r.model, Index: index})
	if err != nil && c.Prompt == "" {
		return "", fmt.Errorf("calibrating %s to %d tokens: %w", name, target, err)
	}
	ph.Calibration = append(ph.Calibration, report.CalibrationResult{
		TargetTokens: target, Tokens: c.Tokens, Words: c.Words, Method: c.Method, Iterations: c.Iterations, Request: name,
	})
	if err != nil {
		r.warnings = append(r.warnings, fmt.Sprintf("%s: calibration stopped at %d tokens for a target of %d: %v", name, c.Tokens, target, err))
	}
	return c.Prompt, nil
}

func toMessages(ms []scenarios.MessageSpec) []openai.Message {
	if len(ms) == 0 {
		return nil
	}
	out := make([]openai.Message, len(ms))
	for i, m := range ms {
		out[i] = openai.Message{Role: m.Role, Content: m.Content}
	}
	return out
}

// fixedPrompt returns prompt.text, or the index-th line of prompt.file (cycling).
func (r *runner) fixedPrompt(p *scenarios.Phase, index int) (string, []openai.Message, bool) {
	if p.Prompt.Text != "" {
		return p.Prompt.Text, nil, true
	}
	if len(p.FilePrompts) > 0 {
		f := p.FilePrompts[index%len(p.FilePrompts)]
		return f.Prompt, toMessages(f.Messages), true
	}
	return "", nil, false
}

func (r *runner) execute(ctx context.Context, p *scenarios.Phase, ph *report.Phase) error {
	var plans []plan
	add := func(point string, index, target int, prompt string, messages []openai.Message, maxTokens int) {
		plans = append(plans, plan{point: point, index: index, target: target, req: r.request(prompt, messages, maxTokens)})
	}
	// Prompts are prepared (and calibrated) before any measured request, so
	// calibration traffic never interleaves with the timings.
	switch p.Kind {
	case scenarios.PhaseWarmup, scenarios.PhaseDecode:
		n := p.Repeat
		if p.Kind == scenarios.PhaseWarmup {
			n = p.Requests.Count
		}
		for i := 0; i < n; i++ {
			if text, msgs, ok := r.fixedPrompt(p, i); ok {
				add("", i, 0, text, msgs, p.MaxTokens)
				continue
			}
			prompt, err := r.synthetic(ctx, p, ph, p.PromptTokens[0], i, requestName(p.Name, "", i))
			if err != nil {
				return err
			}
			add("", i, p.PromptTokens[0], prompt, nil, p.MaxTokens)
		}
	case scenarios.PhasePrefill:
		for si, size := range p.PromptTokens {
			point := strconv.Itoa(size)
			for i := 0; i < p.Repeat; i++ {
				// Distinct per size and repetition, so no prompt reuses another's prefix.
				prompt, err := r.synthetic(ctx, p, ph, size, si*100_000+i, requestName(p.Name, point, i))
				if err != nil {
					return err
				}
				add(point, i, size, prompt, nil, p.MaxTokens)
			}
		}
	case scenarios.PhasePrefixCache:
		size := p.PromptTokens[0]
		for i := 0; i < p.Repeat; i++ {
			// A new salt (index) per repetition: each fresh prompt is cold.
			prompt, err := r.synthetic(ctx, p, ph, size, 1_000_000+i, requestName(p.Name, "fresh", i))
			if err != nil {
				return err
			}
			suffix := openai.SyntheticPrompt(r.seed(p), 2_000_000+i, max(1, p.SuffixTokens*3/4), "")
			add("fresh", i, size, prompt, nil, p.MaxTokens)
			add("identical", i, size, prompt, nil, p.MaxTokens)
			add("small_suffix", i, size+p.SuffixTokens, prompt+"\n\n"+suffix, nil, p.MaxTokens)
		}
	case scenarios.PhaseLoad:
		return r.loadPhase(ctx, p, ph)
	case scenarios.PhaseRequests:
		for rep := 0; rep < p.Repeat; rep++ {
			for i, spec := range p.Requests.List {
				mt := p.MaxTokens
				if spec.MaxTokens > 0 {
					mt = spec.MaxTokens
				}
				add("", rep*len(p.Requests.List)+i, 0, spec.Prompt, toMessages(spec.Messages), mt)
				plans[len(plans)-1].req.ExtraBody = spec.Body
			}
		}
	default:
		return fmt.Errorf("a live target cannot run a %s phase", p.Kind)
	}

	maxRate := 0.0
	if p.MaxErrorRate != nil {
		maxRate = *p.MaxErrorRate
	}
	// Stop as soon as the error budget for the whole phase is certainly spent.
	allowed := int(math.Floor(maxRate * float64(len(plans))))
	all := newAggregator()
	points := map[string]*aggregator{}
	var pointOrder []string
	var samples []report.RequestSample
	phaseStart := time.Now()
	var stopErr error
	for _, pl := range plans {
		if err := ctx.Err(); err != nil {
			stopErr = err
			break
		}
		startMS := float64(time.Since(phaseStart).Microseconds()) / 1000
		res, retries := r.stream(r.hard, pl.req)
		all.retries += retries
		if res.Err != nil && res.Err.Class == openai.ClassCanceled && ctx.Err() != nil {
			stopErr = ctx.Err()
			break
		}
		name := requestName(p.Name, pl.point, pl.index)
		all.add(res, name)
		if pl.point != "" {
			a, ok := points[pl.point]
			if !ok {
				a = newAggregator()
				points[pl.point] = a
				pointOrder = append(pointOrder, pl.point)
			}
			a.add(res, name)
		}
		if r.opts.Samples || r.opts.SampleSink != nil {
			s := sampleOf(res, p.Name, pl.point, pl.index, startMS)
			if r.opts.Samples {
				samples = append(samples, s)
			}
			if r.opts.SampleSink != nil {
				r.opts.SampleSink(s)
			}
		}
		if all.errCount > allowed {
			stopErr = fmt.Errorf("%w: %d of %d requests failed, over max_error_rate %g (last: %s)", ErrPhase, all.errCount, all.requests, maxRate, res.Err.Error())
			break
		}
	}

	defer func() { r.warnings = nil }()
	if p.Kind == scenarios.PhaseWarmup {
		// Warmup is counted but never measured.
		m := all.metrics()
		ph.ServingMetrics = &report.ServingMetrics{Requests: m.Requests, Succeeded: m.Succeeded, Errors: m.Errors, Warnings: append([]string{}, r.warnings...)}
		return stopErr
	}
	ph.ServingMetrics = all.metrics()
	ph.Warnings = append(ph.Warnings, r.warnings...)
	if len(points) > 0 {
		pts := map[string]*report.Point{}
		for _, name := range pointOrder {
			pt := &report.Point{ServingMetrics: points[name].metrics()}
			if p.Kind == scenarios.PhasePrefill {
				pt.TargetPromptTokens, _ = strconv.Atoi(name)
			}
			pts[name] = pt
		}
		if p.Kind == scenarios.PhasePrefill {
			ph.ByPromptTokens = pts
		} else {
			ph.Variants = pts
			prefixCacheFindings(ph)
		}
	}
	if r.opts.Samples && samples != nil {
		ph.Samples = samples
	}
	return stopErr
}

// prefixCacheFindings fills the speedups and warns when cached_tokens shows
// no reuse, so a cold or evicted cache is never mistaken for a slow one.
func prefixCacheFindings(ph *report.Phase) {
	fresh := ph.Variants["fresh"]
	for _, name := range []string{"identical", "small_suffix"} {
		v := ph.Variants[name]
		if v == nil {
			continue
		}
		if fresh != nil && fresh.TTFTMS.P50 != nil && v.TTFTMS.P50 != nil && *v.TTFTMS.P50 > 0 {
			v.Speedup = report.F(*fresh.TTFTMS.P50 / *v.TTFTMS.P50)
		}
		var w string
		switch {
		case v.Succeeded == 0:
		case v.CachedTokens.Count == 0:
			w = "the server reports no cached_tokens (usage.prompt_tokens_details), so prefix reuse cannot be confirmed"
		case v.CachedTokens.Max != nil && *v.CachedTokens.Max == 0:
			w = "cached_tokens is 0 on every request: no prefix reuse (the cache was cold, evicted or disabled)"
		}
		if w != "" {
			v.Warnings = append(v.Warnings, w)
			ph.Warnings = append(ph.Warnings, name+": "+w)
		}
	}
	sort.Strings(ph.Warnings)
}

// metricsDelta is after − before for every series that changed, plus, for a
// labelled metric with no unlabelled series, the sum over its label sets
// under the bare name, so a gate can read
// server_metrics_delta["vllm:prefix_cache_hits_total"] whatever the labels.
// Histogram buckets are not summed: a sum across le bounds means nothing.
func metricsDelta(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	sums := map[string]float64{}
	for k, v := range openai.Diff(before, after) {
		if v == 0 {
			continue
		}
		out[k] = v
		if name, _, labelled := strings.Cut(k, "{"); labelled && !strings.HasSuffix(name, "_bucket") {
			sums[name] += v
		}
	}
	for name, v := range sums {
		if _, exists := after[name]; !exists {
			out[name] = v
		}
	}
	return out
}

// poolSize sizes the keep-alive pool to the most requests any phase keeps in
// flight, so load never pays for connection churn.
func poolSize(phases []*scenarios.Phase) int {
	n := 4
	for _, p := range phases {
		if p.Kind != scenarios.PhaseLoad {
			continue
		}
		n = max(n, p.Concurrency)
		for _, c := range p.Sweep.Concurrency {
			n = max(n, c)
		}
		if p.Rate > 0 || len(p.Sweep.Rate) > 0 {
			limit := p.MaxInFlight
			if limit == 0 {
				limit = 4096
			}
			n = max(n, min(limit, 4096))
		}
	}
	return n
}

// stream sends a request, retrying 429 and 503 answers when the target
// allows it. Only the last attempt is measured: a retried attempt's time
// is never mixed into latency; the number of retries is returned apart.
func (r *runner) stream(ctx context.Context, req openai.Request) (openai.Result, int) {
	rt := r.cfg.Retries
	backoff := rt.Backoff.Duration
	for attempt := 0; ; attempt++ {
		res, _ := r.client.Stream(ctx, req)
		e := res.Err
		if e == nil || attempt >= rt.Max || e.Class != openai.ClassHTTPStatus || (e.Status != 429 && e.Status != 503) {
			return res, attempt
		}
		wait := max(backoff, e.RetryAfter) // never sooner than the server asked
		backoff = min(backoff*2, rt.MaxBackoff.Duration)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return res, attempt
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

// EffectiveSim is the simulator configuration a run will use, defaults
// filled in, for the report.
func EffectiveSim(s *scenarios.SimConfig) (map[string]any, error) {
	srv, err := sim.New(SimConfig(s))
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	c := srv.Config()
	out := map[string]any{
		"model": c.Model, "max_model_len": c.MaxModelLen, "ttft_base": c.TTFTBase.String(),
		"prefill_tokens_per_s": c.PrefillTokensPerS, "decode_step": c.DecodeStep.String(),
		"decode_step_per_seq": c.DecodeStepPerSeq.String(), "max_running_seqs": c.MaxRunningSeqs,
		"cache_capacity_tokens": c.CacheCapacityTokens, "block_tokens": c.BlockTokens,
		"disable_prefix_cache": c.DisablePrefixCache, "default_max_tokens": c.DefaultMaxTokens, "seed": c.Seed,
	}
	if s != nil && len(s.Faults) > 0 {
		out["faults"] = s.Faults
	}
	return out, nil
}
