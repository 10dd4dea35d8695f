// Package transport is what every wire protocol shares: the HTTP client and
// its keep-alive pool, the one retry of a stale connection, kernel receive
// timestamps, timeouts, the redirect policy, redaction, error classes, the
// SSE framing (sse/), calibration, the metadata endpoints and the /metrics
// scrape. A protocol (engine/openai, engine/anthropic) is a Wire: it builds
// its requests and records its answers into a measure.Timeline, from which
// measure.Derive computes every metric with the same definitions.
package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport/sse"
	"github.com/tollgate-dev/tollgate/internal/textsafe"
)

// Wire is one wire protocol's side of a request: the request it sends and
// how it reads the answer. The transport does everything else.
type Wire interface {
	// Name names the protocol in errors ("openai", "anthropic").
	Name() string
	// Header sets the credentials and protocol headers; apiKey may be "".
	Header(h http.Header, apiKey string)
	// Body is the request's path and JSON body; extra is the target's body
	// fields, to merge (MergeBody) before the request's own.
	Body(req measure.Request, extra map[string]any) (path string, body []byte, err error)
	// NewStream returns the reader of one streamed answer to req, its
	// timeline Reset for req.MaxTokens.
	NewStream(req measure.Request) Stream
	// DecodeJSON records a non-streamed 2xx body into tl (token counts,
	// text bytes, finish reason) and, when req.Transcript, the reply into
	// res. An error fails the request as a protocol error reporting
	// errStatus (status, or 0 for a body that is no answer at all).
	DecodeJSON(data []byte, status int, req measure.Request, tl *measure.Timeline, res *measure.Result) (errStatus int, err error)
}

// Stream records one stream's SSE events into a timeline.
type Stream interface {
	// Event accounts one event; an error ends the stream as a protocol error.
	Event(ev *sse.Event) error
	// Timeline is the request's timeline; the transport records the first
	// byte, the body kind and the end into it.
	Timeline() *measure.Timeline
	// End runs once the stream is over, whatever ended it (e.g. to keep
	// the reply of a request that asked for its transcript).
	End(res *measure.Result)
	// Finished is nil when the protocol said the answer was over (OpenAI:
	// a finish_reason or [DONE]; the Messages API: message_stop), else an
	// error wrapping ErrTruncated saying what was missing. It is asked
	// once, when the body ended cleanly.
	Finished() error
}

// ErrNoOutput marks a 2xx answer that carried no token: never a success.
var ErrNoOutput = errors.New("no output")

// ErrTruncated marks an answer that ended (a clean close, a whole body)
// before the protocol said it was finished: a truncated error, never a
// success, whatever it carried.
var ErrTruncated = errors.New("truncated answer")

// ErrBadBody marks a 200 answer whose headers say it cannot be read as asked.
var ErrBadBody = errors.New("unreadable response")

// ErrBadCount marks a count from the server that no count can be: negative,
// fractional, not a number, absurdly large, or more cached than prompt
// tokens. Such a request is a protocol error, never a success: the value
// would also make the report fail its own schema and lose every measurement.
var ErrBadCount = measure.ErrBadCount

// StreamError is an error the server reported in its answer (OpenAI: a
// {"error": {...}} data line, {"object": "error", ...} or "event: error";
// the Messages API: an error event or object).
type StreamError struct {
	Message string `json:"message"`
	Type    string `json:"type,omitempty"`
	Code    string `json:"code,omitempty"`
}

func (e *StreamError) Error() string {
	s := "server error event: " + e.Message
	if e.Type != "" || e.Code != "" {
		s += fmt.Sprintf(" (type %q, code %q)", e.Type, e.Code)
	}
	return s
}

// readJSON reads a non-streamed answer with the wire's decoder.
func (c *Client) readJSON(ctx context.Context, resp *http.Response, start time.Time, req *measure.Request, acc Stream, res *measure.Result) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, jsonBodyBytes))
	res.BytesReceived = int64(len(data))
	tl := acc.Timeline()
	tl.Body, tl.End = measure.BodyJSON, time.Since(start)
	if err != nil {
		tl.Body = measure.BodyNone
		derive(res, tl)
		res.Err = c.classify(ctx, err, "read body")
		return
	}
	if len(bytes.TrimSpace(data)) == 0 {
		tl.Body = measure.BodyNone
		derive(res, tl)
		err := fmt.Errorf("%w: empty 200 body", ErrNoOutput)
		res.Err = c.fail(measure.ClassProtocol, resp.StatusCode, err.Error(), err)
		return
	}
	status, err := c.wire.DecodeJSON(data, resp.StatusCode, *req, tl, res)
	if err == nil {
		if err = tl.CheckUsage(); err != nil {
			status = resp.StatusCode
		}
	}
	derive(res, tl)
	if err != nil {
		res.Err = c.fail(answerClass(err), status, err.Error(), err)
	}
}

// answerClass is the class of an answer the wire refused: truncated when
// it ended early (the protocol's end missing, or the stream cut inside a
// line), else protocol; an error the server sent is protocol wherever it
// came.
func answerClass(err error) measure.ErrorClass {
	var se *StreamError
	switch {
	case errors.As(err, &se):
		return measure.ClassProtocol
	case errors.Is(err, ErrTruncated), errors.Is(err, sse.ErrCut):
		return measure.ClassTruncated
	}
	return measure.ClassProtocol
}

// UnmarshalAnswer decodes a non-streamed answer body into v; a body that
// ends inside its JSON is an error wrapping ErrTruncated, any other
// undecodable one a decoding error quoting it.
func UnmarshalAnswer(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	// Unmarshal says only "unexpected end of JSON input"; a Decoder tells
	// a cut body (io.ErrUnexpectedEOF) from a malformed one.
	if derr := json.NewDecoder(bytes.NewReader(data)).Decode(new(json.RawMessage)); errors.Is(derr, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: the body ended after %d bytes inside its JSON (it ends %q)", ErrTruncated, len(data), tail(data, 40))
	}
	return fmt.Errorf("decode response %q: %w", Cut(data, 200), err)
}

// tail is the last n bytes of b (from a rune start), for a message.
func tail(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	cut := len(b) - n
	for cut < len(b) && !utf8.RuneStart(b[cut]) {
		cut++
	}
	return "…" + string(b[cut:])
}

// Snippet is b cut to at most n bytes at a rune start, with "…" when cut,
// and with its control characters escaped (textsafe.Clean), to quote a
// server's answer in a message. Inside %q, use Cut: %q escapes them itself.
func Snippet(b []byte, n int) string { return textsafe.Clean(cut(b, n)) }

// Cut is b cut to at most n bytes at a rune start, with "…" when cut,
// for a %q verb.
func Cut(b []byte, n int) string { return cut(b, n) }

func cut[T ~string | ~[]byte](b T, n int) string {
	if len(b) <= n {
		return string(b)
	}
	c := n
	for c > 0 && !utf8.RuneStart(b[c]) {
		c--
	}
	return string(b[:c]) + "…"
}

func durMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ptr[T any](v T) *T { return &v }
