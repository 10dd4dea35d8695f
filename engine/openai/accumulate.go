// Package openai drives OpenAI-compatible servers (vLLM, SGLang, llama.cpp,
// FreeToken, Ollama, ...) and measures each request at the client boundary,
// with the metric definitions of DESIGN.md.
package openai

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/engine/openai/sse"
)

// StreamError is an error the server reported inside the stream, as a
// {"error": {...}} data line, {"object": "error", ...} or "event: error".
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

// Accumulator turns the SSE events of one streamed request into Metrics.
// Times are offsets from the request start, on a monotonic clock, taken when
// the bytes arrived. Reuse one per worker with Reset; not safe for concurrent
// use.
type Accumulator struct {
	ci chunkInfo

	ttfb    time.Duration
	ttfbSet bool

	tokenEvents       int
	firstTok, lastTok time.Duration
	itl               []float64
	// itlStride keeps every itlStride-th gap once the list reached maxITL;
	// it doubles each time the list fills again (see addGap).
	itlStride, itlSkip int
	// maxEvents is the most token events max_tokens allows; 0: no bound.
	maxEvents, maxTokens int

	events         int
	contentBytes   int
	reasoningBytes int
	finish         string
	done           bool
	usage          bool
	prompt, compl  int
	cachedSet      bool
	cached         int
	timings        bool
	promptN, predN int
	cacheNSet      bool
	cacheN         int
	server         *ServerTimings
	// ch times the answer and reasoning channels apart (reasoning.go).
	ch channels
}

// NewAccumulator returns an empty accumulator.
func NewAccumulator() *Accumulator { return &Accumulator{} }

// maxITL bounds the ITL gaps kept per request (512 KiB), so that an endless
// stream cannot grow memory without bound.
const maxITL = 1 << 16

// ErrTooManyTokens marks a stream with far more token events than its
// max_tokens allows: a server ignoring the bound, or one that never stops.
var ErrTooManyTokens = errors.New("too many token events")

// TokenEventLimit is the most token events a stream asked for maxTokens may
// carry: a server may split a token over events now and then, hence the
// slack of max(16, 10%); 0 (no bound) when maxTokens is not set.
func TokenEventLimit(maxTokens int) int {
	if maxTokens <= 0 {
		return 0
	}
	return maxTokens + max(16, maxTokens/10)
}

// Reset prepares for a new request asked for maxTokens (0: unset): it
// pre-sizes the ITL list so appends do not reallocate on the hot path, and
// bounds the token events the stream may carry.
func (a *Accumulator) Reset(maxTokens int) {
	*a = Accumulator{itlStride: 1, maxTokens: maxTokens, maxEvents: TokenEventLimit(maxTokens)}
	if maxTokens > 0 {
		a.itl = make([]float64, 0, min(maxTokens, maxITL))
	}
}

// addGap keeps gap in the bounded ITL list. Past maxITL gaps it keeps every
// other one of those kept and then every stride-th new gap: a systematic
// sample of the whole stream, bounded, in place of an unbounded list.
func (a *Accumulator) addGap(gap float64) {
	if a.itlStride == 0 {
		a.itlStride = 1 // an Accumulator that was never Reset
	}
	if a.itlSkip++; a.itlSkip < a.itlStride {
		return
	}
	a.itlSkip = 0
	if len(a.itl) == maxITL {
		for i := range maxITL / 2 {
			a.itl[i] = a.itl[2*i+1]
		}
		a.itl = a.itl[:maxITL/2]
		a.itlStride *= 2
	}
	if len(a.itl) == cap(a.itl) {
		// Grow by hand: append's growth would overshoot maxITL.
		grown := make([]float64, len(a.itl), min(max(2*cap(a.itl), 64), maxITL))
		copy(grown, a.itl)
		a.itl = grown
	}
	a.itl = append(a.itl, gap)
}

// FirstByte records the time of the first response byte.
func (a *Accumulator) FirstByte(at time.Duration) {
	if !a.ttfbSet {
		a.ttfb, a.ttfbSet = at, true
	}
}

// TokenEvents is the number of token-bearing events so far.
func (a *Accumulator) TokenEvents() int { return a.tokenEvents }

// Done reports whether [DONE] was seen.
func (a *Accumulator) Done() bool { return a.done }

var eventError = []byte("error")

// Event accounts one SSE event. It returns a *StreamError for an error event
// and a decoding error for a chunk that is not JSON. Events after [DONE] are
// ignored.
func (a *Accumulator) Event(ev *sse.Event) error {
	if a.done {
		return nil
	}
	a.events++
	if ev.Done {
		a.done = true
		return nil
	}
	if bytes.Equal(ev.Name, eventError) {
		return decodeStreamError(ev.Data)
	}
	ci := &a.ci
	if err := parseChunk(ev.Data, ci); err != nil {
		return err
	}
	if ci.errRaw != nil {
		return decodeStreamError(ci.errRaw)
	}
	if ci.tokens {
		if a.tokenEvents == 0 {
			a.firstTok = ev.At
		} else {
			a.addGap(durMs(ev.At - a.lastTok))
		}
		a.lastTok = ev.At
		a.tokenEvents++
		if a.maxEvents > 0 && a.tokenEvents > a.maxEvents {
			return fmt.Errorf("%w: the server sent %d token events for max_tokens %d", ErrTooManyTokens, a.tokenEvents, a.maxTokens)
		}
	}
	a.ch.event(ci, ev.At)
	a.contentBytes += ci.contentBytes
	a.reasoningBytes += ci.reasoningBytes
	if ci.finish != nil {
		a.finish = internFinish(ci.finish)
	}
	if ci.usage {
		// Last wins: servers with continuous usage send running totals.
		a.usage = true
		a.prompt, a.compl = ci.prompt, ci.completion
		if ci.cachedSet {
			a.cachedSet, a.cached = true, ci.cached
		}
	}
	if ci.timings {
		a.timings = true
		a.promptN, a.predN = ci.promptN, ci.predictedN
		a.cacheNSet, a.cacheN = ci.cacheNSet, ci.cacheN
		t, err := serverTimings(ci.timingsRaw)
		if err != nil {
			return err
		}
		if t != nil {
			a.server = t
		}
	}
	return nil
}

// internFinish avoids an allocation per request for the common values.
func internFinish(b []byte) string {
	switch string(b) {
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool_calls"
	case "abort":
		return "abort"
	case "":
		return ""
	}
	return string(b)
}

// Metrics computes the per-request figures; end is the end-of-stream offset.
// The ITL slice is handed over: Reset before reusing the accumulator.
func (a *Accumulator) Metrics(end time.Duration) Metrics {
	m := Metrics{
		E2EMs:              durMs(end),
		ITLMs:              a.itl,
		SSETokenEvents:     a.tokenEvents,
		SSEEvents:          a.events,
		FinishReason:       a.finish,
		OutputTextBytes:    a.contentBytes,
		ReasoningTextBytes: a.reasoningBytes,
		DoneSeen:           a.done,
		UsageSeen:          a.usage,
		Server:             a.server,
	}
	if a.ttfbSet {
		m.TTFBMs = ptr(durMs(a.ttfb))
	}
	var ttft time.Duration
	if a.tokenEvents > 0 {
		ttft = a.firstTok
		m.TTFTMs = ptr(durMs(ttft))
	}
	var completion int
	switch {
	case a.usage:
		m.TokenCountSource = SourceUsage
		completion = a.compl
		m.PromptTokens = ptr(a.prompt)
		if a.cachedSet {
			m.CachedTokens = ptr(a.cached)
		}
	case a.timings:
		// llama.cpp's prompt_n counts only the evaluated prompt tokens;
		// cache_n are the reused ones, so the prompt is their sum.
		m.TokenCountSource = SourceTimings
		completion = a.predN
		m.PromptTokens = ptr(a.promptN + a.cacheN)
		if a.cacheNSet {
			m.CachedTokens = ptr(a.cacheN)
		}
	default:
		m.TokenCountSource = SourceSSEEvents
		completion = a.tokenEvents
	}
	m.CompletionTokens = ptr(completion)
	if span := a.lastTok - a.firstTok; a.tokenEvents > 0 && completion >= 2 && span > 0 {
		m.DecodeTokensPerS = ptr(float64(completion-1) / span.Seconds())
		m.TPOTMs = ptr(durMs(span) / float64(completion-1))
	}
	a.ch.fill(&m, completion)
	if m.PromptTokens != nil && ttft > 0 {
		cached := 0
		if m.CachedTokens != nil {
			cached = *m.CachedTokens
		}
		m.PrefillTokensPerS = ptr(float64(*m.PromptTokens-cached) / ttft.Seconds())
	}
	return m
}

func durMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ptr[T any](v T) *T { return &v }
