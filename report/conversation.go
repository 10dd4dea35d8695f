package report

// SessionStats are a sessions phase's per-session figures.
type SessionStats struct {
	// Sessions started, and Completed: every turn answered.
	Sessions  int `json:"sessions"`
	Completed int `json:"completed"`
	// Turns is the user messages planned per session.
	Turns int `json:"turns"`
	// DurationMS is a completed session's first send → last reply's end,
	// think time included.
	DurationMS Stat `json:"duration_ms"`
	// TotalTokens is Σ over a completed session's turns of prompt_tokens +
	// completion_tokens (the history is counted again each turn, as served).
	TotalTokens Stat `json:"total_tokens"`
	// ThinkMS is the think time waited between turns.
	ThinkMS Stat `json:"think_ms"`
}

// AgentStats are an agent phase's per-task and per-step figures.
type AgentStats struct {
	// Tasks started; Answered: the model answered without a tool call;
	// StepLimit: still calling tools at max_steps; Failed: a request failed.
	Tasks     int `json:"tasks"`
	Answered  int `json:"answered"`
	StepLimit int `json:"step_limit"`
	Failed    int `json:"failed"`
	// ToolCalls counts the calls answered; InvalidArguments those whose
	// arguments were not JSON or did not match the tool's parameters schema
	// (or named no offered tool).
	ToolCalls        int `json:"tool_calls"`
	InvalidArguments int `json:"invalid_arguments"`
	// TimeToFirstToolCallMS: request start → the first event carrying a
	// tool_calls delta, per streamed step that called a tool.
	TimeToFirstToolCallMS Stat `json:"time_to_first_tool_call_ms"`
	// StepLatencyMS is each step's e2e_ms (request start → end of stream).
	StepLatencyMS Stat `json:"step_latency_ms"`
	// StepsPerTask counts the requests of each finished task.
	StepsPerTask Stat `json:"steps_per_task"`
	// TaskE2EMS is a finished task's first send → its last reply's end,
	// tool latency included.
	TaskE2EMS Stat `json:"task_e2e_ms"`
	// ToolLatencyMS is the simulated tool time waited per step.
	ToolLatencyMS Stat `json:"tool_latency_ms"`
}
