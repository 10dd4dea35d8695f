package foreign

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/view"
)

// LLMDTool names the llm-d benchmark report in reports and notes.
const LLMDTool = "llm-d benchmark report"

// Definition notes of an llm-d benchmark report. The report relays the
// figures of the harness that ran the load (vLLM benchmark, GuideLLM,
// inference-perf, …), so where a definition is the harness's the note
// says so rather than pretending to one.
const (
	llmdNoteTTFT = "ttft_ms ← time_to_first_token: request start → the first token as the harness that ran the load measured it (the report carries that tool's figure); " +
		"tollgate's ends at the first non-empty content, reasoning or tool-call delta"
	llmdNoteTPOT = "tpot_ms ← time_per_output_token: the schema's TPOT, (request_latency − time_to_first_token) ÷ (output tokens − 1), the first token excluded; " +
		"tollgate's is (t_last_token − t_first_token) ÷ (completion_tokens − 1), which ends at the last token, not the end of the stream"
	llmdNoteITL = "itl_ms ← inter_token_latency: the harness's ITL, which the schema says may differ from TPOT by tool (vLLM's is every gap over all requests, as tollgate's; " +
		"others average per request)"
	llmdNoteE2E   = "e2e_ms ← request_latency: request start → the end of the response, as the harness measured it"
	llmdNoteNTPOT = "normalized_time_per_output_token (request_latency ÷ output tokens, the first token included) has no tollgate metric: not mapped"
	llmdNoteTok   = "prompt_tokens ← input_length, completion_tokens ← output_length (units count); requests are requests.total, of which failures are counted under " +
		"errors.by_class.protocol and incomplete under errors.by_class.canceled (the report does not say why they failed)"
	llmdNoteSumm = "summaries only: mean, min, p50, p90, p95, p99 and max are the harness's (not tollgate's nearest rank); mode, stddev, p0p1…p25, p75 and p99p9 are not kept, " +
		"and noise cannot be told: a compare --fail-on over it is inconclusive (exit 4)"
	llmdNoteNotMapped = "not in an llm-d benchmark report, so absent: ttfb_ms, ttfo_ms, decode_tokens_per_s (its throughputs are of the whole run, not per request), " +
		"prefill_tokens_per_s, cached_tokens, queue_ms, connect_ms"
)

// llmdUnits are, by what a statistic holds, the units the schema allows
// for it (base.py's UNITS_*) with their factor to tollgate's.
var llmdUnits = map[string]map[string]float64{
	"time":      {"ms": 1, "s": 1000},
	"per_token": {"ms/token": 1, "s/token": 1000},
	"count":     {"count": 1},
	"tokens/s":  {"tokens/s": 1},
	"queries/s": {"queries/s": 1},
}

// llmdLatencies map the report's latency statistics onto tollgate's
// metrics (the same names in v0.1 and v0.2).
var llmdLatencies = []struct{ name, key, kind string }{
	{"time_to_first_token", "ttft_ms", "time"},
	{"time_per_output_token", "tpot_ms", "per_token"},
	{"inter_token_latency", "itl_ms", "per_token"},
	{"request_latency", "e2e_ms", "time"},
}

// llmdV02 matches the versions of the 0.2 line: revisions only add
// optional fields (schema_v0_2.py), so every 0.2.x reads alike.
var llmdV02 = regexp.MustCompile(`^0\.2(\.[0-9]+)?$`)

// llmdLayout is where a version keeps what is read.
type llmdLayout struct {
	version string
	// requests, latency and throughput are the JSON pointers of the
	// aggregate's parts.
	requests, latency, throughput string
}

// readLLMD reads an llm-d benchmark report (JSON; the tool writes YAML
// too, which is not read): v0.1 (scenario, metrics) or v0.2.x (run,
// scenario, results.request_performance.aggregate), as one load point.
func readLLMD(m map[string]any) (*report.Report, error) {
	r := &rd{}
	version, _ := r.text(r.need(m, "", "version", "an llm-d benchmark report names its schema version"), "/version")
	if r.err != nil {
		return nil, r.err
	}
	var lay llmdLayout
	switch {
	case version == "0.1":
		lay = llmdLayout{version: "v0.1", requests: "/metrics/requests", latency: "/metrics/latency", throughput: "/metrics/throughput"}
	case llmdV02.MatchString(version):
		const agg = "/results/request_performance/aggregate"
		lay = llmdLayout{version: "v" + version, requests: agg + "/requests", latency: agg + "/latency", throughput: agg + "/throughput"}
	default:
		return nil, &FieldError{Pointer: "/version", Message: fmt.Sprintf("%q: this tollgate reads llm-d benchmark reports 0.1 and 0.2.x", version)}
	}
	reqs, _ := r.object(r.need(r.path(m, parent(lay.requests)), parent(lay.requests), "requests", "every llm-d benchmark report counts its requests"), lay.requests)
	total, _ := r.count(r.need(reqs, lay.requests, "total", "the requests sent"), at(lay.requests, "total"))
	failures, _ := r.count(reqs["failures"], at(lay.requests, "failures"))
	incomplete, _ := r.count(reqs["incomplete"], at(lay.requests, "incomplete"))
	if r.err == nil && failures+incomplete > total {
		r.fail(at(lay.requests, "total"), "%d, fewer than its failures (%d) and incomplete (%d)", total, failures, incomplete)
	}
	succeeded := total - failures - incomplete
	stats := map[string]report.Stat{}
	for _, l := range []struct{ name, key string }{{"input_length", "prompt_tokens"}, {"output_length", "completion_tokens"}} {
		if st, ok := r.llmdStat(reqs, lay.requests, l.name, "count", succeeded); ok {
			stats[l.key] = st
		}
	}
	lat, _ := r.object(r.need(r.path(m, parent(lay.latency)), parent(lay.latency), "latency", "every llm-d benchmark report has its latencies"), lay.latency)
	for _, l := range llmdLatencies {
		if st, ok := r.llmdStat(lat, lay.latency, l.name, l.kind, succeeded); ok {
			stats[l.key] = st
		}
	}
	if _, ok := lat["time_to_first_token"]; !ok && r.err == nil {
		r.fail(at(lay.latency, "time_to_first_token"), "missing; v0.1 requires it, a v0.2 report of a streaming load has it, and tollgate compares by it")
	}
	lp := &report.LoadPoint{}
	notes := []string{llmdNoteTTFT, llmdNoteTPOT, llmdNoteITL, llmdNoteE2E, llmdNoteTok}
	thr, _ := r.object(r.path(m, lay.throughput), lay.throughput)
	var started time.Time
	var harness, model string
	if lay.version == "v0.1" {
		lp.OutputTokensPerS = r.llmdRate(thr, lay.throughput, "output_tokens_per_sec")
		lp.TotalTokensPerS = r.llmdRate(thr, lay.throughput, "total_tokens_per_sec")
		lp.RequestThroughputPerS = r.llmdRate(thr, lay.throughput, "requests_per_sec")
		tm, _ := r.object(r.need(r.path(m, "/metrics"), "/metrics", "time", "v0.1 times its run"), "/metrics/time")
		lp.DurationS, _ = r.nonNegative(r.need(tm, "/metrics/time", "duration", "v0.1 times its run, in seconds"), "/metrics/time/duration")
		if s, ok := r.nonNegative(tm["start"], "/metrics/time/start"); ok {
			sec, frac := math.Modf(s)
			started = time.Unix(int64(sec), int64(frac*1e9))
		}
		harness, model = r.llmdLoadV01(m, lp, &notes)
	} else {
		lp.OutputTokensPerS = r.llmdRateStat(thr, lay.throughput, "output_token_rate", "tokens/s")
		lp.TotalTokensPerS = r.llmdRateStat(thr, lay.throughput, "total_token_rate", "tokens/s")
		lp.RequestThroughputPerS = r.llmdRateStat(thr, lay.throughput, "request_rate", "queries/s")
		started, lp.DurationS = r.llmdTimeV02(m)
		harness, model = r.llmdLoadV02(m, lp, &notes)
	}
	if r.err != nil {
		return nil, r.err
	}
	lp.ServingMetrics = summaries(total, succeeded, "protocol", stats)
	lp.ServingMetrics.Errors.ByClass["protocol"] -= incomplete
	lp.ServingMetrics.Errors.ByClass["canceled"] += incomplete
	notes = append(notes, llmdNoteNTPOT, llmdNoteSumm, llmdNoteNotMapped)
	v := lay.version
	if harness != "" {
		v += ", load by " + harness
	}
	imp := &report.Imported{Tool: LLMDTool, Version: v, Notes: notes}
	identity := map[string]string{"points[0].load": jsonText(view.PointLabel(lp)), "harness": jsonText(harness)}
	target := report.Target{Name: "llm-d", Kind: report.TargetOpenAI, Model: model, Description: "read from an llm-d benchmark report"}
	if model != "" {
		target.ModelSource = "scenario of the llm-d benchmark report"
	}
	return build(imp, "llm-d benchmark report", "llm-d", identity, started, target, []point{{lp: lp}}), nil
}

// path is the object at the JSON pointer ptr of m (nil where any part is
// absent), for the nested parts of a layout.
func (r *rd) path(m map[string]any, ptr string) map[string]any {
	cur := m
	done := ""
	for _, k := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if cur == nil {
			return nil
		}
		done = at(done, k)
		next, ok := r.object(cur[k], done)
		if !ok {
			return nil
		}
		cur = next
	}
	return cur
}

// parent is ptr without its last key.
func parent(ptr string) string {
	if i := strings.LastIndex(ptr, "/"); i >= 0 {
		return ptr[:i]
	}
	return ""
}

// llmdStat is the Statistics at m[name] in tollgate's units, ok false
// when it is absent; its count is that of the succeeded requests (the
// schema keeps none).
func (r *rd) llmdStat(m map[string]any, ptr, name, kind string, n int) (report.Stat, bool) {
	p := at(ptr, name)
	s, ok := r.object(m[name], p)
	if !ok {
		return report.Stat{}, false
	}
	f := r.llmdUnit(s, p, kind)
	get := func(k string) *float64 {
		if v, ok := r.number(s[k], at(p, k)); ok {
			v *= f
			return &v
		}
		return nil
	}
	r.need(s, p, "mean", "every llm-d statistic has its mean")
	return r.stat(summary{count: n, mean: get("mean"), min: get("min"), p50: get("p50"), p90: get("p90"), p95: get("p95"),
		p99: get("p99"), max: get("max"), at: func(stat string) string { return at(p, stat) }}), true
}

// llmdUnit is the factor from a statistic's units to tollgate's for kind,
// refusing a unit the schema does not allow there.
func (r *rd) llmdUnit(s map[string]any, ptr, kind string) float64 {
	u, _ := r.text(r.need(s, ptr, "units", "every llm-d statistic names its units"), at(ptr, "units"))
	f, ok := llmdUnits[kind][u]
	if !ok && r.err == nil {
		want := make([]string, 0, len(llmdUnits[kind]))
		for k := range llmdUnits[kind] {
			want = append(want, k)
		}
		sort.Strings(want)
		r.fail(at(ptr, "units"), "%q: want %s (the units the llm-d schema allows here)", u, strings.Join(want, " or "))
	}
	return f
}

// llmdRate is a v0.1 throughput, a plain number.
func (r *rd) llmdRate(m map[string]any, ptr, name string) *float64 {
	if v, ok := r.nonNegative(m[name], at(ptr, name)); ok {
		return report.F(v)
	}
	return nil
}

// llmdRateStat is the mean of a v0.2 throughput, a Statistics of the run.
func (r *rd) llmdRateStat(m map[string]any, ptr, name, kind string) *float64 {
	p := at(ptr, name)
	s, ok := r.object(m[name], p)
	if !ok {
		return nil
	}
	f := r.llmdUnit(s, p, kind)
	if v, ok := r.nonNegative(r.need(s, p, "mean", "every llm-d statistic has its mean"), at(p, "mean")); ok {
		return report.F(v * f)
	}
	return nil
}

// llmdLoadV01 reads v0.1's scenario: the harness (load.name), its load
// from the args its converters write, and the model.
func (r *rd) llmdLoadV01(m map[string]any, lp *report.LoadPoint, notes *[]string) (harness, model string) {
	sc, _ := r.object(m["scenario"], "/scenario")
	if md, ok := r.object(sc["model"], "/scenario/model"); ok {
		model, _ = r.text(md["name"], "/scenario/model/name")
	}
	load, _ := r.object(r.need(sc, "/scenario", "load", "v0.1 names the harness that ran the load"), "/scenario/load")
	harness, _ = r.text(load["name"], "/scenario/load/name")
	args, _ := r.object(load["args"], "/scenario/load/args")
	var rate float64
	for _, k := range []string{"request_rate", "rate", "rate_qps"} {
		if s, ok := args[k].(string); ok && s == "inf" {
			continue // vLLM's "as fast as it can": a closed loop
		}
		if v, ok := r.nonNegative(args[k], at("/scenario/load/args", k)); ok && v > 0 {
			rate = v
			break
		}
	}
	conc := 0
	for _, k := range []string{"max_concurrency", "concurrency"} {
		if c, ok := r.count(args[k], at("/scenario/load/args", k)); ok && c > 0 {
			conc = c
			break
		}
	}
	r.llmdPoint(lp, rate, conc, "/scenario/load/args", "request_rate or max_concurrency", notes)
	return harness, model
}

// llmdLoadV02 reads v0.2's scenario: the harness and its load from
// load.standardized, the model from the first inference engine.
func (r *rd) llmdLoadV02(m map[string]any, lp *report.LoadPoint, notes *[]string) (harness, model string) {
	const sp = "/scenario/load/standardized"
	std, _ := r.object(r.need(r.path(m, "/scenario/load"), "/scenario/load", "standardized", "v0.2 describes its workload"), sp)
	harness, _ = r.text(std["tool"], at(sp, "tool"))
	if v, ok := r.text(std["tool_version"], at(sp, "tool_version")); ok && harness != "" {
		harness += " " + v
	}
	rate, _ := r.nonNegative(std["rate_qps"], at(sp, "rate_qps"))
	conc := 0
	if c, ok := r.number(std["concurrency"], at(sp, "concurrency")); ok && c >= 1 && c == math.Trunc(c) && c <= math.MaxInt32 {
		conc = int(c)
	} else if ok {
		r.fail(at(sp, "concurrency"), "want a whole number ≥ 1, got %v", c)
	}
	r.llmdPoint(lp, rate, conc, sp, "rate_qps or concurrency", notes)
	stack, _ := r.list(r.path(m, "/scenario")["stack"], "/scenario/stack")
	for _, c := range stack {
		comp, _ := c.(map[string]any)
		st, _ := comp["standardized"].(map[string]any)
		md, _ := st["model"].(map[string]any)
		if name, ok := md["name"].(string); ok && st["kind"] == "inference_engine" {
			model = name
			break
		}
	}
	return harness, model
}

// llmdPoint sets the load point from a rate and a concurrency, refusing a
// report that names neither (its point could be told from no other).
func (r *rd) llmdPoint(lp *report.LoadPoint, rate float64, conc int, ptr, keys string, notes *[]string) {
	switch {
	case rate > 0:
		lp.Rate = rate
		if conc > 0 {
			*notes = append(*notes, fmt.Sprintf("rate %g/s capped at concurrency %d: read as rate %g/s", rate, conc, rate))
		}
	case conc > 0:
		lp.Concurrency = conc
	default:
		r.fail(ptr, "names no load (%s): the load point cannot be told", keys)
	}
}

// llmdTimeV02 is v0.2's run.time: its start (RFC 3339) and its duration
// (ISO 8601, as pydantic writes a timedelta, or seconds), or end − start.
func (r *rd) llmdTimeV02(m map[string]any) (time.Time, float64) {
	const tp = "/run/time"
	tm, _ := r.object(r.need(r.path(m, "/run"), "/run", "time", "v0.2 times its run"), tp)
	var start, end time.Time
	for _, e := range []struct {
		key string
		t   *time.Time
	}{{"start", &start}, {"end", &end}} {
		if s, ok := r.text(tm[e.key], at(tp, e.key)); ok {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				r.fail(at(tp, e.key), "%q: want an RFC 3339 time", s)
			}
			*e.t = t
		}
	}
	switch d := tm["duration"].(type) {
	case nil:
		if !start.IsZero() && !end.IsZero() && !end.Before(start) {
			return start, end.Sub(start).Seconds()
		}
		r.fail(at(tp, "duration"), "missing, and no start and end to tell it by")
	case string:
		s, ok := isoSeconds(d)
		if !ok {
			r.fail(at(tp, "duration"), "%q: want an ISO 8601 duration (PT49.97S)", d)
		}
		return start, s
	default:
		s, _ := r.nonNegative(d, at(tp, "duration"))
		return start, s
	}
	return start, 0
}

// isoDuration is the subset of ISO 8601 durations a timedelta is
// written as: days, hours, minutes and (fractional) seconds.
var isoDuration = regexp.MustCompile(`^P(?:([0-9]+)D)?(?:T(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+(?:\.[0-9]+)?)S)?)?$`)

// isoSeconds is the ISO 8601 duration s in seconds.
func isoSeconds(s string) (float64, bool) {
	g := isoDuration.FindStringSubmatch(s)
	if g == nil || s == "P" || s == "PT" {
		return 0, false
	}
	total := 0.0
	for i, unit := range []float64{86400, 3600, 60, 1} {
		if g[i+1] == "" {
			continue
		}
		v, err := strconv.ParseFloat(g[i+1], 64)
		if err != nil {
			return 0, false
		}
		total += v * unit
	}
	return total, true
}
