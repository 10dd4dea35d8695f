package foreign

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/report"
)

// GuideLLMTool names GuideLLM in reports and notes.
const GuideLLMTool = "GuideLLM"

// Definition notes of a GuideLLM result.
const (
	guideNoteTPOT    = "tpot_ms ← GuideLLM's inter_token_latency_ms: (last_token_time − first_token_time) ÷ (output_tokens − 1), the formula of tollgate's tpot_ms under another name"
	guideNoteOwnTPOT = "GuideLLM's time_per_output_token_ms is (last_token_time − start_time) ÷ output_tokens, the wait for the first token included: " +
		"tollgate defines no such metric, so it is not mapped"
	guideNoteITL  = "itl_ms: GuideLLM keeps no gaps between chunks, so it is absent"
	guideNoteTTFT = "ttft_ms ← time_to_first_token_ms: GuideLLM's first_token_time is the first streamed chunk with non-empty text, as tollgate's, " +
		"taken with time.time() (the wall clock) when httpx yields the line, where tollgate takes the bytes' arrival"
	guideNoteE2E   = "e2e_ms ← request_latency × 1000 (GuideLLM's is in seconds): request start → end of the response"
	guideNoteCount = "requests: GuideLLM's successful, errored and incomplete; errored ones are classed from their error text, incomplete ones " +
		"(cut off when the benchmark ended) are errors of class canceled"
	guideNoteRate = "duration_s is the benchmark's start_time → end_time; request_throughput_per_s, output_tokens_per_s and total_tokens_per_s are tollgate's " +
		"(successful requests and their tokens ÷ duration_s), not GuideLLM's requests_per_second and tokens_per_second, which it averages over time"
	guideNoteLoad = "loads: synchronous → concurrency 1, concurrent (streams N) → concurrency N, constant and poisson (rate R) → rate R/s, " +
		"throughput (as many in flight as GuideLLM allows) → a point of neither concurrency nor rate, which matches no tollgate point"
	guideNoteSumm = "summaries only: GuideLLM's inter_token_latency_ms is weighted by tokens (a request counts output_tokens − 1 times), tollgate's tpot_ms " +
		"counts each request once; percentiles are GuideLLM's; with no per-request values, noise cannot be told: a compare --fail-on over it is inconclusive (exit 4)"
	guideNoteSamples = "statistics recomputed from GuideLLM's per-request values (requests.successful, errored, incomplete) with tollgate's definitions: " +
		"each request once, nearest-rank percentiles; GuideLLM's summaries (token-weighted for ITL and TPOT) are not used"
	guideNoteNotMapped = "not in a GuideLLM result, so absent: ttfb_ms, ttfo_ms, cached_tokens, prefill_tokens_per_s, queue_ms, connect_ms"
)

// guideMetrics are the summaries mapped (GuideLLM name → tollgate key,
// with the factor to tollgate's unit); the rest are read and not mapped.
var guideMetrics = []struct {
	name, key string
	scale     float64
}{
	{"time_to_first_token_ms", "ttft_ms", 1},
	{"inter_token_latency_ms", "tpot_ms", 1},
	{"request_latency", "e2e_ms", 1000},
	{"prompt_token_count", "prompt_tokens", 1},
	{"output_token_count", "completion_tokens", 1},
}

// readGuideLLM reads a GuideLLM benchmarks.json: a load point per
// benchmark.
func readGuideLLM(m map[string]any) (*report.Report, error) {
	r := &rd{}
	list, _ := r.list(m["benchmarks"], "/benchmarks")
	if r.err != nil {
		return nil, r.err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%w: a GuideLLM benchmarks.json with %w", ErrFormat, errNoPoints)
	}
	imp := &report.Imported{Tool: GuideLLMTool}
	notes := []string{guideNoteTTFT, guideNoteTPOT, guideNoteOwnTPOT, guideNoteITL, guideNoteE2E, guideNoteCount, guideNoteRate, guideNoteLoad}
	identity := map[string]string{}
	type bench struct {
		lp      *report.LoadPoint
		samples []report.RequestSample
		metrics map[string]any
		ptr     string
		totals  guideCounts
		kept    bool // it has requests, not all of them
	}
	var benches []bench
	var started time.Time
	var target report.Target
	versions := map[string]bool{}
	for i, v := range list {
		ptr := fmt.Sprintf("/benchmarks/%d", i)
		b, _ := r.object(v, ptr)
		if r.err != nil {
			return nil, r.err
		}
		if t, _ := r.text(b["type_"], at(ptr, "type_")); t != "" && t != "generative_benchmark" {
			r.fail(at(ptr, "type_"), "%q: GuideLLM v0.2 and v0.3 write generative_benchmark", t)
		}
		// The benchmark's settings moved between versions: args (v0.2),
		// config (v0.3).
		confPtr := at(ptr, "args")
		switch {
		case b["args"] != nil:
			versions["v0.2 (args, run_stats)"] = true
		case b["config"] != nil:
			confPtr = at(ptr, "config")
			versions["v0.3 (config)"] = true
		default:
			r.fail(ptr, "neither args (GuideLLM v0.2) nor config (v0.3): a GuideLLM version this tollgate does not know")
		}
		conf, _ := r.object(b[confPtr[len(ptr)+1:]], confPtr)
		if r.err != nil {
			return nil, r.err
		}
		strat, _ := r.object(r.need(conf, confPtr, "strategy", "GuideLLM names each benchmark's strategy"), at(confPtr, "strategy"))
		lp := &report.LoadPoint{}
		r.guideLoad(strat, at(confPtr, "strategy"), lp)
		identity[fmt.Sprintf("points[%d].strategy", i)] = jsonText(strat)
		if n, ok := conf["max_number"]; ok {
			identity[fmt.Sprintf("points[%d].max_number", i)] = jsonText(n)
		}
		t0, t1 := r.guideWindow(b, ptr)
		if !t0.IsZero() && (started.IsZero() || t0.Before(started)) {
			started = t0
		}
		lp.DurationS = t1.Sub(t0).Seconds()
		be := bench{lp: lp, ptr: at(ptr, "metrics"), totals: r.guideTotals(b, ptr)}
		be.metrics, _ = r.object(r.need(b, ptr, "metrics", "GuideLLM v0.2 and v0.3 summarise every benchmark"), be.ptr)
		if r.err != nil {
			return nil, r.err
		}
		var complete bool
		be.samples, complete = r.guideRequests(b, ptr, be.totals, t0)
		if !complete {
			be.samples, be.kept = nil, b["requests"] != nil
		}
		if w, ok := b["worker"].(map[string]any); ok && target.Model == "" {
			target.Model, _ = w["backend_model"].(string)
			target.BaseURL, _ = w["backend_target"].(string)
		}
		if r.err != nil {
			return nil, r.err
		}
		benches = append(benches, be)
	}
	allSamples, sampled := true, false
	for _, be := range benches {
		allSamples = allSamples && be.samples != nil
		sampled = sampled || be.kept
	}
	points := make([]point, len(benches))
	for i, be := range benches {
		points[i] = point{lp: be.lp, samples: be.samples}
		if !allSamples { // summaries for every point, or a mix would pool unlike figures
			points[i].samples = nil
			be.lp.ServingMetrics = r.guideSummaries(be.metrics, be.ptr, be.totals)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if allSamples {
		notes = append(notes, guideNoteSamples)
	} else {
		notes = append(notes, guideNoteSumm)
		if sampled {
			notes = append(notes, "GuideLLM saved only some of the requests (--output-sampling): the figures are its summaries")
		}
	}
	notes = append(notes, guideNoteNotMapped)
	var vs []string
	for v := range versions {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	imp.Version = "benchmarks.json of GuideLLM " + fmt.Sprint(vs)
	if len(vs) == 1 {
		imp.Version = "benchmarks.json of GuideLLM " + vs[0]
	}
	imp.Notes = notes
	target.Name, target.Kind, target.Description = "guidellm", report.TargetOpenAI, "read from a GuideLLM benchmarks.json"
	if target.Model != "" {
		target.ModelSource = "backend_model of GuideLLM's worker"
	}
	rep := build(imp, "guidellm benchmark", "guidellm", identity, started, target, points)
	for _, lp := range rep.Runs["guidellm"].Phases[phaseName].Points {
		guideRates(lp)
	}
	return rep, nil
}

// guideLoad names a benchmark's load from its strategy.
func (r *rd) guideLoad(strat map[string]any, ptr string, lp *report.LoadPoint) {
	typ, _ := r.text(r.need(strat, ptr, "type_", "GuideLLM's strategies name their type"), at(ptr, "type_"))
	switch typ {
	case "synchronous":
		lp.Concurrency = 1
	case "concurrent":
		n, _ := r.count(r.need(strat, ptr, "streams", "a concurrent strategy has streams"), at(ptr, "streams"))
		if n == 0 && r.err == nil {
			r.fail(at(ptr, "streams"), "0 streams")
		}
		lp.Concurrency = n
	case "constant", "poisson":
		rate, _ := r.nonNegative(r.need(strat, ptr, "rate", "a "+typ+" strategy has a rate"), at(ptr, "rate"))
		if rate == 0 && r.err == nil {
			r.fail(at(ptr, "rate"), "0 requests per second")
		}
		lp.Rate = rate
	case "throughput":
		// As many in flight as allowed: no tollgate load names it.
	case "":
	default:
		r.fail(at(ptr, "type_"), "%q: GuideLLM v0.2/v0.3 strategies are synchronous, concurrent, throughput, constant and poisson", typ)
	}
}

// guideWindow is a benchmark's start and end (epoch seconds in the file):
// the benchmark's own, else its run_stats'.
func (r *rd) guideWindow(b map[string]any, ptr string) (time.Time, time.Time) {
	src, srcPtr := b, ptr
	if b["start_time"] == nil {
		if rs, ok := b["run_stats"].(map[string]any); ok {
			src, srcPtr = rs, at(ptr, "run_stats")
		}
	}
	s, ok1 := r.nonNegative(r.need(src, srcPtr, "start_time", "a GuideLLM benchmark has start_time and end_time"), at(srcPtr, "start_time"))
	e, ok2 := r.nonNegative(r.need(src, srcPtr, "end_time", "a GuideLLM benchmark has start_time and end_time"), at(srcPtr, "end_time"))
	if !ok1 || !ok2 {
		return time.Time{}, time.Time{}
	}
	if e < s {
		r.fail(at(srcPtr, "end_time"), "%v is before start_time (%v)", e, s)
	}
	return epoch(s), epoch(e)
}

func epoch(s float64) time.Time {
	sec, frac := math.Modf(s)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}

// guideCounts are a benchmark's request totals.
type guideCounts struct{ successful, errored, incomplete, total int }

func (r *rd) guideTotals(b map[string]any, ptr string) guideCounts {
	src, srcPtr := b["request_totals"], at(ptr, "request_totals")
	if src == nil {
		if rs, ok := b["run_stats"].(map[string]any); ok {
			src, srcPtr = rs["requests_made"], at(ptr, "run_stats/requests_made")
		}
	}
	t, ok := r.object(src, srcPtr)
	if !ok {
		r.need(b, ptr, "request_totals", "a GuideLLM benchmark counts its requests (request_totals, or run_stats.requests_made)")
		return guideCounts{}
	}
	var c guideCounts
	c.successful, _ = r.count(r.need(t, srcPtr, "successful", "GuideLLM counts successful requests"), at(srcPtr, "successful"))
	c.errored, _ = r.count(t["errored"], at(srcPtr, "errored"))
	c.incomplete, _ = r.count(t["incomplete"], at(srcPtr, "incomplete"))
	c.total = c.successful + c.errored + c.incomplete
	if n, ok := r.count(t["total"], at(srcPtr, "total")); ok && n != c.total {
		r.fail(at(srcPtr, "total"), "%d, but successful + errored + incomplete is %d", n, c.total)
	}
	return c
}

// guideRequests are a benchmark's per-request values; complete when the
// file kept every request its totals count.
func (r *rd) guideRequests(b map[string]any, ptr string, c guideCounts, t0 time.Time) ([]report.RequestSample, bool) {
	reqs, ok := r.object(b["requests"], at(ptr, "requests"))
	if !ok {
		return nil, false
	}
	var out []report.RequestSample
	for _, part := range []struct {
		status string
		want   int
	}{{"successful", c.successful}, {"errored", c.errored}, {"incomplete", c.incomplete}} {
		lptr := at(at(ptr, "requests"), part.status)
		list, _ := r.list(reqs[part.status], lptr)
		if len(list) != part.want {
			return nil, false // sampled (--output-sampling): summaries only
		}
		for i, v := range list {
			rptr := fmt.Sprintf("%s/%d", lptr, i)
			q, _ := r.object(v, rptr)
			if r.err != nil {
				return nil, false
			}
			out = append(out, r.guideRequest(q, rptr, part.status, len(out), t0))
		}
	}
	return out, r.err == nil
}

// guideRequest is one request's values, in tollgate's units.
func (r *rd) guideRequest(q map[string]any, ptr, status string, index int, t0 time.Time) report.RequestSample {
	s := report.RequestSample{Index: index}
	if st, ok := r.nonNegative(q["start_time"], at(ptr, "start_time")); ok && !t0.IsZero() {
		s.StartMS = math.Max(0, epoch(st).Sub(t0).Seconds()*1000)
	}
	switch status {
	case "incomplete":
		s.Error = &report.RequestError{Class: "canceled", Message: "incomplete: cut off when GuideLLM's benchmark ended"}
		return s
	case "errored":
		msg, _ := r.text(q["error"], at(ptr, "error"))
		s.Error = &report.RequestError{Class: errorClass(msg), Message: excerpt(msg)}
		if s.Error.Message == "" {
			s.Error.Message = "errored (GuideLLM recorded no reason)"
		}
		return s
	}
	s.OK = true
	if v, ok := r.nonNegative(r.need(q, ptr, "time_to_first_token_ms", "a successful GuideLLM request has its TTFT"), at(ptr, "time_to_first_token_ms")); ok {
		s.TTFTMS = &v
	}
	if v, ok := r.nonNegative(r.need(q, ptr, "request_latency", "a successful GuideLLM request has its latency"), at(ptr, "request_latency")); ok {
		s.E2EMS = v * 1000
	}
	if n, ok := r.count(q["prompt_tokens"], at(ptr, "prompt_tokens")); ok {
		s.PromptTokens = &n
	}
	if n, ok := r.count(q["output_tokens"], at(ptr, "output_tokens")); ok {
		s.CompletionTokens = &n
	}
	if v, ok := r.nonNegative(q["inter_token_latency_ms"], at(ptr, "inter_token_latency_ms")); ok {
		s.TPOTMS = &v
		if v > 0 {
			s.DecodeTokensPerS = report.F(1000 / v)
		}
	}
	return s
}

// guideSummaries are a benchmark's figures from GuideLLM's summaries of
// its successful requests.
func (r *rd) guideSummaries(metrics map[string]any, ptr string, c guideCounts) *report.ServingMetrics {
	stats := map[string]report.Stat{}
	for _, gm := range guideMetrics {
		mptr := at(ptr, gm.name)
		sd, ok := r.object(metrics[gm.name], mptr)
		if !ok {
			if gm.key == "ttft_ms" || gm.key == "tpot_ms" || gm.key == "e2e_ms" {
				r.need(metrics, ptr, gm.name, "GuideLLM v0.2 and v0.3 summarise it")
			}
			continue
		}
		d, ok := r.object(r.need(sd, mptr, "successful", "a GuideLLM summary has successful, errored, incomplete and total"), at(mptr, "successful"))
		if !ok {
			continue
		}
		stats[gm.key] = r.guideDist(d, at(mptr, "successful"), gm.scale)
	}
	m := summaries(c.total, c.successful, "protocol", stats)
	m.Errors.ByClass["protocol"] -= c.incomplete
	m.Errors.ByClass["canceled"] += c.incomplete
	return m
}

// guideDist is a GuideLLM DistributionSummary as a Stat.
func (r *rd) guideDist(d map[string]any, ptr string, scale float64) report.Stat {
	get := func(m map[string]any, p, k string) *float64 {
		if v, ok := r.number(m[k], at(p, k)); ok {
			v *= scale
			return &v
		}
		return nil
	}
	n, _ := r.count(r.need(d, ptr, "count", "a GuideLLM distribution counts its values"), at(ptr, "count"))
	pp := at(ptr, "percentiles")
	median := false
	s := summary{count: n, mean: get(d, ptr, "mean"), min: get(d, ptr, "min"), max: get(d, ptr, "max"), at: func(stat string) string {
		switch {
		case stat == "p50" && median:
			return at(ptr, "median")
		case strings.HasPrefix(stat, "p"):
			return at(pp, stat)
		}
		return at(ptr, stat)
	}}
	if ps, ok := r.object(d["percentiles"], pp); ok {
		s.p50, s.p90, s.p95, s.p99 = get(ps, pp, "p50"), get(ps, pp, "p90"), get(ps, pp, "p95"), get(ps, pp, "p99")
	}
	if s.p50 == nil {
		s.p50, median = get(d, ptr, "median"), true
	}
	return r.stat(s)
}

// guideRates sets a point's throughputs by tollgate's definitions, from
// its counts and tokens over its duration.
func guideRates(lp *report.LoadPoint) {
	if lp.DurationS <= 0 {
		return
	}
	tokens := func(st report.Stat) float64 {
		if st.Mean == nil {
			return 0
		}
		return *st.Mean * float64(st.Count)
	}
	in, out := tokens(lp.PromptTokens), tokens(lp.CompletionTokens)
	lp.RequestThroughputPerS = report.F(float64(lp.Succeeded) / lp.DurationS)
	lp.OutputTokensPerS = report.F(out / lp.DurationS)
	lp.TotalTokensPerS = report.F((in + out) / lp.DurationS)
}
