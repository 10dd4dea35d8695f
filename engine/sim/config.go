// Package sim is tollgate's embedded OpenAI-compatible LLM serving simulator.
//
// It serves /v1/chat/completions and /v1/completions (streamed and not) with a
// latency model that has the shape of a real continuous-batching server: a
// prefill phase whose cost depends on the uncached prompt tokens (a real,
// block-hashed prefix cache with LRU eviction decides what is cached), a
// bounded number of running sequences with a FIFO waiting queue, and decode
// steps that slow down as the batch grows. Output text and token counts are
// deterministic, so tests and CI gates built on it are stable.
//
// All state hangs off a Server; one decode loop per Server drives every
// running sequence with a single timer, so thousands of concurrent streams
// cost one goroutine each (the HTTP handler) and no per-token timers.
package sim

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// Version is reported by GET /version.
const Version = "tollgate-sim/1"

// Config describes the simulated server. Zero fields take the defaults
// listed in DefaultConfig, so Config{} is a usable configuration; for a
// near-zero latency term use a tiny positive value such as time.Nanosecond.
type Config struct {
	// Model is the only model name served; requests naming another get 404.
	// An empty model in a request means this one.
	Model string
	// MaxModelLen is the context window: prompt plus completion tokens.
	MaxModelLen int

	// TTFTBase is a fixed per-request overhead before the first token
	// (scheduling, detokenisation, HTTP), paid in parallel by every request.
	TTFTBase time.Duration
	// PrefillTokensPerS is the server's prefill throughput for uncached
	// prompt tokens. Prefill is one shared resource: concurrent prefills
	// queue behind each other, so TTFT grows under load as on a real GPU.
	PrefillTokensPerS float64
	// DecodeStep is the duration of one decode step with one running sequence.
	DecodeStep time.Duration
	// DecodeStepPerSeq is added to each step per extra sequence in the
	// decode batch (continuous batching: bigger batches, slower steps).
	DecodeStepPerSeq time.Duration
	// MaxRunningSeqs caps the sequences holding a slot (prefill or decode);
	// further requests wait in FIFO order and their TTFT includes the wait.
	MaxRunningSeqs int

	// CacheCapacityTokens is the prefix cache capacity; it is rounded down
	// to whole blocks and evicts least-recently-used blocks.
	CacheCapacityTokens int
	// BlockTokens is the cache block size; only full blocks are cached.
	BlockTokens int
	// DisablePrefixCache turns the prefix cache off (every token is prefilled).
	DisablePrefixCache bool

	// DefaultMaxTokens applies when a request gives neither max_tokens nor
	// max_completion_tokens (clamped to what the context window leaves).
	DefaultMaxTokens int
	// MeanEOSTokens is the mean of the deterministic, exponentially
	// distributed point at which a request without ignore_eos stops with
	// finish_reason "stop".
	MeanEOSTokens int
	// NoEOS makes every request behave as if it set ignore_eos.
	NoEOS bool
	// ReasoningTokens makes the simulator a reasoning model: the first
	// ReasoningTokens tokens of each chat answer (at most its max_tokens)
	// stream on the reasoning channel (reasoning_content; an Anthropic
	// thinking block) before the answer, and count in completion_tokens and
	// usage.completion_tokens_details.reasoning_tokens. 0: none.
	ReasoningTokens int

	// Seed makes the output text deterministic: the same seed and request
	// always produce the same text.
	Seed int64

	// IdleTimeout is how long a connection may wait between requests
	// before the server closes it; it is advertised as "Keep-Alive:
	// timeout=N" (whole seconds, when at least one) so a client can retire
	// the connection first. A fresh connection waits longer for its first
	// request (FirstRequestTimeout).
	IdleTimeout time.Duration

	// APIKey, when set, is required as "Authorization: Bearer <key>" on
	// /v1/* endpoints (401 otherwise), so clients can test key handling.
	APIKey string

	// Faults make chosen generation requests fail or misbehave (HTTP
	// errors, resets, stalls, broken streams); none by default. See Fault.
	Faults []Fault

	// ToolCalls, when set, replaces DefaultToolCalls: how requests that
	// offer tools are answered with tool calls.
	ToolCalls *ToolCalls

	// RequestLog, when set, receives one JSON line (a RequestRecord) per
	// admitted generation request as it ends, through a bounded buffer that
	// only ever writes whole lines, at the latest a second after the
	// previous write and on Close. The caller owns and closes it after Close.
	RequestLog io.Writer
}

// DefaultConfig returns the defaults: small-model-on-one-GPU latencies that
// make results look plausible without a GPU.
func DefaultConfig() Config {
	return Config{
		Model:               "tollgate-sim",
		MaxModelLen:         32768,
		TTFTBase:            5 * time.Millisecond,
		PrefillTokensPerS:   50_000,
		DecodeStep:          10 * time.Millisecond,
		DecodeStepPerSeq:    50 * time.Microsecond,
		MaxRunningSeqs:      256,
		CacheCapacityTokens: 262_144,
		BlockTokens:         16,
		DefaultMaxTokens:    256,
		MeanEOSTokens:       256,
		IdleTimeout:         30 * time.Second,
	}
}

// FirstRequestTimeout is how long a fresh connection may wait for its
// first request's header: ten idle timeouts, at least two minutes. It is
// longer than the idle timeout because a client opening thousands of
// connections dials ahead of demand and parks the spare ones in its pool
// until its connect storm is over; closing those at the idle timeout races
// their first request, which clients do not resend on a connection that
// never carried one (Go's http.Transport does not). Between requests the
// client has had an answer, with the Keep-Alive hint, and can retire the
// connection in time.
func FirstRequestTimeout(idle time.Duration) time.Duration {
	return max(10*idle, 2*time.Minute)
}

// withDefaults fills zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Model == "" {
		c.Model = d.Model
	}
	if c.MaxModelLen == 0 {
		c.MaxModelLen = d.MaxModelLen
	}
	if c.TTFTBase == 0 {
		c.TTFTBase = d.TTFTBase
	}
	if c.PrefillTokensPerS == 0 {
		c.PrefillTokensPerS = d.PrefillTokensPerS
	}
	if c.DecodeStep == 0 {
		c.DecodeStep = d.DecodeStep
	}
	if c.DecodeStepPerSeq == 0 {
		c.DecodeStepPerSeq = d.DecodeStepPerSeq
	}
	if c.MaxRunningSeqs == 0 {
		c.MaxRunningSeqs = d.MaxRunningSeqs
	}
	if c.CacheCapacityTokens == 0 {
		c.CacheCapacityTokens = d.CacheCapacityTokens
	}
	if c.BlockTokens == 0 {
		c.BlockTokens = d.BlockTokens
	}
	if c.DefaultMaxTokens == 0 {
		c.DefaultMaxTokens = d.DefaultMaxTokens
	}
	if c.MeanEOSTokens == 0 {
		c.MeanEOSTokens = d.MeanEOSTokens
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	c.Faults = withFaultDefaults(c.Faults)
	return c
}

// validate reports every invalid field at once, so a user fixes them in one go.
func (c Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.MaxModelLen < 2 {
		bad("sim: MaxModelLen must be at least 2, got %d", c.MaxModelLen)
	}
	if c.TTFTBase < 0 {
		bad("sim: TTFTBase must not be negative, got %v", c.TTFTBase)
	}
	if c.PrefillTokensPerS < 0 || c.PrefillTokensPerS != c.PrefillTokensPerS {
		bad("sim: PrefillTokensPerS must be positive, got %v", c.PrefillTokensPerS)
	}
	if c.DecodeStep < 0 {
		bad("sim: DecodeStep must not be negative, got %v", c.DecodeStep)
	}
	if c.DecodeStepPerSeq < 0 {
		bad("sim: DecodeStepPerSeq must not be negative, got %v", c.DecodeStepPerSeq)
	}
	if c.IdleTimeout < 0 {
		bad("sim: IdleTimeout must not be negative, got %v", c.IdleTimeout)
	}
	if c.MaxRunningSeqs < 1 {
		bad("sim: MaxRunningSeqs must be at least 1, got %d", c.MaxRunningSeqs)
	}
	if c.BlockTokens < 1 {
		bad("sim: BlockTokens must be at least 1, got %d", c.BlockTokens)
	}
	if !c.DisablePrefixCache && c.BlockTokens >= 1 && c.CacheCapacityTokens < c.BlockTokens {
		bad("sim: CacheCapacityTokens (%d) must hold at least one block of BlockTokens (%d)", c.CacheCapacityTokens, c.BlockTokens)
	}
	if c.DefaultMaxTokens < 1 {
		bad("sim: DefaultMaxTokens must be at least 1, got %d", c.DefaultMaxTokens)
	}
	if c.ReasoningTokens < 0 {
		bad("sim: ReasoningTokens must not be negative, got %d", c.ReasoningTokens)
	}
	if c.MeanEOSTokens < 1 {
		bad("sim: MeanEOSTokens must be at least 1, got %d", c.MeanEOSTokens)
	}
	errs = append(errs, validateFaults(c.Faults)...)
	if c.ToolCalls != nil {
		errs = append(errs, c.ToolCalls.validate())
	}
	return errors.Join(errs...)
}
