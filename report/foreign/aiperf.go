package foreign

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/view"
)

// AIPerfTool names NVIDIA AIPerf in reports and notes.
const AIPerfTool = "NVIDIA AIPerf"

// Definition notes of an AIPerf summary.
const (
	aiperfNoteTTFT = "ttft_ms ← time_to_first_token: request start → the first response AIPerf received with content; tollgate's ends at the first non-empty " +
		"content, reasoning or tool-call delta"
	aiperfNoteTPOT = "tpot_ms ← AIPerf's inter_token_latency: (request_latency − time_to_first_token) ÷ (output_sequence_length − 1), the formula of tollgate's " +
		"tpot_ms under another name, between AIPerf's ends (its first and last responses)"
	aiperfNoteRate = "decode_tokens_per_s ← output_token_throughput_per_user: per request, 1 ÷ inter_token_latency"
	aiperfNoteE2E  = "e2e_ms ← request_latency: request start → the last response"
	aiperfNoteITL  = "itl_ms: AIPerf's summary has no per-gap latency (its inter_chunk_latency, where there, is per chunk and not mapped), so it is absent"
	aiperfNoteTok  = "prompt_tokens ← input_sequence_length, completion_tokens ← output_sequence_length, as AIPerf counted them; requests are request_count " +
		"(the valid ones) + error_request_count, whose failures are counted under errors.by_class.protocol (the summary does not say why they failed)"
	aiperfNoteSumm = "summaries only: avg is read as mean, p50…p99 are AIPerf's percentiles (not tollgate's nearest rank), std is not kept; the per-request records " +
		"(profile_export.jsonl) are not read, so noise cannot be told: a compare --fail-on over it is inconclusive (exit 4)"
	aiperfNoteNotMapped = "not in an AIPerf summary, so absent: ttfb_ms, ttfo_ms, cached_tokens, prefill_tokens_per_s, queue_ms, connect_ms"
)

// aiperfUnits are, by what a record holds, the units it may come in with
// their factor to tollgate's (ms for times).
var aiperfUnits = map[string]map[string]float64{
	"time":   {"ms": 1, "ns": 1e-6, "us": 1e-3, "µs": 1e-3, "s": 1000, "sec": 1000},
	"tokens": {"tokens": 1},
	"rate":   {"tokens/sec/user": 1, "tokens/sec": 1, "requests/sec": 1, "tokens/s": 1},
	"count":  {"requests": 1, "count": 1, "": 1},
	"secs":   {"sec": 1, "s": 1, "ms": 1e-3, "ns": 1e-9},
}

// aiperfMetrics map AIPerf's records onto tollgate's metrics.
var aiperfMetrics = []struct{ tag, key, kind string }{
	{"time_to_first_token", "ttft_ms", "time"},
	{"request_latency", "e2e_ms", "time"},
	{"inter_token_latency", "tpot_ms", "time"},
	{"output_token_throughput_per_user", "decode_tokens_per_s", "rate"},
	{"output_token_throughput_per_request", "decode_tokens_per_s", "rate"}, // GenAI-Perf's name
	{"input_sequence_length", "prompt_tokens", "tokens"},
	{"output_sequence_length", "completion_tokens", "tokens"},
}

// aiperfScalars are the records read as one value each.
var aiperfScalars = map[string]string{
	"request_throughput": "rate", "output_token_throughput": "rate", "request_count": "count",
	"error_request_count": "count", "benchmark_duration": "secs",
}

// isAIPerfFlat reports whether m is an AIPerf or GenAI-Perf summary with
// its records at the top level (profile_export_genai_perf.json's layout).
func isAIPerfFlat(m map[string]any) bool {
	n := 0
	for _, tag := range []string{"time_to_first_token", "request_latency", "inter_token_latency", "request_throughput"} {
		if rec, ok := m[tag].(map[string]any); ok {
			if _, ok := rec["unit"]; ok {
				n++
			}
		}
	}
	return n >= 2
}

// readAIPerf reads an AIPerf profile_export_aiperf.json: its records, by
// tag (or a list of them), or the same records at the top level.
func readAIPerf(m map[string]any) (*report.Report, error) {
	r := &rd{}
	records := map[string]map[string]any{}
	ptrOf := map[string]string{}
	layout := "records"
	switch recs := m["records"].(type) {
	case map[string]any:
		for tag, v := range recs {
			if rec, ok := r.object(v, at("/records", tag)); ok {
				records[tag], ptrOf[tag] = rec, at("/records", tag)
			}
		}
	case []any:
		for i, v := range recs {
			p := fmt.Sprintf("/records/%d", i)
			rec, _ := r.object(v, p)
			tag, _ := r.text(r.need(rec, p, "tag", "a record in a list names its metric"), at(p, "tag"))
			if tag != "" {
				records[tag], ptrOf[tag] = rec, p
			}
		}
	case nil:
		layout = "flat"
		for tag, v := range m {
			if rec, ok := v.(map[string]any); ok {
				if _, has := rec["unit"]; has {
					records[tag], ptrOf[tag] = rec, at("", tag)
				}
			}
		}
	default:
		r.fail("/records", "want an object of records by tag, or a list of them, got %s", kindOf(m["records"]))
	}
	if r.err != nil {
		return nil, r.err
	}
	scalar := func(tag string) (float64, bool) {
		rec, ok := records[tag]
		if !ok {
			return 0, false
		}
		f := r.aiperfUnit(rec, ptrOf[tag], aiperfScalars[tag])
		v, ok := r.nonNegative(rec["avg"], at(ptrOf[tag], "avg"))
		return v * f, ok
	}
	okN, hasCount := scalar("request_count")
	errN, _ := scalar("error_request_count")
	if !hasCount && r.err == nil {
		r.fail("/records/request_count", "missing; AIPerf counts the requests it measured (request_count)")
	}
	succeeded, failed := int(okN+0.5), int(errN+0.5)
	stats := map[string]report.Stat{}
	used := map[string]bool{"request_count": true, "error_request_count": true}
	for _, am := range aiperfMetrics {
		rec, ok := records[am.tag]
		if !ok {
			continue
		}
		used[am.tag] = true
		p := ptrOf[am.tag]
		f := r.aiperfUnit(rec, p, am.kind)
		get := func(k string) *float64 {
			if v, ok := r.number(rec[k], at(p, k)); ok {
				v *= f
				return &v
			}
			return nil
		}
		n := succeeded
		if c, ok := r.count(rec["count"], at(p, "count")); ok {
			n = c
		}
		stats[am.key] = r.stat(summary{count: n, mean: get("avg"), min: get("min"), max: get("max"),
			p50: get("p50"), p90: get("p90"), p95: get("p95"), p99: get("p99"), at: func(stat string) string {
				if stat == "mean" {
					stat = "avg"
				}
				return at(p, stat)
			}})
	}
	for _, tag := range []string{"time_to_first_token", "request_latency"} {
		if _, ok := records[tag]; !ok && r.err == nil {
			r.fail(at("/records", tag), "missing; every AIPerf profile of a streaming endpoint has it")
		}
	}
	lp := &report.LoadPoint{}
	if v, ok := scalar("benchmark_duration"); ok {
		lp.DurationS = v
		used["benchmark_duration"] = true
	}
	if v, ok := scalar("request_throughput"); ok {
		lp.RequestThroughputPerS = report.F(v)
		used["request_throughput"] = true
	}
	if v, ok := scalar("output_token_throughput"); ok {
		lp.OutputTokensPerS = report.F(v)
		used["output_token_throughput"] = true
	}
	notes := []string{aiperfNoteTTFT, aiperfNoteTPOT, aiperfNoteRate, aiperfNoteE2E, aiperfNoteITL, aiperfNoteTok}
	conf, _ := m["input_config"].(map[string]any)
	model, endpoint, url := r.aiperfLoad(conf, lp, &notes)
	if r.err != nil {
		return nil, r.err
	}
	lp.ServingMetrics = summaries(succeeded+failed, succeeded, "protocol", stats)
	if pt, ok := stats["prompt_tokens"]; ok && pt.Mean != nil && lp.DurationS > 0 && lp.OutputTokensPerS != nil {
		lp.TotalTokensPerS = report.F(*lp.OutputTokensPerS + *pt.Mean*float64(succeeded)/lp.DurationS)
	}
	var unmapped []string
	for tag := range records {
		if !used[tag] {
			unmapped = append(unmapped, tag)
		}
	}
	sort.Strings(unmapped)
	notes = append(notes, aiperfNoteSumm)
	if len(unmapped) > 0 {
		notes = append(notes, "not mapped (no tollgate metric is defined as they are): "+strings.Join(unmapped, ", "))
	}
	notes = append(notes, aiperfNoteNotMapped)
	version := "profile_export_aiperf.json (records by tag)"
	if layout == "flat" {
		version = "an AIPerf / GenAI-Perf summary with its records at the top level"
	}
	if v, ok := m["aiperf_version"].(string); ok {
		version += ", aiperf " + v
	}
	imp := &report.Imported{Tool: AIPerfTool, Version: version, Notes: notes}
	identity := map[string]string{"points[0].load": jsonText(view.PointLabel(lp)), "endpoint": jsonText(endpoint)}
	started := time.Time{}
	if s, ok := m["start_time"].(string); ok {
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
			if t, err := time.Parse(layout, s); err == nil {
				started = t
				break
			}
		}
	}
	target := report.Target{Name: "aiperf", Kind: report.TargetOpenAI, Model: model, Endpoint: endpoint, BaseURL: url, Description: "read from an AIPerf profile export"}
	if model != "" {
		target.ModelSource = "input_config of the AIPerf profile"
	}
	return build(imp, "aiperf profile", "aiperf", identity, started, target, []point{{lp: lp}}), nil
}

// aiperfUnit is the factor from a record's unit to tollgate's for kind.
func (r *rd) aiperfUnit(rec map[string]any, ptr, kind string) float64 {
	u, _ := r.text(rec["unit"], at(ptr, "unit"))
	f, ok := aiperfUnits[kind][u]
	if !ok && r.err == nil {
		var want []string
		for k := range aiperfUnits[kind] {
			if k != "" {
				want = append(want, k)
			}
		}
		sort.Strings(want)
		r.fail(at(ptr, "unit"), "%q: want one of %s", u, strings.Join(want, ", "))
	}
	return f
}

// aiperfLoad reads the load, the model and the endpoint from AIPerf's
// input_config (loadgen, endpoint), or GenAI-Perf's flat one.
func (r *rd) aiperfLoad(conf map[string]any, lp *report.LoadPoint, notes *[]string) (model, endpoint, url string) {
	load, ptr := conf, "/input_config"
	if lg, ok := conf["loadgen"].(map[string]any); ok {
		load, ptr = lg, "/input_config/loadgen"
	}
	if c, ok := r.count(load["concurrency"], at(ptr, "concurrency")); ok && c > 0 {
		lp.Concurrency = c
	}
	if v, ok := r.nonNegative(load["request_rate"], at(ptr, "request_rate")); ok && v > 0 {
		lp.Rate = v
		if lp.Concurrency > 0 {
			*notes = append(*notes, fmt.Sprintf("rate %g/s capped at concurrency %d: read as rate %g/s", v, lp.Concurrency, v))
			lp.Concurrency = 0
		}
	}
	if lp.Concurrency == 0 && lp.Rate == 0 {
		lp.Concurrency = 1
		*notes = append(*notes, "input_config names no concurrency or request_rate: read as AIPerf's default, concurrency 1")
	}
	ep, _ := conf["endpoint"].(map[string]any)
	names, _ := ep["model_names"].([]any)
	if len(names) == 0 {
		names, _ = conf["model"].([]any) // GenAI-Perf
	}
	if len(names) > 0 {
		model, _ = names[0].(string)
	}
	switch t, _ := ep["type"].(string); {
	case strings.Contains(t, "chat"):
		endpoint = "chat"
	case strings.Contains(t, "completions"):
		endpoint = "completions"
	}
	url, _ = ep["url"].(string)
	return model, endpoint, url
}
