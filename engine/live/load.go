package live

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/engine/load"
	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/fold"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// Progress is a live view of a running phase, for a progress line.
type Progress struct {
	Run, Phase, Point string
	Done, Total       int // Total is 0 when only a duration bounds the phase
	InFlight          int64
	Errors            int
	Elapsed           time.Duration
	TTFTP50MS         *float64
}

// fileSlack is the open files a run needs besides one socket per request in
// flight: standard streams, the report, metrics and metadata connections.
const fileSlack = 32

// FileLimitWarning says when a load phase's requests cannot all hold a
// connection under the open-file limit lim (0: unknown): the ones over it
// fail to connect (EMFILE) and the phase measures a lower concurrency than
// it asked for. An embedded simulator serves in this process, so each of
// its connections costs two files. The Go runtime has already raised the
// soft limit to the hard one at start-up, so lim is what this process can
// have without the user raising the hard limit. A shard (sh, nil for the
// whole run) needs files for its share of the concurrency only (the first
// shards' share, the largest, is what is checked); max_in_flight bounds
// each shard, so it is not divided.
func FileLimitWarning(run *scenarios.Run, p *scenarios.Phase, lim uint64, sh *Shard) string {
	if p.Kind != scenarios.PhaseLoad || lim == 0 {
		return ""
	}
	share := func(c int) int { return c }
	if sh != nil && sh.Count > 1 {
		share = func(c int) int { return Share(c, 0, sh.Count) }
	}
	inFlight := p.MaxInFlight // an open loop's bound, 0 when none
	inFlight = max(inFlight, share(p.Concurrency))
	for _, c := range p.Sweep.Concurrency {
		inFlight = max(inFlight, share(c))
	}
	files := inFlight
	if run.Target.Embedded() {
		files *= 2
	}
	if inFlight <= 0 || uint64(files)+fileSlack <= lim {
		return ""
	}
	what := fmt.Sprintf("concurrency %d", inFlight)
	if sh != nil && sh.Count > 1 {
		what = fmt.Sprintf("this shard's concurrency (%d, of %d shards)", inFlight, sh.Count)
	}
	return fmt.Sprintf("%s needs about %d open files but the limit is %d (ulimit -n): requests over it fail to connect; raise the hard limit", what, files+fileSlack, lim)
}

// ConcurrencyWarnings name the closed-loop points of a load phase that
// cannot reach their concurrency, as the scenario says: a point sends at
// most requests, so no more than that many are ever in flight.
func ConcurrencyWarnings(p *scenarios.Phase) []string {
	if p.Kind != scenarios.PhaseLoad || p.Requests.Count == 0 {
		return nil
	}
	var out []string
	for _, sp := range loadSpecs(p) {
		if c, n := sp.concurrency, p.Requests.Count; c > n {
			out = append(out, fmt.Sprintf("point %s sends at most %d requests (requests: %d), so never more than %d are in flight: "+
				"give it at least %d requests, several times that to hold %d in flight", sp.label(), n, n, n, c, c))
		}
	}
	return out
}

// minHeldShare is the share of its concurrency a closed-loop point must
// hold in flight on average; under it, its figures are not those of that
// concurrency (a point of few requests per stream spends its time filling
// and draining).
const minHeldShare = 0.75

// shortfallWarning names a closed-loop point that held less than
// minHeldShare of its concurrency in flight on average, with the likely
// cause when its request count is small; "" when it held it.
func shortfallWarning(p *scenarios.Phase, sp loadSpec, lp *report.LoadPoint) string {
	c := sp.concurrency
	if c == 0 || lp.AchievedConcurrency == nil || *lp.AchievedConcurrency >= minHeldShare*float64(c) {
		return ""
	}
	w := fmt.Sprintf("point %s held %.1f requests in flight on average (%d at most), under %.0f%% of its concurrency: its figures are not those of %d concurrent streams",
		sp.label(), *lp.AchievedConcurrency, lp.PeakInFlight, 100*minHeldShare, c)
	if n := p.Requests.Count; n > 0 && n < 4*c {
		w += fmt.Sprintf("; its %d requests are too few to keep %d streams busy (a closed loop needs several times its concurrency in requests)", n, c)
	}
	return w
}

// ProcessFileLimit is this process's soft limit on open files; 0 when unknown.
func ProcessFileLimit() uint64 { return transport.OpenFileLimit() }

// MaxLoadSamples bounds the request samples a load phase keeps in the
// report (about 30 MB in memory, more as JSON): a long open loop at
// 1,000 req/s would otherwise grow without bound. --samples-out streams
// every one.
const MaxLoadSamples = 100_000

// loadKind runs a load phase: one point, or one per sweep value, closed
// loop (concurrency) or open loop (rate); points holds one entry per value.
type loadKind struct{}

// MaxInFlight is the most a load phase keeps in flight: its concurrency or
// largest swept concurrency, and for an open loop (rate or swept rates)
// its max_in_flight, maxPoolConns when unset and at most that.
func (loadKind) MaxInFlight(p *scenarios.Phase) int {
	n := p.Concurrency
	for _, c := range p.Sweep.Concurrency {
		n = max(n, c)
	}
	if p.Rate > 0 || len(p.Sweep.Rate) > 0 {
		limit := p.MaxInFlight
		if limit == 0 {
			limit = maxPoolConns
		}
		n = max(n, min(limit, maxPoolConns))
	}
	return n
}

func (loadKind) Run(ctx context.Context, r *runner, p *scenarios.Phase, ph *report.Phase) error {
	if p.StopWhenSaturated {
		none := "" // every point ran, until one saturates
		ph.Stopped = &none
	}
	specs := loadSpecs(p)
	limit := r.opts.OpenFileLimit
	if limit == nil {
		limit = transport.OpenFileLimit
	}
	if w := FileLimitWarning(r.run, p, limit(), r.opts.Shard); w != "" {
		// The phase's metrics, warnings included, are laid out last.
		defer func() {
			if ph.ServingMetrics != nil {
				ph.Warnings = append(ph.Warnings, w)
			}
		}()
	}
	var shortfalls []string // points that never held their concurrency
	defer func() {
		if ph.ServingMetrics != nil {
			ph.Warnings = append(ph.Warnings, shortfalls...)
		}
	}()
	prompts, err := r.loadPrompts(ctx, p, ph, len(specs))
	if err != nil {
		return err
	}
	// With report.samples on, a load phase keeps its requests like every
	// other phase (point by point, in index order): the CSV and the HTML
	// CDFs read them. Aggregates stay bounded either way; a long soak
	// turns report.samples off and streams --samples-out instead.
	rec := r.newRecorder(p, 0)
	rec.byPoint = true
	defer rec.close(ph)
	next := 0 // global request index across points, so no two requests share a prompt
	for _, sp := range specs {
		base := next
		lp, recs, res, stopErr, err := r.loadPoint(ctx, p, rec, sp, prompts, base)
		if err != nil {
			return err
		}
		next += res.Sent
		if sh := r.opts.Shard; sh != nil {
			// Every shard advances past the whole point, so the next point's
			// requests are the ones a single process would send.
			next = base + sh.Count*res.Sent
			if p.Requests.Count > 0 {
				next = base + p.Requests.Count
			}
		}
		if w := shortfallWarning(p, sp, lp); w != "" && r.opts.Shard == nil && stopErr == nil && ctx.Err() == nil {
			shortfalls = append(shortfalls, w)
		}
		r.checkLag(p, report.Pointer("runs", r.run.Name, "phases", p.Name, "points", strconv.Itoa(len(ph.Points))), " "+sp.label(), lp.DispatchLagMS, lp.TTFTMS.P50)
		ph.Points = append(ph.Points, lp)
		if p.StopWhenSaturated {
			if stop := saturatedPoint(lp, recs, res, sp.rate > 0); stop != "" && len(ph.Points) < len(specs) {
				why := sp.label() + ": " + stop
				ph.Stopped = &why
				break
			}
		}
		if stopErr != nil {
			return stopErr
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// loadSpec is one point of a load phase: a concurrency or a rate.
type loadSpec struct {
	concurrency int
	rate        float64
}

func (sp loadSpec) label() string {
	if sp.rate > 0 {
		return fmt.Sprintf("rate %g/s", sp.rate)
	}
	return fmt.Sprintf("concurrency %d", sp.concurrency)
}

// loadSpecs are a load phase's points: one, or one per sweep value.
func loadSpecs(p *scenarios.Phase) []loadSpec {
	var specs []loadSpec
	switch {
	case len(p.Sweep.Concurrency) > 0:
		for _, c := range p.Sweep.Concurrency {
			specs = append(specs, loadSpec{concurrency: c})
		}
	case len(p.Sweep.Rate) > 0:
		for _, rt := range p.Sweep.Rate {
			specs = append(specs, loadSpec{rate: rt})
		}
	case p.Concurrency > 0:
		specs = []loadSpec{{concurrency: p.Concurrency}}
	default:
		specs = []loadSpec{{rate: p.Rate}}
	}
	return specs
}

// loadPoint runs one point of a load phase from global request index base
// and folds it. stopErr is set when the point's error budget was spent
// (the phase stops after laying out the point); err when it could not run.
func (r *runner) loadPoint(ctx context.Context, p *scenarios.Phase, rec *recorder, sp loadSpec, prompts func(int) measure.Request, base int) (
	lp *report.LoadPoint, recs []record, res load.Result, stopErr, err error) {
	label := sp.label()
	plan := load.Plan{Concurrency: sp.concurrency, MaxRequests: p.Requests.Count, Duration: p.Duration.Duration,
		RampUp: p.RampUp.Duration, MaxInFlight: p.MaxInFlight}
	if sp.rate > 0 {
		plan.Schedule, err = load.NewSchedule(sp.rate, p.Arrival, p.Burstiness, p.RampUp.Duration, r.scheduleSeed(p)+int64(base))
		if err != nil {
			return nil, nil, load.Result{}, nil, err
		}
	}
	plan = r.opts.Shard.plan(plan) // this shard's share (sharded runs)
	pt := fold.NewPoint(r.foldOptions(), p.SLO.Limits)
	// The point's own error budget.
	budget := newErrorBudget(p, p.Requests.Count)
	var lastErr *measure.Error
	d := r.drive(ctx, p.Name, point{plan: plan, label: label, total: p.Requests.Count, pt: pt, rec: rec,
		request: func(i int) (measure.Request, bool) { return prompts(base + r.opts.Shard.global(i)), true },
		index:   r.opts.Shard.global, // the whole run's index of this request
		recorded: func(d done, _ bool) error {
			if p.StopWhenSaturated {
				recs = append(recs, record{scheduled: d.scheduled, sent: d.sent, end: d.end, ttftMS: d.out.TTFTMS, ok: d.out.Err == nil})
			}
			if d.out.Err == nil {
				return nil
			}
			lastErr = d.out.Err
			if budget.spent(pt.Errors(), pt.Requests()) {
				return budget.err(label, pt.Errors(), pt.Requests(), d.out.Err)
			}
			return nil
		}})
	res, stopErr = d.res, d.stopErr
	// The jobs are done: what the early stop did not judge is judged now.
	if stopErr == nil && ctx.Err() == nil && budget.over(pt.Errors(), pt.Requests()) {
		stopErr = budget.err(label, pt.Errors(), pt.Requests(), lastErr)
	}
	lp = pt.Close(r.opts.Shard != nil)
	lp.Concurrency, lp.Rate = sp.concurrency, sp.rate
	if r.opts.Shard != nil {
		r.shardPoint(lp, p.Name, label, sp.rate)
	}
	return lp, recs, res, stopErr, nil
}

// loadPrompts returns the request for global index i. Synthetic prompts
// start from one calibration at the mean size (tokens per word); when the
// request count is known and counting is cheap (count_tokens, tokenize),
// every prompt is then calibrated to its own size before the phase sends,
// else prompts are sized by tokens per word. Either way each request's
// prompt_tokens is held against its target afterwards (a warning when off).
func (r *runner) loadPrompts(ctx context.Context, p *scenarios.Phase, ph *report.Phase, points int) (func(i int) measure.Request, error) {
	seed := r.seed(p)
	maxTokens := func(rng *rand.Rand) int { return p.MaxTokens }
	if d := p.MaxTokensDist; d != nil {
		maxTokens = func(rng *rand.Rand) int { return draw(d, rng) }
	}
	if p.Prompt.Text != "" || len(p.FilePrompts) > 0 {
		return func(i int) measure.Request {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
			text, msgs, _ := r.fixedPrompt(p, i)
			mt := maxTokens(rng)
			if n := datasetMaxTokens(p, i); n > 0 {
				mt = n // the dataset's reply length (prompt.dataset)
			}
			return r.request(text, msgs, mt)
		}, nil
	}
	mean := 0
	if len(p.PromptTokens) > 0 {
		mean = p.PromptTokens[0]
	} else if d := p.PromptDist; d != nil {
		mean = int(d.Mean)
		if d.Distribution == "uniform" {
			mean = (d.Min + d.Max) / 2
		}
	}
	tokensPerWord := 4.0 / 3
	method := ""
	if calibrated(p) {
		c, err := r.send.calibrate(ctx, mean, seed, measure.CalibrateOptions{Model: r.model, Index: 9_000_000})
		if err != nil && c.Words == 0 {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, calibrationError(p.Name+"'s prompts", mean, err)
		}
		ph.Calibration = append(ph.Calibration, report.CalibrationResult{TargetTokens: mean, Tokens: c.Tokens, Words: c.Words,
			Method: c.Method, Iterations: c.Iterations, Request: p.Name + " (tokens per word)", Note: c.Note})
		if c.Words > 0 && c.Tokens > 0 {
			tokensPerWord = float64(c.Tokens) / float64(c.Words)
		}
		method = c.Method
	}
	words := func(tokens int) int { return max(1, int(math.Round(float64(tokens)/tokensPerWord))) }
	var prefixes []string
	if sp := p.Shared; sp.Groups > 0 {
		for g := 0; g < sp.Groups; g++ {
			prefixes = append(prefixes, transport.SyntheticPrompt(seed, 3_000_000+g, words(sp.PrefixTokens), ""))
		}
	}
	// shape draws request i's sizes; its prompt is made apart.
	type shape struct {
		tokens, maxTokens int
		prefix            string
	}
	build := func(i int) shape {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
		sh := shape{tokens: mean}
		if len(p.PromptTokens) == 0 && p.PromptDist != nil {
			sh.tokens = draw(p.PromptDist, rng)
		}
		if len(prefixes) > 0 {
			sh.prefix = prefixes[i%len(prefixes)]
		}
		sh.maxTokens = maxTokens(rng)
		return sh
	}
	request := func(sh shape, prompt string) measure.Request {
		return sized(r.request(prompt, nil, sh.maxTokens), sh.tokens, p)
	}
	text := func(i, tokens int, prefix string) string {
		if prefix != "" {
			tokens -= p.Shared.PrefixTokens
		}
		return transport.SyntheticPrompt(seed, i, words(tokens), prefix)
	}
	total := p.Requests.Count * points
	if !calibrated(p) || total == 0 || total > maxCalibratedLoadPrompts || !cheapCount(method) {
		// Sized by the phase's tokens per word; with calibration on, the
		// server's own counts still judge every request afterwards.
		return func(i int) measure.Request {
			sh := build(i)
			return request(sh, text(i, sh.tokens, sh.prefix))
		}, nil
	}
	// Every request's own prompt is calibrated before any is sent (the
	// counts are cheap here), starting from the tokens per word just
	// learned, so each lands within max(4 tokens, 0.5 %) of its own target.
	reqs := make([]measure.Request, total)
	counts, misses := 0, 0
	for i := range reqs {
		sh := build(i)
		initial := words(sh.tokens)
		if sh.prefix != "" {
			initial = words(sh.tokens - p.Shared.PrefixTokens)
		}
		c, err := r.send.calibrate(ctx, sh.tokens, seed, measure.CalibrateOptions{Model: r.model, Index: i, SharedPrefix: sh.prefix, InitialWords: initial, MaxIterations: 6})
		counts += c.Iterations
		prompt := c.Prompt
		if err != nil || prompt == "" {
			misses++
			prompt = text(i, sh.tokens, sh.prefix)
		}
		reqs[i] = request(sh, prompt)
	}
	ph.Calibration = append(ph.Calibration, report.CalibrationResult{TargetTokens: mean, Tokens: mean, Method: method,
		Iterations: counts, Request: fmt.Sprintf("%s (%d prompts, each calibrated)", p.Name, total)})
	if misses > 0 {
		r.warnings = append(r.warnings, fmt.Sprintf("%s: %d of %d prompts could not be calibrated to their size; they are sized by tokens per word", p.Name, misses, total))
	}
	return func(i int) measure.Request {
		if i < len(reqs) {
			return reqs[i]
		}
		sh := build(i)
		return request(sh, text(i, sh.tokens, sh.prefix))
	}, nil
}

// maxCalibratedLoadPrompts bounds the prompts a load phase calibrates one
// by one before it starts; beyond it they are sized by tokens per word.
const maxCalibratedLoadPrompts = 20_000

// cheapCount reports whether a counting method costs no generation: a
// probe is a completion per count, too dear to run per request.
func cheapCount(method string) bool {
	return method == transport.MethodCountTokens || method == transport.MethodTokenize || method == "shape"
}

// draw samples a token count from a distribution, clamped to [min, max].
func draw(d *scenarios.Dist, rng *rand.Rand) int {
	switch d.Distribution {
	case "uniform":
		return d.Min + rng.IntN(d.Max-d.Min+1)
	default:
		v := int(math.Round(d.Mean + d.StdDev*rng.NormFloat64()))
		return min(max(v, d.Min), d.Max)
	}
}

// progressTicker reports progress every 250 ms until stop is called.
func (r *runner) progressTicker(ctx context.Context, snapshot func() Progress) (stop func()) {
	if r.opts.OnProgress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				pr := snapshot()
				pr.Run = r.run.Name
				r.opts.OnProgress(pr)
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		pr := snapshot()
		pr.Run = r.run.Name
		r.opts.OnProgress(pr)
	}
}
