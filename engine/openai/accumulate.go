package openai

import (
	"bytes"
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport/sse"
)

// Accumulator records the SSE events of one streamed request into a
// measure.Timeline; measure.Derive turns it into Metrics. Times are offsets
// from the request start, on a monotonic clock, taken when the bytes
// arrived. Reuse one per worker with Reset; not safe for concurrent use.
type Accumulator struct {
	ci chunkInfo
	tl measure.Timeline
}

// NewAccumulator returns an empty accumulator.
func NewAccumulator() *Accumulator { return &Accumulator{} }

// maxITL bounds the ITL gaps kept per request (measure.MaxITL).
const maxITL = measure.MaxITL

// ErrTooManyTokens marks a stream with far more token events than its
// max_tokens allows: a server ignoring the bound, or one that never stops.
var ErrTooManyTokens = measure.ErrTooManyTokens

// TokenEventLimit is the most token events a stream asked for maxTokens may
// carry (measure.TokenEventLimit).
func TokenEventLimit(maxTokens int) int { return measure.TokenEventLimit(maxTokens) }

// Reset prepares for a new request asked for maxTokens (0: unset): it
// pre-sizes the ITL list so appends do not reallocate on the hot path, and
// bounds the token events the stream may carry.
func (a *Accumulator) Reset(maxTokens int) {
	a.ci.reset()
	a.tl.Reset(maxTokens)
	a.tl.Body = measure.BodyStream
}

// Timeline is the request's timeline, as recorded so far.
func (a *Accumulator) Timeline() *measure.Timeline { return &a.tl }

// FirstByte records the time of the first response byte.
func (a *Accumulator) FirstByte(at time.Duration) { a.tl.FirstByte(at) }

// TokenEvents is the number of token-bearing events so far.
func (a *Accumulator) TokenEvents() int { return a.tl.All.Events }

// Done reports whether [DONE] was seen.
func (a *Accumulator) Done() bool { return a.tl.Done }

var eventError = []byte("error")

// Event accounts one SSE event. It returns a *StreamError for an error event
// and a decoding error for a chunk that is not JSON. Events after [DONE] are
// ignored.
func (a *Accumulator) Event(ev *sse.Event) error {
	tl := &a.tl
	if tl.Done {
		return nil
	}
	tl.Events++
	if ev.Done {
		tl.Done = true
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
		// A token event with neither text is a tool call (or an empty
		// completions text, never: that is no token).
		var ch measure.Channel
		if ci.contentBytes > 0 {
			ch |= measure.ChannelAnswer
		}
		if ci.reasoningBytes > 0 {
			ch |= measure.ChannelReasoning
		}
		if ch == 0 {
			ch = measure.ChannelToolCall
		}
		if err := tl.Token(ev.At, ch, 0); err != nil {
			return err
		}
	}
	tl.OutputTextBytes += ci.contentBytes
	tl.ReasoningTextBytes += ci.reasoningBytes
	if ci.finish != nil {
		tl.FinishReason = internFinish(ci.finish)
	}
	if ci.usage {
		// Last wins: servers with continuous usage send running totals;
		// the usage object wins over llama.cpp's timings.
		tl.UsageSeen = true
		u := &tl.Usage
		if u.Source != SourceUsage {
			*u = measure.Usage{Source: SourceUsage}
		}
		u.Prompt, u.Completion, u.PromptSet, u.CompletionSet = ci.prompt, ci.completion, true, true
		if ci.cachedSet {
			u.Cached, u.CachedSet = ci.cached, true
		}
		if ci.reasoningSet {
			u.Reasoning, u.ReasonSet = ci.reasoning, true
		}
	}
	if ci.timings {
		if tl.Usage.Source != SourceUsage {
			tl.Usage = timingsUsage(ci.promptN, ci.predictedN, ci.cacheN, ci.cacheNSet)
		}
		t, err := serverTimings(ci.timingsRaw)
		if err != nil {
			return err
		}
		if t != nil {
			tl.Server = t
		}
	}
	return nil
}

// Finished is nil when the stream said it was over: a finish_reason (the
// usage chunk and [DONE] may still be lost) or [DONE]; else an error
// wrapping ErrTruncated.
func (a *Accumulator) Finished() error {
	tl := &a.tl
	if tl.Done || tl.FinishReason != "" {
		return nil
	}
	return fmt.Errorf("%w: the stream ended after %d events (%d token events) with neither a finish_reason nor [DONE]",
		ErrTruncated, tl.Events, tl.All.Events)
}

// timingsUsage is the token counts of a llama.cpp timings object: prompt_n
// counts only the evaluated prompt tokens, cache_n the reused ones, so the
// prompt is their sum.
func timingsUsage(promptN, predN, cacheN int, cacheNSet bool) measure.Usage {
	return measure.Usage{Source: SourceTimings, Prompt: promptN + cacheN, Completion: predN, Cached: cacheN,
		PromptSet: true, CompletionSet: true, CachedSet: cacheNSet}
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

// Metrics ends the stream at end and derives its figures (measure.Derive).
// The ITL slice is handed over: Reset before reusing the accumulator.
func (a *Accumulator) Metrics(end time.Duration) Metrics {
	a.tl.Body = measure.BodyStream
	a.tl.End = end
	return measure.Derive(&a.tl)
}

func durMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ptr[T any](v T) *T { return &v }
