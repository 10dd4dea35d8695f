package report

// SessionStats are a sessions phase's per-session figures.
type SessionStats struct {
	// Sessions started, and Completed: every turn answered.
	Sessions  int `json:"sessions"`
	Completed int `json:"completed"`
	// HistoryLimit counts the sessions ended at a byte bound: a reply over
	// max_reply_bytes, or a turn whose history would pass
	// max_history_bytes (Notes says which).
	HistoryLimit int `json:"history_limit"`
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
	// Notes are the first few of each kind of note (see ConversationNote).
	Notes []ConversationNote `json:"notes,omitempty"`
}

// AgentStats are an agent phase's per-task and per-step figures.
type AgentStats struct {
	// Tasks started; Answered: the model answered without a tool call;
	// StepLimit: still calling tools at max_steps; Failed: a request
	// failed; Unanswerable: a reply called a tool without an id, which no
	// tool message can name; HistoryLimit: ended at a byte bound (a reply
	// over max_reply_bytes, a step whose history would pass
	// max_history_bytes).
	Tasks        int `json:"tasks"`
	Answered     int `json:"answered"`
	StepLimit    int `json:"step_limit"`
	Failed       int `json:"failed"`
	Unanswerable int `json:"unanswerable"`
	HistoryLimit int `json:"history_limit"`
	// ToolCallsReceived counts the calls of every reply kept; ToolCalls
	// those answered, each with a role tool message sent in the next
	// step (a task's last reply, at max_steps or ended otherwise, is
	// not answered).
	ToolCallsReceived int `json:"tool_calls_received"`
	ToolCalls         int `json:"tool_calls"`
	// The anomalies of the calls received, one count each (a call may
	// have several): InvalidArguments, arguments to an offered tool that
	// are not JSON or do not match its parameters schema; UnknownTool, a
	// name the request did not offer; DuplicateID, an id an earlier call
	// of the same reply has; MissingID, no id.
	InvalidArguments int `json:"invalid_arguments"`
	UnknownTool      int `json:"unknown_tool"`
	DuplicateID      int `json:"duplicate_id"`
	MissingID        int `json:"missing_id"`
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
	// Notes are the first few of each kind of note (see ConversationNote).
	Notes []ConversationNote `json:"notes,omitempty"`
}

// ConversationNote is one thing a conversation phase counted, told of one
// request: an anomaly of a tool call (Kind is its count's key:
// invalid_arguments, unknown_tool, duplicate_id, missing_id) or a session
// ended at a byte bound (Kind is the bound's key: max_reply_bytes,
// max_history_bytes).
type ConversationNote struct {
	Kind    string `json:"kind"`
	Request string `json:"request"`
	Message string `json:"message"`
}

// Conversation note kinds.
const (
	NoteInvalidArguments = "invalid_arguments"
	NoteUnknownTool      = "unknown_tool"
	NoteDuplicateID      = "duplicate_id"
	NoteMissingID        = "missing_id"
	NoteMaxReplyBytes    = "max_reply_bytes"
	NoteMaxHistoryBytes  = "max_history_bytes"
)
