// Package measure holds the protocol-neutral parts of a measured request:
// what is sent (Request), what came back (Result, Metrics), how a failure is
// classified (ErrorClass, Error), the Timeline a protocol records and the
// one Derive that computes every per-request metric from it, and the Client
// a wire protocol implements. engine/openai and engine/anthropic are such
// protocols, peers over engine/transport (a transport.Wire each); a new one
// is its package (exporting a transport.Protocol) plus its kind's entry in
// scenarios.LiveKinds, from which engine.Drivers is generated.
package measure

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/tollgate-dev/tollgate/report"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are an assistant message's tool calls (agent phases).
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a role "tool" message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// Endpoints for Request.Endpoint.
const (
	EndpointChat        = "chat"        // /v1/chat/completions with messages
	EndpointCompletions = "completions" // /v1/completions with prompt
)

// Request is one generation request.
type Request struct {
	Endpoint  string // EndpointChat (default) or EndpointCompletions
	Model     string
	Messages  []Message // chat
	Prompt    string    // completions
	MaxTokens int       // 0: not sent
	// Stream requests SSE; false measures latency only, with usage from the
	// JSON body.
	Stream bool
	// ExtraBody is merged after Config.ExtraBody, for per-request fields.
	ExtraBody map[string]any
	// TargetPromptTokens is the prompt size the request was built for (0:
	// none), so the server's own count can be held against it.
	TargetPromptTokens int
	// Tools are the tool definitions sent as the body's tools (raw JSON
	// objects, {"type": "function", "function": {...}}); none when empty.
	Tools []json.RawMessage
	// Transcript keeps the answer (its text and tool calls) in
	// Result.Reply, for a next turn that sends it back (sessions, agent).
	Transcript bool
	// MaxReplyBytes bounds the answer a transcript keeps (Reply.Bytes);
	// past it the reply is dropped (Reply.Dropped) and the stream is still
	// measured to its end. 0, or more than the protocol keeps of any
	// answer: the protocol's own bound.
	MaxReplyBytes int
	// Connected, when set, is called when the request first holds a
	// connection (new or reused), from the transport's goroutine: a request
	// that never gets one (EMFILE, refused) was never in flight at the
	// server, and a peak counted from sends would include it.
	Connected func()
}

// ErrorClass classifies a failed request.
type ErrorClass string

// Error classes.
const (
	ClassConnect           ErrorClass = "connect"
	ClassTimeoutFirstToken ErrorClass = "timeout_first_token"
	ClassTimeoutIdle       ErrorClass = "timeout_idle"
	ClassTimeoutTotal      ErrorClass = "timeout_total"
	ClassHTTPStatus        ErrorClass = "http_status"
	// ClassProtocol covers malformed streams, oversized lines, error
	// events sent inside a 200 stream (then Unwrap yields the protocol's
	// stream error), a response head over its bound or not HTTP, and a
	// same-origin redirect loop.
	ClassProtocol ErrorClass = "protocol"
	// ClassTruncated: the answer ended (a clean close, a whole body) before
	// the protocol said it was finished: an OpenAI stream with neither a
	// finish_reason nor [DONE], a Messages API stream before message_stop,
	// a stream closed inside a line.
	ClassTruncated ErrorClass = "truncated"
	ClassReset     ErrorClass = "reset"
	ClassCanceled  ErrorClass = "canceled"
	// ClassStaleConnection: a connection the server had closed unseen (a
	// pooled one, or one closed before the request was written) failed
	// before any response byte and was not retried (the client was told
	// not to).
	ClassStaleConnection ErrorClass = "stale_connection"
	// ClassRedirect: a 3xx the redirect policy does not follow.
	ClassRedirect ErrorClass = "redirect"
)

// ErrCredentialsRefused marks a target that answered 401 or 403 when asked
// whether it is ready: it is up, and waiting will not change its answer.
var ErrCredentialsRefused = errors.New("credentials refused")

// ErrorClasses lists every class a request can fail with, in report order.
var ErrorClasses = []ErrorClass{
	ClassConnect, ClassTimeoutFirstToken, ClassTimeoutIdle, ClassTimeoutTotal,
	ClassHTTPStatus, ClassProtocol, ClassTruncated, ClassReset, ClassCanceled, ClassStaleConnection, ClassRedirect,
}

// Error is a classified request failure. Message never holds the API key.
type Error struct {
	Class   ErrorClass `json:"class"`
	Status  int        `json:"status,omitempty"`
	Message string     `json:"message"`
	// RetryAfter is the server's Retry-After on an http_status error (0 when absent).
	RetryAfter time.Duration `json:"-"`
	// Protocol names the client that failed (e.g. "openai"), for messages.
	Protocol string `json:"-"`
	// Cause is the underlying error (e.g. a stream or limit error).
	Cause error `json:"-"`
}

func (e *Error) Error() string {
	s := string(e.Class) + ": " + e.Message
	if e.Protocol != "" {
		s = e.Protocol + ": " + s
	}
	return s
}

// Unwrap returns the underlying error (e.g. *StreamError, *sse.LimitError).
func (e *Error) Unwrap() error { return e.Cause }

// Arrival clocks: where a streamed request's arrival times came from.
const (
	ArrivalKernel = "kernel" // SO_TIMESTAMPNS receive times
	ArrivalRead   = "read"   // taken when the read returned
)

// Result is the outcome of one request: metrics (possibly partial), transport
// facts and, on failure, the classified error.
type Result struct {
	// Metrics holds, besides the figures, ArrivalClock (how arrival times
	// were taken: ArrivalKernel or ArrivalRead) and TargetPromptTokens (the
	// request's, see Request).
	Metrics
	HTTPStatus    int   `json:"http_status,omitempty"`
	BytesReceived int64 `json:"bytes_received"`
	// StaleConnectionRetries counts sends repeated on a fresh connection
	// because a pooled one failed before any response byte, or the server
	// closed the connection before the request was written (0 or 1).
	StaleConnectionRetries int `json:"stale_connection_retries,omitempty"`
	// Start is the send timestamp every offset of the request is from;
	// Written is when its first byte was written (a connection obtained:
	// pool wait, dial and TLS before it), zero when it never was. Both
	// are of the attempt measured.
	Start, Written time.Time `json:"-"`
	// Reply is the answer itself, when Request.Transcript asked for it.
	Reply *Reply `json:"-"`
	Err   *Error `json:"error,omitempty"`
}

// Token count sources, reported as token_count_source.
const (
	SourceUsage     = "usage"      // the server's usage object
	SourceTimings   = "timings"    // llama.cpp's timings object (no usage sent)
	SourceSSEEvents = "sse_events" // counted token-bearing events; the server gave no counts
)

// Metrics are the per-request measurements: report.RequestMetrics, the
// figures a sample records (declared there once, with their formulas), and
// the stream's own counts that only the protocol reads.
type Metrics struct {
	report.RequestMetrics

	SSEEvents          int `json:"sse_events"`
	OutputTextBytes    int `json:"output_text_bytes"`
	ReasoningTextBytes int `json:"reasoning_text_bytes,omitempty"`
	KeepAliveComments  int `json:"keepalive_comments,omitempty"`
}

// Server timing sources.
const ServerLlamaCppTimings = report.ServerLlamaCppTimings

// ServerTimings are a server's own per-request figures; the report's type.
type ServerTimings = report.ServerTimings

// CalibrateOptions tunes Calibrate.
type CalibrateOptions struct {
	Model         string
	Index         int    // prompt index passed to SyntheticPrompt
	SharedPrefix  string // passed to SyntheticPrompt
	MaxIterations int    // count requests allowed; 16 when 0
	// InitialWords starts the search (e.g. from an earlier calibration's
	// tokens per word); 0: three quarters of the target.
	InitialWords int
}

// Calibration is the outcome of Calibrate.
type Calibration struct {
	Prompt     string `json:"-"`
	Words      int    `json:"words"`
	Tokens     int    `json:"tokens"`
	Target     int    `json:"target_tokens"`
	Method     string `json:"method"`
	Iterations int    `json:"iterations"`
	// Note says what went wrong on the way (a method that ignored the text).
	Note string `json:"note,omitempty"`
}

// MetadataEntry is what one metadata endpoint gave: JSON, else text, else a
// note saying why there is nothing ("absent: 404", an error).
type MetadataEntry struct {
	Status int             `json:"status,omitempty"`
	JSON   json.RawMessage `json:"json,omitempty"`
	Text   string          `json:"text,omitempty"`
	Note   string          `json:"note,omitempty"`
}

// Client is one target spoken to in one wire protocol.
type Client interface {
	// Stream sends one generation request and measures it; the error is
	// Result.Err (nil on success).
	Stream(ctx context.Context, req Request) (Result, error)
	// Calibrate finds a synthetic prompt of about target tokens with the
	// server's own tokenizer.
	Calibrate(ctx context.Context, targetTokens int, seed int64, opt CalibrateOptions) (Calibration, error)
	// WaitReady polls until the server answers or the deadline passes.
	WaitReady(ctx context.Context, deadline time.Time) error
	// Models lists the model ids the server serves.
	Models(ctx context.Context) ([]string, error)
	// Metadata reads the optional self-description endpoints; never fails.
	Metadata(ctx context.Context) map[string]MetadataEntry
	// ScrapeMetrics reads the server's Prometheus metrics.
	ScrapeMetrics(ctx context.Context) (Scrape, error)
	Close()
}

// ToolCall is one tool call of an answer, its arguments reassembled from
// the pieces a stream sends them in.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function a tool call names and its JSON arguments.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Reply is what a model answered: its text and its tool calls, in index
// order. FirstToolCallMs is request start → the first event carrying a
// tool_calls delta (nil when there was none, or the answer was not streamed).
type Reply struct {
	Content         string
	ToolCalls       []ToolCall
	FirstToolCallMs *float64
	// Bytes is the answer's size as kept: its text plus each call's id,
	// name and arguments (ReplyBytes), counted to the end of the answer
	// even when it is dropped.
	Bytes int
	// Dropped: the answer passed Request.MaxReplyBytes and was not kept
	// (no Content, no ToolCalls); the request is measured as any other.
	Dropped bool
	// CalledTools: the answer carried tool calls (known also when Dropped).
	CalledTools bool
}

// ReplyBytes is what a reply of content and calls takes: the text plus
// each call's id, name and arguments.
func ReplyBytes(content string, calls []ToolCall) int {
	n := len(content)
	for _, c := range calls {
		n += len(c.ID) + len(c.Function.Name) + len(c.Function.Arguments)
	}
	return n
}
