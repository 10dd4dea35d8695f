package report

// The metric table: every per-request metric of a live target, declared
// once. Aggregation (report/fold), samples, the shard merge, compare, the
// CSV columns and the schema's metric descriptions (a test holds them to
// this table) all iterate it, so adding a metric is one row here, one field
// in ServingMetrics and one in RequestMetrics (which both engine/measure's
// Metrics and RequestSample embed: a measured figure reaches the sample
// without a copy by hand), and its formula in engine/measure's Derive.

// Direction says which way a metric gets better, for compare.
type Direction int

// Directions.
const (
	// Neutral metrics (token counts) describe the work, not its speed.
	Neutral Direction = iota
	LowerIsBetter
	HigherIsBetter
)

// Metric is one row of the table.
type Metric struct {
	// Key is the JSON key in ServingMetrics and RequestMetrics, and the
	// name gates and compare use.
	Key string
	// Unit is ms, tokens/s, tokens or events.
	Unit string
	// Description is the formula, as the report schema publishes it for
	// the aggregate (servingMetrics).
	Description string
	// Better is the direction compare judges a change by.
	Better Direction
	// Compared metrics get a delta and a noise test in compare.
	Compared bool
	// Stat is where the aggregate lives.
	Stat func(*ServingMetrics) *Stat
	// Value is one request's value; false when the request has none.
	// Nil for a metric with many values per request (Values).
	Value func(*RequestSample) (float64, bool)
	// Values are a request's many values (itl_ms: one per gap); in memory
	// only, never in a sample's JSON.
	Values func(*RequestSample) []float64
}

func ptrF(get func(*RequestSample) *float64) func(*RequestSample) (float64, bool) {
	return func(s *RequestSample) (float64, bool) {
		if v := get(s); v != nil {
			return *v, true
		}
		return 0, false
	}
}

func ptrI(get func(*RequestSample) *int) func(*RequestSample) (float64, bool) {
	return func(s *RequestSample) (float64, bool) {
		if v := get(s); v != nil {
			return float64(*v), true
		}
		return 0, false
	}
}

// Metrics is the table: the compared metrics in the order compare lists
// them, then the rest.
var Metrics = []Metric{
	{Key: "ttfb_ms", Unit: "ms", Better: LowerIsBetter, Compared: true,
		Description: "Request start → first response byte.",
		Stat:        func(m *ServingMetrics) *Stat { return &m.TTFBMS },
		Value:       ptrF(func(s *RequestSample) *float64 { return s.TTFBMS })},
	{Key: "ttft_ms", Unit: "ms", Better: LowerIsBetter, Compared: true,
		Description: "Request start → first SSE event carrying a non-empty content, reasoning_content or tool_calls delta (or completions text). Role-only, empty, usage-only events and keep-alive comments do not count.",
		Stat:        func(m *ServingMetrics) *Stat { return &m.TTFTMS },
		Value:       ptrF(func(s *RequestSample) *float64 { return s.TTFTMS })},
	{Key: "e2e_ms", Unit: "ms", Better: LowerIsBetter, Compared: true,
		Description: "Request start → end of stream (or of the body when not streamed).",
		Stat:        func(m *ServingMetrics) *Stat { return &m.E2EMS },
		Value:       func(s *RequestSample) (float64, bool) { return s.E2EMS, true }},
	{Key: "tpot_ms", Unit: "ms", Better: LowerIsBetter, Compared: true,
		Description: "Per request: (t_last_token − t_first_token) ÷ (completion_tokens − 1).",
		Stat:        func(m *ServingMetrics) *Stat { return &m.TPOTMS },
		Value:       ptrF(func(s *RequestSample) *float64 { return s.TPOTMS })},
	{Key: "itl_ms", Unit: "ms", Better: LowerIsBetter, Compared: true,
		Description: "Gaps between consecutive token-bearing events, over all requests.",
		Stat:        func(m *ServingMetrics) *Stat { return &m.ITLMS },
		Values:      func(s *RequestSample) []float64 { return s.ITLMS }},
	{Key: "decode_tokens_per_s", Unit: "tokens/s", Better: HigherIsBetter, Compared: true,
		Description: "Per request: (completion_tokens − 1) ÷ (t_last_token − t_first_token), in seconds. Absent for requests with fewer than 2 tokens.",
		Stat:        func(m *ServingMetrics) *Stat { return &m.DecodeTokensPerS },
		Value:       ptrF(func(s *RequestSample) *float64 { return s.DecodeTokensPerS })},
	{Key: "prefill_tokens_per_s", Unit: "tokens/s", Better: HigherIsBetter, Compared: true,
		Description: "Per request: (prompt_tokens − cached_tokens) ÷ ttft, in seconds.",
		Stat:        func(m *ServingMetrics) *Stat { return &m.PrefillTokensPerS },
		Value:       ptrF(func(s *RequestSample) *float64 { return s.PrefillTokensPerS })},
	{Key: "cached_tokens", Unit: "tokens", Better: Neutral, Compared: true,
		Description: "usage.prompt_tokens_details.cached_tokens, when the server reports it.",
		Stat:        func(m *ServingMetrics) *Stat { return &m.CachedTokens },
		Value:       ptrI(func(s *RequestSample) *int { return s.CachedTokens })},
	{Key: "ttfo_ms", Unit: "ms", Better: LowerIsBetter, Compared: true,
		Description: "Request start → first event carrying answer content (delta.content, completions text, an Anthropic text_delta): the first token of the answer, after any reasoning. Equals ttft_ms for a model that does not reason; absent for requests whose answer had no text (only reasoning or tool calls).",
		Stat:        func(m *ServingMetrics) *Stat { return &m.TTFOMS },
		Value:       ptrF(func(s *RequestSample) *float64 { return s.TTFOMS })},
	{Key: "reasoning_tokens_per_s", Unit: "tokens/s", Better: HigherIsBetter, Compared: true,
		Description: "Per request: (reasoning_tokens − 1) ÷ (t_last_reasoning_event − t_first_reasoning_event), in seconds. Absent for requests with fewer than 2 reasoning events.",
		Stat:        func(m *ServingMetrics) *Stat { return &m.ReasoningTokensPerS },
		Value:       ptrF(func(s *RequestSample) *float64 { return s.ReasoningTokensPerS })},
	{Key: "answer_tokens_per_s", Unit: "tokens/s", Better: HigherIsBetter, Compared: true,
		Description: "Per request: (answer_tokens − 1) ÷ (t_last_answer_event − t_first_answer_event), in seconds, answer_tokens = completion_tokens − reasoning_tokens (answer events counted when the server gave no counts). The answer channel's decode rate; equals decode_tokens_per_s for a model that does not reason. Absent for requests with fewer than 2 answer events.",
		Stat:        func(m *ServingMetrics) *Stat { return &m.AnswerTokensPerS },
		Value:       ptrF(func(s *RequestSample) *float64 { return s.AnswerTokensPerS })},
	{Key: "reasoning_tokens", Unit: "tokens", Better: Neutral,
		Description: "Per request: usage.completion_tokens_details.reasoning_tokens (Anthropic: thinking deltas counted) when the server gives it, else the reasoning events (reasoning_content / reasoning deltas) counted; 0 when the request did not reason. Included in completion_tokens.",
		Stat:        func(m *ServingMetrics) *Stat { return &m.ReasoningTokens },
		Value:       ptrI(func(s *RequestSample) *int { return s.ReasoningTokens })},
	{Key: "prompt_tokens", Unit: "tokens", Better: Neutral,
		Description: "usage.prompt_tokens (or llama.cpp timings.prompt_n + cache_n).",
		Stat:        func(m *ServingMetrics) *Stat { return &m.PromptTokens },
		Value:       ptrI(func(s *RequestSample) *int { return s.PromptTokens })},
	{Key: "completion_tokens", Unit: "tokens", Better: Neutral,
		Description: "usage.completion_tokens (or timings.predicted_n, or the count of token events; see token_count_source).",
		Stat:        func(m *ServingMetrics) *Stat { return &m.CompletionTokens },
		Value:       ptrI(func(s *RequestSample) *int { return s.CompletionTokens })},
	{Key: "sse_token_events", Unit: "events", Better: Neutral,
		Description: "Token-bearing SSE events per request.",
		Stat:        func(m *ServingMetrics) *Stat { return &m.SSETokenEvents },
		Value:       func(s *RequestSample) (float64, bool) { return float64(s.SSETokenEvents), true }},
	{Key: "connect_ms", Unit: "ms", Better: LowerIsBetter,
		Description: "TCP connect + TLS handshake per request, ms (0 on a reused connection): an accept-queue stall shows here, not only inside ttfb_ms and ttft_ms.",
		Stat:        func(m *ServingMetrics) *Stat { return &m.ConnectMS },
		Value:       ptrF(func(s *RequestSample) *float64 { return s.ConnectMS })},
	{Key: "request_write_ms", Unit: "ms", Better: LowerIsBetter,
		Description: "Connection obtained → request fully written, per request, ms.",
		Stat:        func(m *ServingMetrics) *Stat { return &m.RequestWriteMS },
		Value:       ptrF(func(s *RequestSample) *float64 { return s.RequestWriteMS })},
}

// MetricByKey is the row of key; false when there is none.
func MetricByKey(key string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Key == key {
			return m, true
		}
	}
	return Metric{}, false
}

// ServerMetric is one row of the server's own per-request figures
// (llama.cpp timings), aggregated beside the client's in ServingMetrics.server.
type ServerMetric struct {
	Key         string
	Description string
	Stat        func(*ServerReported) *Stat
	Value       func(*ServerTimings) (float64, bool)
}

func srvF(get func(*ServerTimings) *float64) func(*ServerTimings) (float64, bool) {
	return func(t *ServerTimings) (float64, bool) {
		if v := get(t); v != nil {
			return *v, true
		}
		return 0, false
	}
}

// ServerTimingMetrics is the server's table, in report order.
var ServerTimingMetrics = []ServerMetric{
	{Key: "prompt_ms", Description: "The server's prompt evaluation time per request, ms.",
		Stat:  func(s *ServerReported) *Stat { return &s.PromptMS },
		Value: srvF(func(t *ServerTimings) *float64 { return t.PromptMs })},
	{Key: "predicted_ms", Description: "The server's generation time per request, ms.",
		Stat:  func(s *ServerReported) *Stat { return &s.PredictedMS },
		Value: srvF(func(t *ServerTimings) *float64 { return t.PredictedMs })},
	{Key: "prompt_tokens_per_s", Description: "The server's prompt evaluation rate per request, tokens per second.",
		Stat:  func(s *ServerReported) *Stat { return &s.PromptPerS },
		Value: srvF(func(t *ServerTimings) *float64 { return t.PromptPerSecond })},
	{Key: "predicted_tokens_per_s", Description: "The server's generation rate per request, tokens per second.",
		Stat:  func(s *ServerReported) *Stat { return &s.PredictedPerS },
		Value: srvF(func(t *ServerTimings) *float64 { return t.PredictedPerSecond })},
	{Key: "predicted_per_token_ms", Description: "The server's time per generated token, ms.",
		Stat:  func(s *ServerReported) *Stat { return &s.PredictedPerTokenMS },
		Value: srvF(func(t *ServerTimings) *float64 { return t.PredictedPerTokenMs })},
	{Key: "cache_n", Description: "Prompt tokens the server reused from its cache, per request.",
		Stat: func(s *ServerReported) *Stat { return &s.CacheN },
		Value: func(t *ServerTimings) (float64, bool) {
			if t.CacheN != nil {
				return float64(*t.CacheN), true
			}
			return 0, false
		}},
}

// ErrorClasses are every class a request can fail with, in report order:
// by_class lists all of them (0 when none), so a gate on one class never
// reads a missing key. engine/measure's classes are these (a test holds them).
var ErrorClasses = []string{
	"connect", "timeout_first_token", "timeout_idle", "timeout_total",
	"http_status", "protocol", "truncated", "reset", "canceled", "stale_connection", "redirect",
}
