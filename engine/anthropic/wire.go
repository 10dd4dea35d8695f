// Package anthropic drives servers that speak the Anthropic Messages API
// (streamed POST /v1/messages) and measures each request with the same
// definitions as engine/openai, its peer: both are a transport.Wire, so the
// transport, arrival clocks, timeouts, retries, redaction, error classes,
// calibration and /metrics are engine/transport's, and only the wire format
// lives here.
package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport"
)

// Version is the anthropic-version header sent unless the target's headers
// set one.
const Version = "2023-06-01"

// DefaultMaxTokens is sent when a request gives none: the Messages API
// requires max_tokens.
const DefaultMaxTokens = 4096

// Client is a Messages API target. Calibration counts tokens with POST
// /v1/messages/count_tokens when the server has it (then /tokenize, then a
// one-token probe request): transport.Client.CountTokens.
type Client struct {
	*transport.Client
}

var _ measure.Client = (*Client)(nil)

// New builds a client from the transport's config (base URL, key, headers,
// body fields, timeouts, pool). The API key goes in x-api-key.
func New(cfg transport.Config) (*Client, error) {
	version := Version
	for k, v := range cfg.Headers {
		if equalFold(k, "anthropic-version") {
			version = v
		}
	}
	c, err := transport.New(cfg, wire{version: version})
	if err != nil {
		return nil, err
	}
	return &Client{c}, nil
}

// Protocol is the Messages API as the live executor needs it; the
// anthropic kind speaks it (its scenarios.LiveKinds entry names this
// package). Its usage counts no reasoning tokens apart.
func Protocol() transport.Protocol {
	return transport.Protocol{Client: transport.ClientOf(New), UncountedReasoning: true}
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// wire is the Messages API's side of a request (transport.Wire).
type wire struct{ version string }

func (wire) Name() string { return "anthropic" }

func (w wire) Header(h http.Header, apiKey string) {
	if apiKey != "" {
		h.Set("X-Api-Key", apiKey)
	}
	h.Set("Anthropic-Version", w.version)
}

// ErrEndpoint: the Messages API has no completions endpoint.
var ErrEndpoint = errors.New("the Messages API has no completions endpoint")

// Body is POST /v1/messages: temperature 0 and stream, then the target's
// body fields, then the request's; system messages go to the top-level
// system field. max_tokens is required by the API (DefaultMaxTokens when the
// request gives none).
func (wire) Body(req measure.Request, extra map[string]any) (string, []byte, error) {
	if req.Endpoint != "" && req.Endpoint != measure.EndpointChat {
		return "", nil, fmt.Errorf("anthropic: endpoint %q: %w", req.Endpoint, ErrEndpoint)
	}
	defaults := []transport.BodyField{{Key: "temperature", Value: 0}, {Key: "stream", Value: req.Stream}}
	maxTokens := DefaultMaxTokens
	if req.MaxTokens > 0 {
		maxTokens = req.MaxTokens
	}
	var ownArr [4]transport.BodyField
	own := append(ownArr[:0], transport.BodyField{Key: "max_tokens", Value: maxTokens})
	if req.Model != "" {
		own = append(own, transport.BodyField{Key: "model", Value: req.Model})
	}
	var system []string
	msgs := make([]measure.Message, 0, len(req.Messages))
	for _, m := range req.Messages {
		if m.Role == "system" {
			system = append(system, m.Content)
			continue
		}
		msgs = append(msgs, m)
	}
	if len(system) > 0 {
		own = append(own, transport.BodyField{Key: "system", Value: strings.Join(system, "\n")})
	}
	own = append(own, transport.BodyField{Key: "messages", Value: msgs})
	body, err := transport.BuildBody(defaults, extra, req.ExtraBody, own)
	if err != nil {
		return "", nil, fmt.Errorf("anthropic: encode request body: %w", err)
	}
	return "/v1/messages", body, nil
}

func (wire) NewStream(req measure.Request) transport.Stream {
	return newAccumulator(req.MaxTokens)
}

// messageJSON is a non-streamed Messages API answer (or an error object).
type messageJSON struct {
	Type    string `json:"type"`
	Content []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking string          `json:"thinking"`
		Input    json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason *string    `json:"stop_reason"`
	Usage      *usageJSON `json:"usage"`
	Error      *errorJSON `json:"error"`
}

// DecodeJSON records a whole message; every error reports the response's
// status. The Messages API keeps no transcript here (a conversation phase
// refuses the kind: Protocol.Replies).
func (wire) DecodeJSON(data []byte, status int, _ measure.Request, tl *measure.Timeline, _ *measure.Result) (int, error) {
	var b messageJSON
	if err := transport.UnmarshalAnswer(data, &b); err != nil {
		return status, err
	}
	if b.Type == "error" || b.Error != nil {
		return status, b.Error.streamError()
	}
	tools := false
	for _, c := range b.Content {
		switch c.Type {
		case "text":
			tl.OutputTextBytes += len(c.Text)
		case "thinking":
			tl.ReasoningTextBytes += len(c.Thinking)
		case "tool_use":
			tools = true
		}
	}
	if b.StopReason != nil {
		tl.FinishReason = *b.StopReason
	}
	if b.Usage != nil {
		var u usage
		if err := u.add(b.Usage); err != nil {
			return status, err
		}
		u.record(tl)
	}
	// The Messages API does not count thinking tokens apart: Derive gives
	// 0 without thinking text, else none.
	if tl.OutputTextBytes+tl.ReasoningTextBytes == 0 && !tools && (!tl.Usage.CompletionSet || tl.Usage.Completion == 0) {
		return status, fmt.Errorf("%w: the message has %d content blocks and no text, thinking or tool use", transport.ErrNoOutput, len(b.Content))
	}
	// A whole message that never stopped is what message_stop's absence is
	// in a stream.
	if tl.FinishReason == "" {
		return status, fmt.Errorf("%w: the message has no stop_reason", transport.ErrTruncated)
	}
	return 0, nil
}

func snippet(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return strings.ToValidUTF8(string(b), "?")
}
