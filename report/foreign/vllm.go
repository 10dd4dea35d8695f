package foreign

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/view"
)

// VLLMTool names vLLM's benchmark client in reports and notes.
const VLLMTool = "vLLM bench serve"

// vllmVersion is what a vLLM result says of its version: nothing, so the
// keys it has are what is recognised.
const vllmVersion = "the keys of vLLM v0.6 to v0.11, benchmark_serving.py and vllm bench serve"

// vllmKeys are vLLM's result keys, but its statistics and per-request
// lists, as benchmark_serving.py (v0.6–v0.8) and vllm bench serve
// (v0.9–v0.11) write them with --save-result. Where
// the versions differ, each key is optional: burstiness (v0.6.4+),
// max_concurrency (v0.6.2+), total_token_throughput, request_goodput
// (written "request_goodput:", with its colon, by some releases after v0.6.4), failed,
// max_output_tokens_per_s and max_concurrent_requests (v0.9+),
// endpoint_type and label (vllm bench serve), ramp_up_* (v0.10+).
// Each is read for its type where it is used. Statistic keys are matched
// by vllmStatKey, the lists are vllmLists; any other key is --metadata
// KEY=VALUE when its value is a string, and refused otherwise.
var vllmKeys = map[string]bool{
	"date": true, "backend": true, "model_id": true, "tokenizer_id": true, "num_prompts": true,
	"request_rate": true, "burstiness": true, "max_concurrency": true,
	"duration": true, "completed": true, "failed": true, "total_input_tokens": true, "total_output_tokens": true,
	"request_throughput": true, "request_goodput": true, "request_goodput:": true,
	"output_throughput": true, "total_token_throughput": true, "max_output_tokens_per_s": true, "max_concurrent_requests": true,
	"endpoint_type": true, "label": true, "ramp_up_strategy": true, "ramp_up_start_rps": true, "ramp_up_end_rps": true,
}

// vllmRequired are the keys every vLLM result since v0.6 has.
var vllmRequired = []string{"date", "model_id", "num_prompts", "request_rate", "duration", "completed",
	"total_input_tokens", "total_output_tokens", "request_throughput", "output_throughput"}

// vllmStatKey matches a summary statistic: mean_ttft_ms, median_itl_ms,
// std_tpot_ms, p99_e2el_ms, p99.9_ttft_ms (--metric-percentiles).
var vllmStatKey = regexp.MustCompile(`^(mean|median|std|p([0-9]+(?:\.[0-9]+)?))_(ttft|tpot|itl|e2el)_ms$`)

// vllmMetric is tollgate's metric for each of vLLM's.
var vllmMetric = map[string]string{"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2el": "e2e_ms"}

// vllmLists are the per-request lists of --save-detailed; samples need
// the first five.
var vllmLists = []string{"ttfts", "itls", "output_lens", "input_lens", "errors", "generated_texts"}

// Definition notes of a vLLM result (backend-specific ones in vllmNotes).
const (
	vllmNoteTPOT = "tpot_ms: vLLM's TPOT is (latency − ttft) ÷ (output tokens − 1), the first token excluded as in tollgate's tpot_ms, " +
		"but between vLLM's ends: its TTFT (above) and the last chunk it received, where tollgate's are the first and last token events"
	vllmNoteITL = "itl_ms: vLLM's ITL is the gap between consecutive streamed chunks with choices, one gap per chunk however many tokens it carries " +
		"(speculative decoding, stream intervals) and the last chunk (finish_reason, no text) included; tollgate's are the gaps between token-bearing events"
	vllmNoteE2E   = "e2e_ms: vLLM's latency ends at the last chunk before [DONE]; tollgate's at the end of the stream"
	vllmNoteClock = "clock: vLLM times a chunk when aiohttp hands it to Python (time.perf_counter); tollgate when its bytes arrive (the kernel's receive time)"
	vllmNoteDur   = "duration_s and the throughputs are vLLM's: benchmark duration from the first request sent to the last answer, completed ÷ duration, output tokens ÷ duration"
	vllmNoteSumm  = "summaries only (saved without --save-detailed): percentiles are vLLM's (numpy's linear interpolation, not tollgate's nearest rank), median_* is read as p50, std_* is not kept; " +
		"ttft_ms, tpot_ms and e2e_ms count the completed requests, itl_ms.count is total_output_tokens − completed (a gap per token after the first: the summary does not say); " +
		"failures (num_prompts − completed) are counted under errors.by_class.protocol (a summary does not say why they failed); " +
		"with no per-request values, noise cannot be told: a compare --fail-on over it is inconclusive (exit 4)"
	vllmNoteSamples = "statistics recomputed from vLLM's per-request values (ttfts, itls, output_lens, input_lens, errors) with tollgate's definitions: nearest-rank percentiles, " +
		"e2e_ms = ttft + Σ itls (vLLM saves no per-request latency; a chat stream's trailing usage chunk is left out), tpot_ms = Σ itls ÷ (output_lens − 1), " +
		"decode_tokens_per_s = (output_lens − 1) ÷ Σ itls; vLLM's own percentiles (numpy's linear interpolation) are not used"
	vllmNoteErrors = "errors: vLLM keeps each failure as text; its class is read from it (an HTTP reason phrase: http_status; a Python traceback: " +
		"by its exception, connect, timeout_total, reset, else protocol)"
	vllmNoteNotMapped = "not in a vLLM result, so absent: ttfb_ms, ttfo_ms, cached_tokens, prefill_tokens_per_s, queue_ms, connect_ms"
)

// vllmLine is one vLLM result: a --save-result file, or one line of an
// --append-result file.
type vllmLine struct {
	date                                time.Time
	backend, model, tokenizer, endpoint string
	prompts, completed                  int
	rate                                float64 // +Inf for "inf"
	burstiness                          *float64
	maxConcurrency                      *int
	duration                            float64
	totalIn, totalOut                   int
	reqPerS, outPerS                    float64
	totalPerS, peak                     *float64
	// stats: vLLM metric (ttft) → statistic (mean, median, std, p99) → ms.
	stats    map[string]map[string]float64
	lists    map[string][]any
	metadata map[string]string
}

// readVLLM reads a vLLM result: one JSON object, or one a line.
func readVLLM(body []byte) (*report.Report, error) {
	dec := json.NewDecoder(bytes.NewReader(pythonJSON(body)))
	dec.UseNumber()
	var lines []vllmLine
	for n := 1; ; n++ {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: a vLLM result, result %d: %w", ErrFormat, n, err)
		}
		r := &rd{}
		if n > 1 || dec.More() {
			r.line = n
		}
		m, ok := v.(map[string]any)
		if !ok {
			r.fail("", "want a vLLM result (an object with backend, model_id, …), got %s", kindOf(v))
			return nil, r.err
		}
		l := r.vllmLine(m)
		if r.err != nil {
			return nil, r.err
		}
		if len(lines) > 0 && (l.model != lines[0].model || l.backend != lines[0].backend) {
			return nil, &FieldError{Line: n, Pointer: "/model_id", Message: fmt.Sprintf("model %q with backend %q, but line 1 measured %q with %q: one file is one model on one backend",
				l.model, l.backend, lines[0].model, lines[0].backend)}
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%w: a vLLM result file with %w", ErrFormat, errNoPoints)
	}
	return vllmReport(lines)
}

// vllmLine reads one result object, refusing what vLLM does not write.
func (r *rd) vllmLine(m map[string]any) vllmLine {
	l := vllmLine{stats: map[string]map[string]float64{}, lists: map[string][]any{}, metadata: map[string]string{}}
	for _, k := range vllmRequired {
		r.need(m, "", k, "every vLLM result since v0.6 has it ("+vllmVersion+")")
	}
	if m["backend"] == nil && m["endpoint_type"] == nil {
		r.need(m, "", "backend", "a vLLM result names its client: backend (benchmark_serving.py) or endpoint_type (vllm bench serve)")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ptr := m[k], at("", k)
		if sm := vllmStatKey.FindStringSubmatch(k); sm != nil {
			if f, ok := r.number(v, ptr); ok {
				if l.stats[sm[3]] == nil {
					l.stats[sm[3]] = map[string]float64{}
				}
				l.stats[sm[3]][sm[1]] = f
			}
			continue
		}
		switch {
		case slices.Contains(vllmLists, k):
			if list, ok := r.list(v, ptr); ok {
				l.lists[k] = list
			}
		case !vllmKeys[k]:
			if s, ok := v.(string); ok {
				l.metadata[k] = s // --metadata KEY=VALUE
				continue
			}
			r.fail(ptr, "unknown key (%s): not one of the keys of vLLM v0.6 to v0.11 results (date, backend, model_id, num_prompts, request_rate, duration, completed, …, "+
				"mean_/median_/std_/pN_ of ttft, tpot, itl, e2el _ms; --metadata values are strings); is this a newer vLLM?", kindOf(v))
		}
	}
	str := func(k string) string { s, _ := r.text(m[k], at("", k)); return s }
	l.backend, l.model, l.tokenizer, l.endpoint = str("backend"), str("model_id"), str("tokenizer_id"), str("endpoint_type")
	if l.backend == "" {
		l.backend = l.endpoint // vllm bench serve names it endpoint_type
	}
	if d := str("date"); d != "" {
		t, err := time.Parse("20060102-150405", d)
		if err != nil {
			r.fail("/date", "%q is not vLLM's date (YYYYMMDD-HHMMSS)", d)
		}
		l.date = t
	}
	for _, k := range []string{"label", "ramp_up_strategy"} {
		if s := str(k); s != "" {
			l.metadata[k] = s
		}
	}
	num := func(k string) float64 { f, _ := r.nonNegative(m[k], at("", k)); return f }
	cnt := func(k string) int { c, _ := r.count(m[k], at("", k)); return c }
	l.prompts, l.completed = cnt("num_prompts"), cnt("completed")
	l.totalIn, l.totalOut = cnt("total_input_tokens"), cnt("total_output_tokens")
	l.duration, l.reqPerS, l.outPerS = num("duration"), num("request_throughput"), num("output_throughput")
	if f, ok := r.nonNegative(m["total_token_throughput"], "/total_token_throughput"); ok {
		l.totalPerS = &f
	}
	if f, ok := r.nonNegative(m["max_concurrent_requests"], "/max_concurrent_requests"); ok {
		l.peak = &f
	}
	if f, ok := r.number(m["burstiness"], "/burstiness"); ok {
		l.burstiness = &f
	}
	if c, ok := r.count(m["max_concurrency"], "/max_concurrency"); ok {
		l.maxConcurrency = &c
	}
	for _, k := range []string{"failed", "request_goodput", "request_goodput:", "max_output_tokens_per_s", "ramp_up_start_rps", "ramp_up_end_rps"} {
		r.number(m[k], at("", k)) // read, for their type; not mapped
	}
	switch rate := m["request_rate"].(type) {
	case string:
		if rate != "inf" {
			r.fail("/request_rate", "%q: want a number or \"inf\"", rate)
		}
		l.rate = math.Inf(1)
	default:
		if f, ok := r.number(rate, "/request_rate"); ok {
			if f <= 0 {
				r.fail("/request_rate", "%v: want a rate above 0, or \"inf\"", f)
			}
			l.rate = f
		}
	}
	if l.completed > l.prompts {
		r.fail("/completed", "%d, more than num_prompts (%d)", l.completed, l.prompts)
	}
	if _, ok := l.stats["ttft"]["mean"]; !ok && r.err == nil && l.completed > 0 {
		r.fail("/mean_ttft_ms", "missing; vLLM writes it whenever a request completed (--percentile-metrics has ttft by default)")
	}
	return l
}

// vllmReport maps vLLM results onto one load phase, a point each.
func vllmReport(lines []vllmLine) (*report.Report, error) {
	first := lines[0]
	imp := &report.Imported{Tool: VLLMTool, Version: vllmVersion}
	notes := vllmNotes(first.backend)
	identity := map[string]string{"backend": jsonText(first.backend)}
	var points []point
	allSamples := true
	var missing []string
	for i, l := range lines {
		r := &rd{}
		if len(lines) > 1 {
			r.line = i + 1
		}
		lp := &report.LoadPoint{DurationS: l.duration, RequestThroughputPerS: report.F(l.reqPerS), OutputTokensPerS: report.F(l.outPerS)}
		lp.TotalTokensPerS = l.totalPerS
		if lp.TotalTokensPerS == nil && l.duration > 0 {
			lp.TotalTokensPerS = report.F(float64(l.totalIn+l.totalOut) / l.duration)
		}
		if l.peak != nil {
			lp.PeakInFlight = int64(*l.peak)
		}
		switch {
		case !math.IsInf(l.rate, 1):
			lp.Rate = l.rate
			if l.burstiness != nil && *l.burstiness != 1 {
				notes = append(notes, fmt.Sprintf("point %d: burstiness %g: vLLM's arrivals are gamma-distributed (shape %g), not Poisson", i, *l.burstiness, *l.burstiness))
			}
			if l.maxConcurrency != nil {
				notes = append(notes, fmt.Sprintf("point %d: rate %g/s capped at max_concurrency %d requests in flight", i, l.rate, *l.maxConcurrency))
			}
		case l.maxConcurrency != nil:
			lp.Concurrency = *l.maxConcurrency
		default:
			lp.Concurrency = l.prompts
			notes = append(notes, fmt.Sprintf("point %d: request_rate inf with no max_concurrency sends every prompt at once: read as concurrency %d (num_prompts)", i, l.prompts))
		}
		prefix := fmt.Sprintf("points[%d].", i)
		identity[prefix+"num_prompts"] = jsonText(l.prompts)
		identity[prefix+"load"] = jsonText(view.PointLabel(lp))
		if l.burstiness != nil {
			identity[prefix+"burstiness"] = jsonText(*l.burstiness)
		}
		p := point{lp: lp}
		have := []string{}
		for _, k := range vllmLists[:5] {
			if _, ok := l.lists[k]; ok {
				have = append(have, k)
			}
		}
		if len(have) == 5 {
			p.samples = r.vllmSamples(l, &notes, i)
		} else {
			allSamples = false
			if len(have) > 0 {
				for _, k := range vllmLists[:5] {
					if !slices.Contains(have, k) {
						missing = append(missing, k)
					}
				}
			}
			lp.ServingMetrics = r.vllmSummaries(l)
		}
		if r.err != nil {
			return nil, r.err
		}
		points = append(points, p)
	}
	if !allSamples {
		for i := range points {
			if points[i].samples != nil { // a mix: summaries for every point
				r := &rd{}
				points[i].lp.ServingMetrics = r.vllmSummaries(lines[i])
				points[i].samples = nil
			}
		}
		notes = append(notes, vllmNoteSumm)
		if len(missing) > 0 {
			slices.Sort(missing)
			notes = append(notes, "per-request lists without "+strings.Join(slices.Compact(missing), ", ")+" (a tollgate export keeps no itls): read as summaries only")
		}
	} else {
		notes = append(notes, vllmNoteSamples, vllmNoteErrors)
	}
	notes = append(notes, vllmNoteDur, vllmNoteNotMapped)
	imp.Notes = notes
	target := report.Target{Name: "vllm", Kind: report.TargetOpenAI, Model: first.model, ModelSource: "model_id of the vLLM result", Endpoint: vllmEndpoint(first.backend, first.endpoint),
		Description: fmt.Sprintf("read from a vLLM bench serve result (backend %s)", first.backend)}
	meta := map[string]any{}
	for k, v := range first.metadata {
		meta[k] = v
	}
	if first.tokenizer != "" {
		meta["tokenizer_id"] = first.tokenizer
	}
	if len(meta) > 0 {
		target.Metadata = meta
	}
	return build(imp, "vllm bench serve", "vllm", identity, first.date, target, points), nil
}

// vllmNotes are the definition notes every vLLM result has; how TTFT
// ends depends on the backend's endpoint.
func vllmNotes(backend string) []string {
	ttft := "ttft_ms: vLLM's TTFT ends at the first streamed chunk with choices, even when its text is empty; tollgate's at the first chunk with non-empty text"
	if vllmEndpoint(backend, "") == "chat" {
		ttft = "ttft_ms: vLLM's chat client takes TTFT at the first streamed chunk with choices, which vLLM's server sends carrying the role and no token, " +
			"so it can end before the first token; tollgate's ends at the first non-empty content, reasoning or tool-call delta"
	}
	return []string{ttft, vllmNoteTPOT, vllmNoteITL, vllmNoteE2E, vllmNoteClock}
}

// vllmEndpoint is the OpenAI endpoint a vLLM backend streams from.
func vllmEndpoint(backend, endpointType string) string {
	switch {
	case strings.Contains(backend, "chat") || strings.Contains(endpointType, "chat"):
		return "chat"
	case backend == "vllm" || backend == "openai" || strings.Contains(backend, "completions"):
		return "completions"
	}
	return ""
}

// vllmSummaries are a point's figures from vLLM's summaries.
func (r *rd) vllmSummaries(l vllmLine) *report.ServingMetrics {
	stats := map[string]report.Stat{}
	for vm, key := range vllmMetric {
		s := l.stats[vm]
		if s == nil {
			continue
		}
		n := l.completed
		if vm == "itl" {
			n = max(l.totalOut-l.completed, 0)
		}
		median := "median"
		if _, ok := s[median]; !ok {
			median = "p50"
		}
		sm := summary{count: n, at: func(stat string) string {
			switch stat {
			case "p50":
				stat = median
			case "mean":
			default:
				if !strings.HasPrefix(stat, "p") {
					return "/" // vLLM writes no min or max
				}
			}
			return fmt.Sprintf("/%s_%s_ms", stat, vm)
		}}
		pick := func(name string) *float64 {
			if v, ok := s[name]; ok {
				return &v
			}
			return nil
		}
		sm.mean, sm.p50, sm.p90, sm.p95, sm.p99 = pick("mean"), pick(median), pick("p90"), pick("p95"), pick("p99")
		stats[key] = r.stat(sm)
	}
	if l.completed > 0 {
		in, out := float64(l.totalIn)/float64(l.completed), float64(l.totalOut)/float64(l.completed)
		stats["prompt_tokens"] = report.Stat{Count: l.completed, Mean: &in}
		stats["completion_tokens"] = report.Stat{Count: l.completed, Mean: &out}
	}
	return summaries(l.prompts, l.completed, "protocol", stats)
}

// vllmSamples are a point's requests from vLLM's per-request lists,
// checked against its counts.
func (r *rd) vllmSamples(l vllmLine, notes *[]string, pointIndex int) []report.RequestSample {
	for _, k := range vllmLists {
		if list, ok := l.lists[k]; ok && len(list) != l.prompts {
			r.fail(at("", k), "%d entries, but num_prompts is %d: vLLM writes one per prompt", len(list), l.prompts)
			return nil
		}
	}
	out := make([]report.RequestSample, 0, l.prompts)
	ok, sumIn, sumOut := 0, 0, 0
	var ttftSum float64
	for i := range l.prompts {
		ptr := func(k string) string { return fmt.Sprintf("/%s/%d", k, i) }
		ttft, _ := r.nonNegative(l.lists["ttfts"][i], ptr("ttfts"))
		in, _ := r.count(l.lists["input_lens"][i], ptr("input_lens"))
		outN, _ := r.count(l.lists["output_lens"][i], ptr("output_lens"))
		msg, _ := r.text(l.lists["errors"][i], ptr("errors"))
		gapsRaw, _ := r.list(l.lists["itls"][i], ptr("itls"))
		if r.err != nil {
			return nil
		}
		s := report.RequestSample{Index: i}
		s.PromptTokens = &in // vLLM's input_lens has the failed requests' too
		if msg != "" || ttft == 0 {
			s.Error = &report.RequestError{Class: errorClass(msg), Message: excerpt(msg)}
			if s.Error.Message == "" {
				s.Error.Message = "failed (vLLM recorded no reason)"
			}
			out = append(out, s)
			continue
		}
		gaps := make([]float64, len(gapsRaw))
		var sum float64
		for j, g := range gapsRaw {
			v, _ := r.nonNegative(g, fmt.Sprintf("/itls/%d/%d", i, j))
			gaps[j] = v * 1000
			sum += gaps[j]
		}
		ok++
		sumIn += in
		sumOut += outN
		ttftMS := ttft * 1000
		ttftSum += ttftMS
		s.OK = true
		s.TTFTMS = &ttftMS
		s.E2EMS = ttftMS + sum
		s.CompletionTokens = &outN
		s.SSETokenEvents = len(gaps) + 1
		s.ITLMS = gaps
		if outN > 1 && sum > 0 {
			s.TPOTMS = report.F(sum / float64(outN-1))
			s.DecodeTokensPerS = report.F(float64(outN-1) / (sum / 1000))
		}
		out = append(out, s)
	}
	switch {
	case r.err != nil:
		return nil
	case ok != l.completed:
		r.fail("/completed", "%d, but %d requests have a TTFT and no error in ttfts and errors", l.completed, ok)
	case sumIn != l.totalIn:
		r.fail("/total_input_tokens", "%d, but the input_lens of the completed requests add up to %d", l.totalIn, sumIn)
	case sumOut != l.totalOut:
		r.fail("/total_output_tokens", "%d, but the output_lens of the completed requests add up to %d", l.totalOut, sumOut)
	}
	if mean, has := l.stats["ttft"]["mean"]; has && ok > 0 {
		if got := ttftSum / float64(ok); math.Abs(got-mean) > 1e-6*math.Max(1, math.Abs(mean)) {
			*notes = append(*notes, fmt.Sprintf("point %d: vLLM's mean_ttft_ms (%g) is not the mean of its ttfts (%g); the ttfts are used", pointIndex, mean, got))
		}
	}
	return out
}

// errorClass reads a failure's class from a Python client's text: an
// HTTP reason phrase (vLLM records that of a non-200 answer), or an
// exception of aiohttp (vLLM) or httpx (GuideLLM).
func errorClass(msg string) string {
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(msg, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("Never received a valid chunk"):
		return "protocol"
	case has("TimeoutError", "ServerTimeoutError", "ReadTimeout", "ConnectTimeout", "TimeoutException"):
		return "timeout_total"
	case has("ClientConnectorError", "ConnectionRefusedError", "Cannot connect to host", "ConnectError"):
		return "connect"
	case has("ServerDisconnectedError", "ClientPayloadError", "ConnectionResetError", "RemoteProtocolError", "ReadError"):
		return "reset"
	case has("HTTPStatusError"):
		return "http_status"
	case has("Traceback", "Error:", "Exception"):
		return "protocol"
	}
	return "http_status"
}
