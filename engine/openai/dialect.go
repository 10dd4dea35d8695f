package openai

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/openai/sse"
)

// Dialect is a wire protocol other than OpenAI's (e.g. engine/anthropic's
// Messages API) spoken through this client: the same transport, arrival
// clocks, timeouts, stale-connection retry, redirect policy, redaction and
// error classes, so every protocol measures with the same definitions.
type Dialect interface {
	// Name names the protocol in error messages ("anthropic").
	Name() string
	// Body is the request's path and JSON body; extra is the target's body
	// fields, to merge (MergeBody) before the request's own.
	Body(req Request, extra map[string]any) (path string, body []byte, err error)
	// Header sets the credentials and protocol headers; apiKey may be "".
	Header(h http.Header, apiKey string)
	// NewStream returns the accumulator of one streamed answer, its
	// timeline Reset for maxTokens.
	NewStream(maxTokens int) StreamAccumulator
	// DecodeJSON records a non-streamed 200 body into tl (token counts,
	// text bytes, finish reason); an error is a protocol error.
	DecodeJSON(data []byte, tl *measure.Timeline) error
}

// StreamAccumulator records one stream's SSE events into a timeline, from
// which measure.Derive computes the metrics; *Accumulator is OpenAI's.
type StreamAccumulator interface {
	// Event accounts one event; an error ends the stream as a protocol error.
	Event(ev *sse.Event) error
	// Timeline is the request's timeline; the client records the first
	// byte, the body kind and the end into it.
	Timeline() *measure.Timeline
}

// MergeBody deep-merges src into dst: nested maps merge, nil deletes, other
// values replace (the rule of the target's body field).
func MergeBody(dst, src map[string]any) { mergeBody(dst, src) }

func (c *Client) protocol() string {
	if c.cfg.Dialect != nil {
		return c.cfg.Dialect.Name()
	}
	return "openai"
}

func (c *Client) body(req Request) (string, []byte, error) {
	if c.cfg.Dialect != nil {
		return c.cfg.Dialect.Body(req, c.cfg.ExtraBody)
	}
	return c.buildBody(req)
}

func (c *Client) newStreamAccumulator(maxTokens int) StreamAccumulator {
	if c.cfg.Dialect != nil {
		return c.cfg.Dialect.NewStream(maxTokens)
	}
	acc := NewAccumulator()
	acc.Reset(maxTokens)
	return acc
}

// readDialectJSON reads a non-streamed answer in the dialect's format.
func (c *Client) readDialectJSON(ctx context.Context, resp *http.Response, start time.Time, acc StreamAccumulator, res Result) (Result, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, jsonBodyBytes))
	end := time.Since(start)
	res.BytesReceived = int64(len(data))
	tl := acc.Timeline()
	tl.Body, tl.End = measure.BodyJSON, end
	if err != nil {
		tl.Body = measure.BodyNone
		res.Metrics = measure.Derive(tl)
		res.Err = c.classify(ctx, err, "read body")
		return res, res.Err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		tl.Body = measure.BodyNone
		res.Metrics = measure.Derive(tl)
		err := fmt.Errorf("%w: empty 200 body", ErrNoOutput)
		res.Err = c.fail(ClassProtocol, resp.StatusCode, err.Error(), err)
		return res, res.Err
	}
	err = c.cfg.Dialect.DecodeJSON(data, tl)
	res.Metrics = measure.Derive(tl)
	if err != nil {
		res.Err = c.fail(ClassProtocol, resp.StatusCode, err.Error(), err)
		return res, res.Err
	}
	return res, nil
}
