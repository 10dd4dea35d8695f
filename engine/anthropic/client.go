// Package anthropic drives servers that speak the Anthropic Messages API
// (streamed POST /v1/messages) and measures each request with the same
// definitions as engine/openai: it is a Dialect of openai's client, so the
// transport, arrival clocks, timeouts, retries, redaction and error classes
// are shared, and only the wire format lives here.
package anthropic

import (
	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/openai"
)

// Version is the anthropic-version header sent unless the target's headers
// set one.
const Version = "2023-06-01"

// DefaultMaxTokens is sent when a request gives none: the Messages API
// requires max_tokens.
const DefaultMaxTokens = 4096

// Client is a Messages API target. Calibration counts tokens with POST
// /v1/messages/count_tokens when the server has it (then /tokenize, then a
// one-token probe request), as openai.Client.CountTokens does.
type Client struct {
	*openai.Client
}

var _ measure.Client = (*Client)(nil)

// New builds a client; cfg is openai's (base URL, key, headers, timeouts,
// pool), its Dialect is set here. The API key goes in x-api-key.
func New(cfg openai.Config) (*Client, error) {
	version := Version
	for k, v := range cfg.Headers {
		if equalFold(k, "anthropic-version") {
			version = v
		}
	}
	cfg.Dialect = dialect{version: version}
	c, err := openai.New(cfg)
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
