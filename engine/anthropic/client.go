// Package anthropic drives servers that speak the Anthropic Messages API
// (streamed POST /v1/messages) and measures each request with the same
// definitions as engine/openai, its peer: both are a transport.Wire, so the
// transport, arrival clocks, timeouts, retries, redaction, error classes,
// calibration and /metrics are engine/transport's, and only the wire format
// lives here.
package anthropic

import (
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
