package measure

import (
	"errors"
	"fmt"
	"time"
)

// A Timeline is what one request did, in protocol-neutral terms: when it was
// sent, when the response began, each token-bearing event with its arrival
// time and channel, the server's token counts, and when it ended. A protocol
// records one per request and Derive turns it into Metrics, so every metric's
// formula and presence rule exists once, for every protocol and for the
// report shape's placeholders.
//
// Times are offsets from the request start (the send), on a monotonic clock
// or the kernel's receive clock, taken when the bytes arrived. How a request
// failed stays in Result.Err: Derive's figures do not depend on it, a failed
// request's figures being what was measured before it failed (Body says
// whether an answer body was read at all).
//
// The token events are kept compactly: per channel (and over all channels)
// the number of events, the tokens they carry and the first and last arrival,
// which is all any per-request formula reads, plus the gaps between
// consecutive events as a bounded systematic sample (MaxITL), so an endless
// stream cannot grow memory without bound. Recording an event allocates
// only when the gap list doubles (Reset sizes it for itlPresize gaps).
//
// Reuse one per worker with Reset; not safe for concurrent use.
type Timeline struct {
	// Body is what the response's body was read as.
	Body Body
	// Headers is request start → first response byte; HeadersSet says it
	// was observed (a request that never got a response has none).
	Headers    time.Duration
	HeadersSet bool
	// End is request start → end of the response (or of the attempt).
	End time.Duration

	// Usage is the server's own token counts.
	Usage Usage

	// All spans every token-bearing event, whatever its channel; Answer,
	// Reasoning and ToolCall span the events of each channel (an event may
	// carry more than one).
	All, Answer, Reasoning, ToolCall Span

	itl []float64
	// itlStride keeps every itlStride-th gap once the list reached MaxITL;
	// it doubles each time the list fills again (see addGap).
	itlStride, itlSkip int
	// maxEvents is the most token events maxTokens allows; 0: no bound.
	maxEvents, maxTokens int

	// Stream facts Derive copies as they are.
	Events             int    // SSE events, token-bearing or not
	Done               bool   // the protocol's end-of-stream marker was seen
	UsageSeen          bool   // a usage object was seen
	FinishReason       string // the server's finish / stop reason
	OutputTextBytes    int    // decoded bytes of answer text
	ReasoningTextBytes int    // decoded bytes of reasoning text
	KeepAliveComments  int
	ArrivalClock       string // how arrival times were taken (ArrivalKernel or ArrivalRead); empty when none was
	// Coalesced counts the token events stamped with the same arrival as
	// the token event before them: one read delivered both. A client that
	// reads late gets several events from one read, and the kernel keeps
	// one receive time for segments that queued meanwhile (the newest), so
	// such an event's own arrival is not resolved and its ITL gap reads 0.
	// FirstCoalesced says the second token event was one of them: the
	// first token's time is the read's, an upper bound on its arrival.
	Coalesced      int
	FirstCoalesced bool
	// Unstreamed says the server counts output it does not stream (the
	// Messages API's summarized or redacted thinking), so its count may
	// exceed the streamed events by any factor (CheckUsage).
	Unstreamed bool
	// Server is what the server said about the request itself (llama.cpp
	// timings), kept beside the client's figures.
	Server *ServerTimings
}

// Body is how a response body was read.
type Body uint8

// Bodies.
const (
	// BodyNone: no answer body was read (refused, redirected, failed before
	// a response, or a body that could not be the answer).
	BodyNone Body = iota
	// BodyStream: an event stream; token events were timed.
	BodyStream
	// BodyJSON: a whole, non-streamed answer: no token was timed.
	BodyJSON
)

// Channel is a set of the channels a token-bearing event carries.
type Channel uint8

// Channels.
const (
	// ChannelAnswer is answer content (delta.content, completions text, an
	// Anthropic text_delta).
	ChannelAnswer Channel = 1 << iota
	// ChannelReasoning is reasoning text (reasoning_content / reasoning, an
	// Anthropic thinking_delta).
	ChannelReasoning
	// ChannelToolCall is a tool call's name or arguments.
	ChannelToolCall
)

// Span is a set of token events: how many, the tokens they carry and when
// the first and the last arrived.
type Span struct {
	Events      int
	Tokens      int
	First, Last time.Duration
}

// interval is last − first.
func (s *Span) interval() time.Duration { return s.Last - s.First }

func (s *Span) add(at time.Duration, tokens int) {
	if s.Events == 0 {
		s.First = at
	}
	s.Last = at
	s.Events++
	s.Tokens += tokens
}

// Usage is the server's token counts for one request and where they came
// from. A count is known only when its Set flag is.
type Usage struct {
	// Source is SourceUsage or SourceTimings; "" when the server gave no
	// counts.
	Source string

	Prompt, Completion, Cached, Reasoning          int
	PromptSet, CompletionSet, CachedSet, ReasonSet bool
}

// MaxITL bounds the ITL gaps a timeline keeps (512 KiB), so that an endless
// stream cannot grow memory without bound.
const MaxITL = 1 << 16

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

// ErrBadCount marks a count from the server that no count can be: negative,
// fractional, not a number, absurdly large, more cached than prompt tokens,
// or far more completion tokens than the answer can have carried. Such a
// request is a protocol error, never a success: the value would also make
// the report fail its own schema, or print a rate of tokens never sent.
var ErrBadCount = errors.New("invalid count from the server")

// Plausible completion counts (CheckUsage). A server may put several
// tokens in one event (a --stream-interval batch, speculative decoding's
// accepted drafts, the Messages API's multi-token text deltas): a few to a
// few dozen per event are seen, so 64 per event is beyond any of them. The
// slack covers tokens that carry no visible text (a stop token counted as
// output, special tokens dropped by the detokenizer) in a short answer.
const (
	maxTokensPerEvent  = 64
	completionSlackTok = 64
)

// CheckUsage refuses a completion count the answer contradicts: more than
// max_tokens allows (with TokenEventLimit's slack), or, for a stream,
// more than maxTokensPerEvent per streamed token event plus
// completionSlackTok. Reasoning the server counted but did not stream
// (OpenAI's hidden reasoning tokens) is not held against the events.
func (t *Timeline) CheckUsage() error {
	u := &t.Usage
	if !u.CompletionSet {
		return nil
	}
	if lim := TokenEventLimit(t.maxTokens); lim > 0 && u.Completion > lim {
		return fmt.Errorf("%w: the server counts %d completion tokens (%s) for max_tokens %d (at most %d is plausible)",
			ErrBadCount, u.Completion, u.Source, t.maxTokens, lim)
	}
	if t.Body != BodyStream || t.Unstreamed {
		return nil
	}
	visible := u.Completion
	if u.ReasonSet && t.Reasoning.Events == 0 {
		visible -= u.Reasoning
	}
	if lim := maxTokensPerEvent*t.All.Events + completionSlackTok; visible > lim {
		return fmt.Errorf("%w: the server counts %d completion tokens (%s) for %d streamed token events (at most %d per event + %d is plausible)",
			ErrBadCount, u.Completion, u.Source, t.All.Events, maxTokensPerEvent, completionSlackTok)
	}
	return nil
}

// itlPresize bounds the gap list Reset allocates ahead (4 KiB): sized for
// max_tokens outright, an open stream of max_tokens 16384 would hold
// 128 KiB before its first token. A longer stream grows it by doubling, a
// copy per doubling, so an event still costs no allocation on average.
const itlPresize = 512

// Reset prepares for a new request asked for maxTokens (0: unset): it
// pre-sizes the gap list for up to itlPresize gaps, and bounds the token
// events the stream may carry.
func (t *Timeline) Reset(maxTokens int) {
	*t = Timeline{itlStride: 1, maxTokens: maxTokens, maxEvents: TokenEventLimit(maxTokens)}
	if maxTokens > 0 {
		t.itl = make([]float64, 0, min(maxTokens, itlPresize))
	}
}

// FirstByte records the time of the first response byte; later calls are
// ignored.
func (t *Timeline) FirstByte(at time.Duration) {
	if !t.HeadersSet {
		t.Headers, t.HeadersSet = at, true
	}
}

// TokenEvents is the number of token-bearing events so far.
func (t *Timeline) TokenEvents() int { return t.All.Events }

// Token records one token-bearing event that arrived at at, carrying the
// channels ch (at least one) and tokens tokens (0: unknown, counted as
// one). It errors, with ErrTooManyTokens, once the stream carries more
// events than its max_tokens allows.
func (t *Timeline) Token(at time.Duration, ch Channel, tokens int) error {
	tokens = max(tokens, 1)
	if t.All.Events > 0 {
		if at == t.All.Last {
			t.Coalesced++
			t.FirstCoalesced = t.FirstCoalesced || t.All.Events == 1
		}
		t.addGap(durMs(at - t.All.Last))
	}
	t.All.add(at, tokens)
	if ch&ChannelAnswer != 0 {
		t.Answer.add(at, tokens)
	}
	if ch&ChannelReasoning != 0 {
		t.Reasoning.add(at, tokens)
	}
	if ch&ChannelToolCall != 0 {
		t.ToolCall.add(at, tokens)
	}
	if t.maxEvents > 0 && t.All.Events > t.maxEvents {
		return fmt.Errorf("%w: the server sent %d token events for max_tokens %d", ErrTooManyTokens, t.All.Events, t.maxTokens)
	}
	return nil
}

// ITL is the kept gaps between consecutive token events, in ms.
func (t *Timeline) ITL() []float64 { return t.itl }

// addGap keeps gap in the bounded ITL list. Past MaxITL gaps it keeps every
// other one of those kept and then every stride-th new gap: a systematic
// sample of the whole stream, bounded, in place of an unbounded list.
func (t *Timeline) addGap(gap float64) {
	if t.itlStride == 0 {
		t.itlStride = 1 // a Timeline that was never Reset
	}
	if t.itlSkip++; t.itlSkip < t.itlStride {
		return
	}
	t.itlSkip = 0
	if len(t.itl) == MaxITL {
		for i := range MaxITL / 2 {
			t.itl[i] = t.itl[2*i+1]
		}
		t.itl = t.itl[:MaxITL/2]
		t.itlStride *= 2
	}
	if len(t.itl) == cap(t.itl) {
		// Grow by hand: append's growth would overshoot MaxITL.
		grown := make([]float64, len(t.itl), min(max(2*cap(t.itl), 64), MaxITL))
		copy(grown, t.itl)
		t.itl = grown
	}
	t.itl = append(t.itl, gap)
}

func durMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
