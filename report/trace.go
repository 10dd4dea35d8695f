package report

// Dataset is where a phase's prompts came from: a ShareGPT or JSONL file,
// sampled at load time.
type Dataset struct {
	File   string `json:"file"`
	Format string `json:"format"`
	// Read is the items in the file, each counted once more: Skipped,
	// the ShareGPT conversations without a prompt and reply; Filtered,
	// those outside the length filters; or Eligible, those within them.
	// Used is the prompts the phase drew from. Reports of tollgates
	// before Filtered have no "filtered" (and counted in Read only what
	// was not skipped).
	Read        int  `json:"read"`
	Skipped     int  `json:"skipped"`
	Filtered    *int `json:"filtered,omitempty"`
	Eligible    int  `json:"eligible"`
	Used        int  `json:"used"`
	Replacement bool `json:"replacement"`
	// EstimatedPromptTokens is the prompts' sizes by tollgate's estimate
	// (the filters use it); the phase's prompt_tokens is the server's count.
	EstimatedPromptTokens Stat `json:"estimated_prompt_tokens"`
}

// TraceReplay is a trace phase's replay held against its trace.
type TraceReplay struct {
	File   string `json:"file"`
	Format string `json:"format"`
	// Speed is trace time ÷ replay time.
	Speed float64 `json:"speed"`
	// Requests is the trace's requests in the window; Sent those sent.
	Requests int `json:"requests"`
	Sent     int `json:"sent"`
	// TraceRatePerS is the trace's mean arrival rate after the time scale:
	// (requests − 1) ÷ (last − first offset) × speed.
	TraceRatePerS *float64 `json:"trace_rate_per_s,omitempty"`
	// AchievedRatePerS is (requests written − 1) ÷ (last write − first
	// write).
	AchievedRatePerS *float64 `json:"achieved_rate_per_s,omitempty"`
	// QueueMS is scheduled send time (the trace offset ÷ speed from the
	// phase's start) → the request's first byte written, per request: the
	// replay's lateness. Offsets are absolute, so lateness never
	// accumulates. DispatchLagMS is the part of it that is the client's
	// own (see LoadPoint).
	QueueMS       Stat `json:"queue_ms"`
	DispatchLagMS Stat `json:"dispatch_lag_ms"`
	// TraceInputTokens and TraceOutputTokens are the trace's sizes, summed
	// over the requests sent (compare the phase's prompt_tokens).
	TraceInputTokens  int64 `json:"trace_input_tokens"`
	TraceOutputTokens int64 `json:"trace_output_tokens"`
	// TraceCacheHitRate is the prefix-cache hit rate the trace implies:
	// Σ tokens of the leading hash_ids already seen in an earlier request
	// ÷ Σ input tokens (mooncake traces; absent for the CSV formats).
	TraceCacheHitRate *float64 `json:"trace_cache_hit_rate,omitempty"`
	// ServerCacheHitRate is Σ cached_tokens ÷ Σ prompt_tokens as the server
	// reported them, over successful requests that reported both.
	ServerCacheHitRate *float64 `json:"server_cache_hit_rate,omitempty"`
	PeakInFlight       int64    `json:"peak_in_flight"`
	DurationS          float64  `json:"duration_s"`
}
