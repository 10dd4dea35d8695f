// Package report holds the report tollgate writes: its types, its atomic,
// schema-validated JSON writer, and the human summary.
package report

import (
	"encoding/json"
	"fmt"
	"time"
)

// SchemaVersion is the report format version; it changes only when a field
// changes meaning or disappears.
const SchemaVersion = 1

// Overall and per-gate statuses.
const (
	StatusPass       = "pass"
	StatusFail       = "fail"
	StatusError      = "error"
	StatusNotGated   = "not_gated"
	StatusIncomplete = "incomplete"
	// StatusSkipped is a gate's only: it reads baseline and none was given.
	StatusSkipped = "skipped"
	// StatusInconclusive: a gate that would pass but whose no_regression
	// test could not tell a change from noise, or a report with such a
	// required gate and none failed (exit 4 unless accepted).
	StatusInconclusive = "inconclusive"
)

// Report is one run of one scenario.
type Report struct {
	SchemaVersion int             `json:"schema_version"`
	Tool          Tool            `json:"tool"`
	Scenario      ScenarioInfo    `json:"scenario"`
	Host          Host            `json:"host"`
	StartedAt     time.Time       `json:"started_at"`
	EndedAt       time.Time       `json:"ended_at"`
	Status        string          `json:"status"`
	Incomplete    bool            `json:"incomplete,omitempty"`
	Runs          map[string]*Run `json:"runs"`
	RunOrder      []string        `json:"run_order"`
	Gates         []GateResult    `json:"gates"`
	// Repetitions, when the scenario ran more than once, summarises every
	// figure of runs across the repetitions; runs is the last one.
	Repetitions *Repetitions `json:"repetitions,omitempty"`
	// Shard is set on the report of one shard (tollgate run --shard I/N);
	// Shards on a merge of shards (tollgate merge), one per shard.
	Shard  *ShardInfo  `json:"shard,omitempty"`
	Shards []ShardInfo `json:"shards,omitempty"`
	// Invalid says why the measurement cannot be trusted, one finding
	// each (a merged shard that started late, …): a verdict over it is
	// "could not judge" (exit 3). Absent when the measurement is sound,
	// and in the reports of tollgates that did not check.
	Invalid []Invalidity `json:"invalid,omitempty"`
	// Imported is set on a report read from another tool's result file
	// (report/foreign: vLLM, GuideLLM, AIPerf, llm-d), never on one tollgate
	// measured: which tool, what was recognised of its version, and how
	// its definitions differ from tollgate's, for every reader to say.
	// In memory only: such a report is compared, rendered and judged,
	// never written as a tollgate report.
	Imported *Imported `json:"-"`
}

// Imported says where a report read from another tool's result came
// from, and how to read its figures.
type Imported struct {
	// Tool names the program ("vLLM bench serve"); Version what was
	// recognised of its version (from its keys, when it writes none).
	Tool, Version string
	// File is the path it was read from.
	File string
	// Samples: it held per-request values, so noise can be told.
	Samples bool
	// Notes are the definition notes: each mapped metric whose
	// definition differs from tollgate's, and what was not mapped.
	Notes []string
}

// Heading says where an imported report came from, before its notes.
func (i *Imported) Heading() string {
	return fmt.Sprintf("%s is a result of %s (%s), not measured by tollgate: its figures are mapped onto tollgate's metrics, and where their definitions differ, the notes say how",
		i.File, i.Tool, i.Version)
}

// Invalidity is one reason a report's measurement cannot be trusted.
type Invalidity struct {
	// Reason is one of the Invalid* codes.
	Reason string `json:"reason"`
	// Path is the JSON pointer of the figure that shows it
	// (/shards/2/start_lateness_ms).
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

// Reasons a measurement is invalid.
const (
	// InvalidShardLate: a shard of a merge began its first load point
	// later after the shared --start-at than the merge accepts.
	InvalidShardLate = "shard_late"
	// InvalidDispatchLag: at an open-loop point the client fell behind its
	// own schedule (dispatch_lag_ms.p99) by more than the phase accepts.
	InvalidDispatchLag = "dispatch_lag"
)

// Tool names the program that wrote the report.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ScenarioInfo identifies the effective scenario that ran.
type ScenarioInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	File        string `json:"file"`
	SHA256      string `json:"sha256"`
	// Identity is the hash of each field of what SHA256 hashes, by path
	// (phases.decode.max_tokens), so that two scenarios that differ can
	// be told apart by name (see IdentityDiff).
	Identity map[string]string `json:"identity,omitempty"`
	Vars     map[string]any    `json:"vars"`
}

// Host describes the client machine.
type Host struct {
	Hostname  string `json:"hostname"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUModel  string `json:"cpu_model,omitempty"`
	CPUCores  int    `json:"cpu_cores"`
	GoVersion string `json:"go_version"`
}

// Run is one target × matrix combination.
type Run struct {
	Name   string            `json:"name"`
	Params map[string]string `json:"params"`
	Target Target            `json:"target"`
	Status string            `json:"status"` // ok | error
	Error  string            `json:"error,omitempty"`
	// Invalid are the run's findings that its measurement cannot be
	// trusted; the engine lifts them into Report.Invalid, where they are
	// kept.
	Invalid    []Invalidity      `json:"-"`
	Phases     map[string]*Phase `json:"phases"`
	PhaseOrder []string          `json:"phase_order"`

	// Seam runs.
	// Source is stub (virtual time) or live (captured on an endpoint).
	Source       string                  `json:"source,omitempty"`
	OutputTokens []string                `json:"output_tokens,omitempty"`
	SessionID    string                  `json:"session_id,omitempty"`
	Connections  *Connections            `json:"connections,omitempty"`
	Cleanup      *Cleanup                `json:"cleanup,omitempty"`
	Seams        map[string]*SeamMetrics `json:"seams,omitempty"`
	// Relay counts what the in-process relay of a live relay seam carried.
	Relay *RelayCounters `json:"relay,omitempty"`
	// Warnings are findings of a live seam capture that do not fail the run
	// but change how to read it (a session header never echoed).
	Warnings []string `json:"warnings,omitempty"`
}

// Seam run sources.
const (
	SourceStub = "stub"
	SourceLive = "live"
)

// RelayCounters are what the relay a live seam ran through carried, counted
// by the relay itself: connections accepted from the client and dialled
// upstream, bytes each way, and connections still open after the session
// closed.
type RelayCounters struct {
	Connections         int   `json:"connections"`
	UpstreamConnections int   `json:"upstream_connections"`
	BytesToUpstream     int64 `json:"bytes_to_upstream"`
	BytesFromUpstream   int64 `json:"bytes_from_upstream"`
	OpenConnections     int   `json:"open_connections"`
}

// Target describes what a run measured; Config never holds secrets.
type Target struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Description string `json:"description,omitempty"`
	Config      any    `json:"config,omitempty"`

	// Live targets.
	BaseURL     string `json:"base_url,omitempty"`
	Model       string `json:"model,omitempty"`
	ModelSource string `json:"model_source,omitempty"`
	Endpoint    string `json:"endpoint,omitempty"`
	// ReadyMS is how long the server took to answer /health (or /v1/models).
	ReadyMS *float64 `json:"ready_ms,omitempty"`
	// Metadata holds each metadata endpoint's raw JSON, text, or a note.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Connections counts connection attempts over a run.
type Connections struct {
	Attempts int `json:"attempts"`
	// StaleRetries counts transfers sent again on a fresh connection after
	// a reused one failed before any response byte (the server had closed
	// it); always 0 on a stub.
	StaleRetries int `json:"stale_retries"`
}

// Cleanup is the state of a seam route session taken after it was closed.
type Cleanup struct {
	SessionClosed       bool `json:"session_closed"`
	OpenConnections     int  `json:"open_connections"`
	QueuedActivations   int  `json:"queued_activations"`
	TelemetryAggregates int  `json:"telemetry_aggregates"`
}

// Phase is one phase of a run. Which metrics are present depends on its kind
// and its target kind; the schema documents each with its formula.
type Phase struct {
	Kind string `json:"kind"`

	*SeamMetrics
	SeamsByName map[string]*SeamMetrics `json:"seams,omitempty"`

	*ServingMetrics
	// ByPromptTokens splits a prefill phase by target prompt size ("512", …).
	ByPromptTokens map[string]*Point `json:"by_prompt_tokens,omitempty"`
	// Variants splits a prefix_cache phase: fresh, identical, small_suffix.
	Variants    map[string]*Point   `json:"variants,omitempty"`
	Calibration []CalibrationResult `json:"calibration,omitempty"`
	// ServerMetricsDelta is ServerMetrics.Counters, under the name gates
	// have always read (it held gauges too before server_metrics existed).
	ServerMetricsDelta map[string]float64 `json:"server_metrics_delta,omitempty"`
	// ServerMetrics is the server's /metrics over the phase, by metric type.
	ServerMetrics     *ServerMetrics `json:"server_metrics,omitempty"`
	ServerMetricsNote string         `json:"server_metrics_note,omitempty"`

	// Points are the load points of a load phase (one, or one per sweep value).
	Points []*LoadPoint `json:"points,omitempty"`
	// Capacity is a capacity phase's search and what it found.
	Capacity *Capacity `json:"capacity,omitempty"`
	// Stopped says why a sweep ended before its last point; with
	// stop_when_saturated it is always there, "" when the sweep ran every
	// point, so a gate may read it whatever the server did.
	Stopped *string `json:"stopped,omitempty"`
	// Dataset says where a phase's prompts came from (prompt.dataset).
	Dataset *Dataset `json:"dataset,omitempty"`
	// Trace is a trace phase's replay against its trace (trace.go).
	Trace *TraceReplay `json:"trace,omitempty"`

	// ByTurn splits a sessions phase by turn ("1", "2", …), ByStep an agent
	// phase by step; Sessions and
	// Agent are the per-session and per-task figures (conversation.go).
	ByTurn   map[string]*Point `json:"by_turn,omitempty"`
	ByStep   map[string]*Point `json:"by_step,omitempty"`
	Sessions *SessionStats     `json:"sessions,omitempty"`
	Agent    *AgentStats       `json:"agent,omitempty"`
	// DispatchLagMS: open-loop sessions and agent phases (rate:), how late
	// the client woke to start each session or task, as a load point's
	// dispatch_lag_ms; judged by the same bound (max_dispatch_lag).
	DispatchLagMS *Stat `json:"dispatch_lag_ms,omitempty"`

	// Samples is []SeamSample or []RequestSample, unless report.samples is false.
	Samples any `json:"samples,omitempty"`

	// Shards are the per-shard figures of a phase merged from shards.
	Shards []*ShardPhase `json:"shards,omitempty"`
}

// ServerMetrics is what the server's Prometheus /metrics said about one
// phase, from a scrape before it and one after: what the server measured
// itself, kept apart from the client's measurements. Keys are series,
// name{label="value",...}; a labelled counter or histogram is also summed
// over its label sets under its bare name, and a gauge with one label set is
// also under its bare name.
type ServerMetrics struct {
	// Counters are after − before of the counters that changed.
	Counters map[string]float64 `json:"counters,omitempty"`
	// Gauges (and untyped series) at the two scrapes: there is no sampling
	// in between, so Max is the larger of the two, not the phase's peak.
	Gauges map[string]Gauge `json:"gauges,omitempty"`
	// Histograms are bucket deltas of the histograms that observed anything.
	Histograms map[string]*HistogramDelta `json:"histograms,omitempty"`
	// Summaries that observed anything: count and sum deltas, quantiles after.
	Summaries map[string]*SummaryDelta `json:"summaries,omitempty"`
	// Warnings name what the scrapes lost (rejected lines) and counter resets.
	Warnings []string `json:"warnings,omitempty"`
}

// Gauge is a gauge's value at the scrapes around a phase.
type Gauge struct {
	// Before is absent for a series that appeared during the phase.
	Before *float64 `json:"before,omitempty"`
	After  float64  `json:"after"`
	Max    float64  `json:"max"`
}

// HistogramDelta is what a histogram observed during a phase, in the
// metric's own unit (its name says which: _seconds, _tokens).
type HistogramDelta struct {
	Count float64 `json:"count"`
	Sum   float64 `json:"sum"`
	Mean  float64 `json:"mean"`
	// Quantiles interpolated linearly within buckets, as Prometheus'
	// histogram_quantile does; absent with no finite bucket.
	P50 *float64 `json:"p50,omitempty"`
	P90 *float64 `json:"p90,omitempty"`
	P99 *float64 `json:"p99,omitempty"`
	// Buckets are cumulative count deltas by upper bound ("0.25", "+Inf").
	Buckets map[string]float64 `json:"buckets"`
}

// SummaryDelta is what a summary observed during a phase.
type SummaryDelta struct {
	Count float64 `json:"count"`
	Sum   float64 `json:"sum"`
	Mean  float64 `json:"mean"`
	// Quantiles are the server's own at the scrape after the phase, over its
	// sliding window, which need not match the phase.
	Quantiles map[string]float64 `json:"quantiles,omitempty"`
}

// LoadPoint is one closed-loop concurrency or open-loop rate of a load phase.
type LoadPoint struct {
	// Concurrency (closed loop) or Rate (open loop, requests/s offered).
	Concurrency int     `json:"concurrency,omitempty"`
	Rate        float64 `json:"rate,omitempty"`
	*ServingMetrics
	// QueueMS is scheduled send time → the request's first byte written,
	// per request: getting a connection (pool wait, dial, TLS) included.
	QueueMS Stat `json:"queue_ms"`
	// DispatchLagMS is how late the client woke for each scheduled send:
	// its own lateness, apart from waits for max_in_flight (open loop only).
	DispatchLagMS Stat `json:"dispatch_lag_ms"`
	// TTFTFromScheduleMS and E2EFromScheduleMS are ttft_ms and e2e_ms
	// counted from the scheduled send time, per successful request: a
	// late send adds its lateness (coordinated omission shows).
	TTFTFromScheduleMS Stat `json:"ttft_from_schedule_ms"`
	E2EFromScheduleMS  Stat `json:"e2e_from_schedule_ms"`
	// DurationS is first write → last completion.
	DurationS float64 `json:"duration_s"`
	// AchievedRatePerS is (requests written − 1) ÷ (last write − first
	// write): the rate the server was offered.
	AchievedRatePerS      *float64 `json:"achieved_rate_per_s,omitempty"`
	RequestThroughputPerS *float64 `json:"request_throughput_per_s,omitempty"`
	OutputTokensPerS      *float64 `json:"output_tokens_per_s,omitempty"`
	TotalTokensPerS       *float64 `json:"total_tokens_per_s,omitempty"`
	// AchievedConcurrency is Σ e2e ÷ duration: the mean number in flight.
	AchievedConcurrency *float64 `json:"achieved_concurrency,omitempty"`
	PeakInFlight        int64    `json:"peak_in_flight"`
	Goodput             *Goodput `json:"goodput,omitempty"`
	// Saturation lists the saturation signals seen at this point; only a
	// sweep with stop_when_saturated looks for them.
	Saturation *[]string `json:"saturation,omitempty"`
	// Window is the point's wall-clock window and sums, kept by a shard so
	// that a merge recomputes rates over the union of the shards' windows.
	Window *Window `json:"window,omitempty"`
}

// Goodput counts requests that succeeded within every SLO limit.
type Goodput struct {
	SLO              map[string]float64 `json:"slo"`
	GoodRequests     int                `json:"good_requests"`
	GoodRequestsPerS *float64           `json:"good_requests_per_s,omitempty"`
	AttainedPct      *float64           `json:"attained_pct,omitempty"`
}

// ServingMetrics aggregates requests to a live target. Statistics are over
// successful requests that produced the value; warmup requests never count.
type ServingMetrics struct {
	Requests  int          `json:"requests"`
	Succeeded int          `json:"succeeded"`
	Errors    ErrorSummary `json:"errors"`
	// Retries counts retried 429/503 attempts (target retries); only each
	// request's last attempt is measured.
	Retries int `json:"retries"`
	// StaleConnectionRetries counts requests sent again on a fresh
	// connection because their connection failed before any response byte
	// and the server cannot have acted on them (engine/transport's rule: a
	// pooled connection the server had closed, or one it closed before the
	// request was written).
	StaleConnectionRetries int  `json:"stale_connection_retries"`
	TTFBMS                 Stat `json:"ttfb_ms"`
	TTFTMS                 Stat `json:"ttft_ms"`
	E2EMS                  Stat `json:"e2e_ms"`
	DecodeTokensPerS       Stat `json:"decode_tokens_per_s"`
	TPOTMS                 Stat `json:"tpot_ms"`
	ITLMS                  Stat `json:"itl_ms"`
	PrefillTokensPerS      Stat `json:"prefill_tokens_per_s"`
	PromptTokens           Stat `json:"prompt_tokens"`
	CompletionTokens       Stat `json:"completion_tokens"`
	CachedTokens           Stat `json:"cached_tokens"`
	SSETokenEvents         Stat `json:"sse_token_events"`
	// ConnectMS is TCP connect + TLS handshake per request (0 on a reused
	// connection); RequestWriteMS is connection obtained → request written.
	ConnectMS      Stat `json:"connect_ms"`
	RequestWriteMS Stat `json:"request_write_ms"`
	// Server is what the server reported per request, when it did.
	Server *ServerReported `json:"server,omitempty"`
	// TokenCountSource is usage, timings, sse_events, or mixed.
	TokenCountSource string `json:"token_count_source,omitempty"`
	// ArrivalClock is how arrival times were taken: kernel (SO_TIMESTAMPNS
	// receive times), read (when the read returned), or mixed.
	ArrivalClock string `json:"arrival_clock,omitempty"`
	// CoalescedEvents sums the successful requests' coalesced_events:
	// token events that came in one read with the token event before them,
	// timed at the read's arrival (the resolution of itl_ms); absent when
	// none did. TTFTCoalesced counts the successful requests whose first
	// token came in one read with the next (ttft_coalesced): their ttft_ms
	// is an upper bound.
	CoalescedEvents int `json:"coalesced_events,omitempty"`
	TTFTCoalesced   int `json:"ttft_coalesced,omitempty"`
	// Warnings are findings that do not fail the run but change how to read it.
	Warnings []string `json:"warnings"`
	// TTFOMS is request start → first answer-content token (after any
	// reasoning); the reasoning figures are 0 or absent for a model that
	// does not reason; AnswerTokensPerS is the answer channel's decode rate.
	TTFOMS              Stat `json:"ttfo_ms"`
	ReasoningTokens     Stat `json:"reasoning_tokens"`
	ReasoningTokensPerS Stat `json:"reasoning_tokens_per_s"`
	AnswerTokensPerS    Stat `json:"answer_tokens_per_s"`
}

// Point is one slice of a phase (a prompt size, a prefix-cache variant).
type Point struct {
	*ServingMetrics
	TargetPromptTokens int `json:"target_prompt_tokens,omitempty"`
	// Speedup is fresh ttft_ms.p50 ÷ this variant's ttft_ms.p50 (prefix_cache).
	Speedup *float64 `json:"speedup,omitempty"`
}

// ErrorSummary counts failed requests by class, with a few examples each.
type ErrorSummary struct {
	Count    int            `json:"count"`
	Rate     *float64       `json:"rate,omitempty"`
	ByClass  map[string]int `json:"by_class"`
	Examples []RequestError `json:"examples,omitempty"`
}

// RequestError is one failed request: its class, HTTP status and message.
type RequestError struct {
	Class   string `json:"class"`
	Status  int    `json:"status,omitempty"`
	Message string `json:"message"`
	Request string `json:"request,omitempty"`
}

// CalibrationResult is how a synthetic prompt was sized with the server's tokenizer.
type CalibrationResult struct {
	TargetTokens int    `json:"target_tokens"`
	Tokens       int    `json:"tokens"`
	Words        int    `json:"words"`
	Method       string `json:"method"`
	Iterations   int    `json:"iterations"`
	Request      string `json:"request"`
	// Note says what went wrong on the way (a method that ignored the text).
	Note string `json:"note,omitempty"`
}

// RequestSample is one request to a live target: where it was sent and how
// it ended, then what was measured (RequestMetrics, whose keys are the
// sample's own in the JSON), then its retries.
type RequestSample struct {
	Phase         string        `json:"phase"`
	Point         string        `json:"point,omitempty"`
	Index         int           `json:"index"`
	StartMS       float64       `json:"start_ms"`
	OK            bool          `json:"ok"`
	Error         *RequestError `json:"error,omitempty"`
	HTTPStatus    int           `json:"http_status,omitempty"`
	BytesReceived int64         `json:"bytes_received"`
	RequestMetrics
	// Retries are the request's retried 429/503 attempts (target retries);
	// StaleConnectionRetries its sends repeated on a fresh connection.
	Retries                int `json:"retries,omitempty"`
	StaleConnectionRetries int `json:"stale_connection_retries,omitempty"`
}

// RequestMetrics are one request's measurements, declared once: a protocol
// measures them (engine/measure.Metrics embeds this type and
// engine/measure.Derive fills it) and a sample records them as they are,
// so a per-request metric is a field here, a row of the metric table
// (Metrics) and its formula in Derive. Optional figures are nil when they
// cannot be computed (never 0 or NaN), so aggregates can skip them. The
// field order is the sample's JSON order; ArrivalClock and
// TargetPromptTokens, which say how the figures were taken and what
// prompt_tokens is held against, sit among them there.
type RequestMetrics struct {
	// TTFBMS: request start → first response byte.
	TTFBMS *float64 `json:"ttfb_ms,omitempty"`
	// TTFTMS: request start → first event with a non-empty content,
	// reasoning_content/reasoning, tool_calls delta or completions text.
	TTFTMS *float64 `json:"ttft_ms,omitempty"`
	// E2EMS: request start → end of stream (or of the body when not
	// streamed).
	E2EMS float64 `json:"e2e_ms"`
	// DecodeTokensPerS: (completion_tokens − 1) / (t_last_token − t_first_token).
	DecodeTokensPerS *float64 `json:"decode_tokens_per_s,omitempty"`
	// TPOTMS: (t_last_token − t_first_token) / (completion_tokens − 1).
	TPOTMS *float64 `json:"tpot_ms,omitempty"`
	// PrefillTokensPerS: (prompt_tokens − cached_tokens) / ttft.
	PrefillTokensPerS *float64 `json:"prefill_tokens_per_s,omitempty"`
	PromptTokens      *int     `json:"prompt_tokens,omitempty"`
	CompletionTokens  *int     `json:"completion_tokens,omitempty"`
	CachedTokens      *int     `json:"cached_tokens,omitempty"`
	// TokenCountSource says where the counts came from: usage, timings or
	// sse_events (engine/measure's Source constants).
	TokenCountSource string `json:"token_count_source,omitempty"`
	SSETokenEvents   int    `json:"sse_token_events"`
	// CoalescedEvents are the token events that arrived in the same read
	// as the token event before them (engine/measure's Timeline.Coalesced):
	// their own arrival is the read's, their ITL gap 0. TTFTCoalesced
	// says the first token event's read held the next one too: ttft_ms is
	// then the read's time, an upper bound.
	CoalescedEvents int    `json:"coalesced_events,omitempty"`
	TTFTCoalesced   bool   `json:"ttft_coalesced,omitempty"`
	FinishReason    string `json:"finish_reason,omitempty"`
	DoneSeen        bool   `json:"done_seen"`
	UsageSeen       bool   `json:"usage_seen"`
	// ArrivalClock says how arrival times were taken: kernel
	// (SO_TIMESTAMPNS receive times) or read (when the read returned);
	// empty when no streamed byte was timed.
	ArrivalClock string `json:"arrival_clock,omitempty"`
	// ConnectMS is TCP connect + TLS handshake for this request; 0 on a
	// reused connection.
	ConnectMS *float64 `json:"connect_ms,omitempty"`
	// RequestWriteMS is connection obtained → request fully written.
	RequestWriteMS *float64 `json:"request_write_ms,omitempty"`
	// TargetPromptTokens is the prompt size the request was built for.
	TargetPromptTokens int `json:"target_prompt_tokens,omitempty"`
	// Server is what the server said about this request itself, kept
	// beside the client's figures and never mixed into them; nil when it
	// said nothing.
	Server *ServerTimings `json:"server,omitempty"`
	// TTFOMS: request start → first event with non-empty answer content
	// (delta.content, completions text, an Anthropic text_delta): later than
	// TTFTMS when a reasoning channel comes first; nil when no answer came.
	TTFOMS *float64 `json:"ttfo_ms,omitempty"`
	// ReasoningTokens: usage.completion_tokens_details.reasoning_tokens when
	// the server gives it, else the reasoning events counted (0 when none).
	ReasoningTokens *int `json:"reasoning_tokens,omitempty"`
	// ReasoningTokensPerS: (reasoning_tokens − 1) / (t_last_reasoning − t_first_reasoning).
	ReasoningTokensPerS *float64 `json:"reasoning_tokens_per_s,omitempty"`
	// AnswerTokensPerS: (answer_tokens − 1) / (t_last_answer − t_first_answer),
	// answer_tokens = completion_tokens − reasoning_tokens.
	AnswerTokensPerS *float64 `json:"answer_tokens_per_s,omitempty"`
	// ITLMS are the gaps between the request's token events: in memory
	// for aggregation (report.Metrics' itl_ms), never in the JSON (a
	// long answer has hundreds).
	ITLMS []float64 `json:"-"`
}

// Server timing sources.
const ServerLlamaCppTimings = "llama.cpp timings"

// ServerTimings are a server's own per-request figures (llama.cpp's
// timings object: prompt evaluation and generation as the server timed them).
type ServerTimings struct {
	Source              string   `json:"source"`
	PromptN             *int     `json:"prompt_n,omitempty"`
	CacheN              *int     `json:"cache_n,omitempty"`
	PredictedN          *int     `json:"predicted_n,omitempty"`
	PromptMs            *float64 `json:"prompt_ms,omitempty"`
	PromptPerSecond     *float64 `json:"prompt_per_second,omitempty"`
	PredictedMs         *float64 `json:"predicted_ms,omitempty"`
	PredictedPerTokenMs *float64 `json:"predicted_per_token_ms,omitempty"`
	PredictedPerSecond  *float64 `json:"predicted_per_second,omitempty"`
}

// ServerReported aggregates what the server said about each request itself
// (per-request figures such as llama.cpp's timings), beside and never mixed
// with the client's measurements.
type ServerReported struct {
	Source              string `json:"source"`
	Requests            int    `json:"requests"`
	PromptMS            Stat   `json:"prompt_ms"`
	PredictedMS         Stat   `json:"predicted_ms"`
	PromptPerS          Stat   `json:"prompt_tokens_per_s"`
	PredictedPerS       Stat   `json:"predicted_tokens_per_s"`
	PredictedPerTokenMS Stat   `json:"predicted_per_token_ms"`
	CacheN              Stat   `json:"cache_n"`
}

// SeamMetrics aggregates seam transfers (of a phase, or of one seam).
type SeamMetrics struct {
	Transfers          int      `json:"transfers"`
	Tokens             int      `json:"tokens"`
	SeamLatencyMS      Stat     `json:"seam_latency_ms"`
	QueueWaitMS        Stat     `json:"queue_wait_ms"`
	TotalLatencyMS     float64  `json:"total_latency_ms"`
	TokensPerS         *float64 `json:"tokens_per_s,omitempty"`
	BytesPerToken      *float64 `json:"bytes_per_token,omitempty"`
	PayloadBytes       int64    `json:"payload_bytes"`
	WireBytes          int64    `json:"wire_bytes"`
	CompressionRatio   *float64 `json:"compression_ratio,omitempty"`
	ConnectionAttempts int      `json:"connection_attempts"`
	// CompressionCPUMS and PeakBufferedBytes are a stub's; a live capture
	// cannot see the nodes' CPU or buffers and leaves them absent.
	CompressionCPUMS  *float64 `json:"compression_cpu_ms,omitempty"`
	PeakBufferedBytes *int64   `json:"peak_buffered_bytes,omitempty"`
}

// SeamSample is one activation transfer over one seam, durations in virtual
// ms on a stub. A live sample (Source live) is measured at the client in
// wall-clock ms and its JSON leaves out what the client cannot know: the
// virtual clock and the cost breakdown (model, encode, framing, metadata,
// copy, compression, queueing, transport).
type SeamSample struct {
	// Source is live on a captured sample, empty on a stub's.
	Source              string  `json:"source,omitempty"`
	Phase               string  `json:"phase"`
	TokenIndex          *int    `json:"token_index"`
	SessionID           string  `json:"session_id"`
	ActivationID        string  `json:"activation_id"`
	Seam                string  `json:"seam"`
	Mode                string  `json:"mode"`
	CacheMode           string  `json:"cache_mode"`
	VirtualStartMS      float64 `json:"virtual_start_ms"`
	ModelMS             float64 `json:"model_ms"`
	EncodeMS            float64 `json:"encode_ms"`
	FramingMS           float64 `json:"framing_ms"`
	MetadataMS          float64 `json:"metadata_ms"`
	CopyAllocationMS    float64 `json:"copy_allocation_ms"`
	CopyAllocationBytes int64   `json:"copy_allocation_bytes"`
	CompressionMS       float64 `json:"compression_ms"`
	DecompressionMS     float64 `json:"decompression_ms"`
	ConnectionSetupMS   float64 `json:"connection_setup_ms"`
	QueueWaitMS         float64 `json:"queue_wait_ms"`
	TransportMS         float64 `json:"transport_ms"`
	SeamLatencyMS       float64 `json:"seam_latency_ms"`
	PayloadBytes        int64   `json:"payload_bytes"`
	WireBytes           int64   `json:"wire_bytes"`
	CompressionRatio    float64 `json:"compression_ratio"`
	ConnectionAttempted bool    `json:"connection_attempted"`

	// Live samples only: start since the session began, time to the first
	// response byte, the transfer's HTTP status, and wire bytes each way.
	StartMS       *float64 `json:"start_ms,omitempty"`
	TTFBMS        *float64 `json:"ttfb_ms,omitempty"`
	HTTPStatus    int      `json:"http_status,omitempty"`
	RequestBytes  int64    `json:"request_bytes,omitempty"`
	ResponseBytes int64    `json:"response_bytes,omitempty"`
}

// liveSeamSample is the JSON of a live SeamSample: the fields a capture
// measures, none of those it cannot know.
type liveSeamSample struct {
	Source              string   `json:"source"`
	Phase               string   `json:"phase"`
	TokenIndex          *int     `json:"token_index"`
	SessionID           string   `json:"session_id"`
	ActivationID        string   `json:"activation_id"`
	Seam                string   `json:"seam"`
	Mode                string   `json:"mode"`
	CacheMode           string   `json:"cache_mode"`
	StartMS             *float64 `json:"start_ms,omitempty"`
	ConnectionSetupMS   float64  `json:"connection_setup_ms"`
	TTFBMS              *float64 `json:"ttfb_ms,omitempty"`
	SeamLatencyMS       float64  `json:"seam_latency_ms"`
	HTTPStatus          int      `json:"http_status,omitempty"`
	PayloadBytes        int64    `json:"payload_bytes"`
	WireBytes           int64    `json:"wire_bytes"`
	RequestBytes        int64    `json:"request_bytes"`
	ResponseBytes       int64    `json:"response_bytes"`
	CompressionRatio    float64  `json:"compression_ratio"`
	ConnectionAttempted bool     `json:"connection_attempted"`
}

// MarshalJSON writes a stub sample as it is and a live one without the
// fields a client cannot measure, so they are absent rather than zero.
func (s SeamSample) MarshalJSON() ([]byte, error) {
	if s.Source != SourceLive {
		type plain SeamSample
		return json.Marshal(plain(s))
	}
	return json.Marshal(liveSeamSample{
		Source: s.Source, Phase: s.Phase, TokenIndex: s.TokenIndex, SessionID: s.SessionID, ActivationID: s.ActivationID,
		Seam: s.Seam, Mode: s.Mode, CacheMode: s.CacheMode, StartMS: s.StartMS, ConnectionSetupMS: s.ConnectionSetupMS,
		TTFBMS: s.TTFBMS, SeamLatencyMS: s.SeamLatencyMS, HTTPStatus: s.HTTPStatus, PayloadBytes: s.PayloadBytes,
		WireBytes: s.WireBytes, RequestBytes: s.RequestBytes, ResponseBytes: s.ResponseBytes,
		CompressionRatio: s.CompressionRatio, ConnectionAttempted: s.ConnectionAttempted,
	})
}

// GateResult is the verdict of one gate.
type GateResult struct {
	Name         string        `json:"name"`
	Expr         string        `json:"expr"`
	Description  string        `json:"description,omitempty"`
	Optional     bool          `json:"optional"`
	Status       string        `json:"status"`
	Value        any           `json:"value,omitempty"`
	Message      string        `json:"message,omitempty"`
	Observations []Observation `json:"observations,omitempty"`
}

// Observation is one comparison evaluated inside a gate, with both sides,
// so a reader sees the values that decided the verdict.
type Observation struct {
	Expr   string `json:"expr"`
	Op     string `json:"op"`
	Left   any    `json:"left"`
	Right  any    `json:"right"`
	Result bool   `json:"result"`
}

// SeamMetricsFrom aggregates samples; tokens is the number of decode tokens
// they carried (0 for prefill, which leaves the per-token rates absent).
// queueNS may be empty (a live capture), which leaves queue_wait_ms empty.
func SeamMetricsFrom(samples []SeamSample, latNS, queueNS []int64, tokens int) *SeamMetrics {
	m := &SeamMetrics{Transfers: len(samples), Tokens: tokens}
	lat := make([]float64, len(latNS))
	q := make([]float64, len(queueNS))
	var totalNS int64
	for i := range latNS {
		lat[i] = MS(latNS[i])
		totalNS += latNS[i]
	}
	for i := range queueNS { // none on a live capture, which cannot see queueing
		q[i] = MS(queueNS[i])
	}
	m.SeamLatencyMS = NewStat(lat)
	m.QueueWaitMS = NewStat(q)
	m.TotalLatencyMS = MS(totalNS)
	var cpu float64
	var peak int64
	live := false
	for _, s := range samples {
		live = live || s.Source == SourceLive
		m.PayloadBytes += s.PayloadBytes
		m.WireBytes += s.WireBytes
		if s.ConnectionAttempted {
			m.ConnectionAttempts++
		}
		cpu += s.CompressionMS + s.DecompressionMS
		peak = max(peak, s.CopyAllocationBytes)
	}
	if !live {
		m.CompressionCPUMS = F(roundNS(cpu))
		m.PeakBufferedBytes = &peak
	}
	if m.WireBytes > 0 {
		m.CompressionRatio = F(float64(m.PayloadBytes) / float64(m.WireBytes))
	}
	if tokens > 0 && totalNS > 0 {
		m.TokensPerS = F(float64(tokens) / (float64(totalNS) / 1e9))
		m.BytesPerToken = F(float64(m.WireBytes) / float64(tokens))
	}
	return m
}

// roundNS rounds milliseconds to whole nanoseconds, removing float noise from sums.
func roundNS(ms float64) float64 {
	const perMS = 1e6
	return float64(int64(ms*perMS+0.5)) / perMS
}
