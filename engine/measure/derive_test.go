package measure

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/report"
)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

func f(v float64) *float64 { return &v }
func n(v int) *int         { return &v }

// tok is one token event of a hand-built timeline.
type tok struct {
	at     float64 // ms
	ch     Channel
	tokens int
}

// stream is a streamed timeline: first byte at 5 ms, the events, end at end ms.
func stream(end float64, u Usage, events ...tok) *Timeline {
	t := &Timeline{}
	t.Reset(0)
	t.Body = BodyStream
	t.FirstByte(ms(5))
	for _, e := range events {
		if err := t.Token(ms(e.at), e.ch, e.tokens); err != nil {
			panic(err)
		}
	}
	t.Events = len(events)
	t.Usage = u
	t.UsageSeen = u.Source == SourceUsage
	t.End = ms(end)
	return t
}

func usage(prompt, completion, cached, reasoning int) Usage {
	u := Usage{Source: SourceUsage, Prompt: prompt, Completion: completion, PromptSet: true, CompletionSet: true}
	if cached >= 0 {
		u.Cached, u.CachedSet = cached, true
	}
	if reasoning >= 0 {
		u.Reasoning, u.ReasonSet = reasoning, true
	}
	return u
}

// evenly is count events of channel ch, every step ms from first.
func evenly(first, step float64, count int, ch Channel) []tok {
	out := make([]tok, count)
	for i := range out {
		out[i] = tok{at: first + float64(i)*step, ch: ch}
	}
	return out
}

func gaps(step float64, count int) []float64 {
	out := make([]float64, count)
	for i := range out {
		out[i] = step
	}
	return out
}

func TestDerive(t *testing.T) {
	const A, R, T = ChannelAnswer, ChannelReasoning, ChannelToolCall
	tests := []struct {
		name string
		tl   *Timeline
		want Metrics
	}{
		{
			// 3 reasoning events 10 ms apart, then 4 answer events: every
			// figure, each channel timed apart.
			name: "reasoning model",
			tl:   stream(80, usage(100, 7, 20, 3), append(evenly(10, 10, 3, R), evenly(40, 10, 4, A)...)...),
			want: Metrics{RequestMetrics: report.RequestMetrics{TTFBMS: f(5), TTFTMS: f(10), TTFOMS: f(40), E2EMS: 80,
				ReasoningTokens: n(3), ReasoningTokensPerS: f(2 / 0.020), AnswerTokensPerS: f(3 / 0.030),
				DecodeTokensPerS: f(6 / 0.060), TPOTMS: f(10), ITLMS: gaps(10, 6), PrefillTokensPerS: f(80 / 0.010),
				PromptTokens: n(100), CompletionTokens: n(7), CachedTokens: n(20), TokenCountSource: SourceUsage,
				SSETokenEvents: 7, UsageSeen: true}, SSEEvents: 7},
		},
		{
			// The server's reasoning count wins over the events counted, and
			// one reasoning token has no rate even over two events.
			name: "one reasoning token split over two events",
			tl:   stream(50, usage(10, 4, -1, 1), tok{at: 10, ch: R}, tok{at: 20, ch: R}, tok{at: 30, ch: A}, tok{at: 40, ch: A}),
			want: Metrics{RequestMetrics: report.RequestMetrics{TTFBMS: f(5), TTFTMS: f(10), TTFOMS: f(30), E2EMS: 50,
				ReasoningTokens: n(1), AnswerTokensPerS: f(2 / 0.010),
				DecodeTokensPerS: f(3 / 0.030), TPOTMS: f(10), ITLMS: gaps(10, 3), PrefillTokensPerS: f(10 / 0.010),
				PromptTokens: n(10), CompletionTokens: n(4), TokenCountSource: SourceUsage,
				SSETokenEvents: 4, UsageSeen: true}, SSEEvents: 4},
		},
		{
			// No interval: neither decode rate nor tpot, nor an answer rate.
			name: "1-token answer",
			tl:   stream(20, usage(8, 1, -1, -1), tok{at: 10, ch: A}),
			want: Metrics{RequestMetrics: report.RequestMetrics{TTFBMS: f(5), TTFTMS: f(10), TTFOMS: f(10), E2EMS: 20, ReasoningTokens: n(0),
				ITLMS: []float64{}, PrefillTokensPerS: f(8 / 0.010), PromptTokens: n(8), CompletionTokens: n(1),
				TokenCountSource: SourceUsage, SSETokenEvents: 1, UsageSeen: true}, SSEEvents: 1},
		},
		{
			// A token the server split over two events: one token has no rate
			// however far apart its pieces came.
			name: "1-token answer over two events",
			tl:   stream(30, usage(8, 1, -1, -1), tok{at: 10, ch: A}, tok{at: 20, ch: A}),
			want: Metrics{RequestMetrics: report.RequestMetrics{TTFBMS: f(5), TTFTMS: f(10), TTFOMS: f(10), E2EMS: 30, ReasoningTokens: n(0),
				ITLMS: []float64{10}, PrefillTokensPerS: f(8 / 0.010), PromptTokens: n(8), CompletionTokens: n(1),
				TokenCountSource: SourceUsage, SSETokenEvents: 2, UsageSeen: true}, SSEEvents: 2},
		},
		{
			// Counted events stand in for the counts; no prompt, so no prefill.
			name: "no usage",
			tl:   stream(40, Usage{}, evenly(10, 10, 3, A)...),
			want: Metrics{RequestMetrics: report.RequestMetrics{TTFBMS: f(5), TTFTMS: f(10), TTFOMS: f(10), E2EMS: 40, ReasoningTokens: n(0),
				AnswerTokensPerS: f(2 / 0.020), DecodeTokensPerS: f(2 / 0.020), TPOTMS: f(10), ITLMS: gaps(10, 2),
				CompletionTokens: n(3), TokenCountSource: SourceSSEEvents, SSETokenEvents: 3}, SSEEvents: 3},
		},
		{
			// Token counts given per event add up in place of one per event.
			name: "no usage, events with known token counts",
			tl:   stream(40, Usage{}, tok{at: 10, ch: A, tokens: 2}, tok{at: 30, ch: A, tokens: 3}),
			want: Metrics{RequestMetrics: report.RequestMetrics{TTFBMS: f(5), TTFTMS: f(10), TTFOMS: f(10), E2EMS: 40, ReasoningTokens: n(0),
				AnswerTokensPerS: f(4 / 0.020), DecodeTokensPerS: f(4 / 0.020), TPOTMS: f(5), ITLMS: []float64{20},
				CompletionTokens: n(5), TokenCountSource: SourceSSEEvents, SSETokenEvents: 2}, SSEEvents: 2},
		},
		{
			name: "cached prompt",
			tl:   stream(40, usage(100, 2, 60, -1), tok{at: 20, ch: A}, tok{at: 30, ch: A}),
			want: Metrics{RequestMetrics: report.RequestMetrics{TTFBMS: f(5), TTFTMS: f(20), TTFOMS: f(20), E2EMS: 40, ReasoningTokens: n(0),
				AnswerTokensPerS: f(1 / 0.010), DecodeTokensPerS: f(1 / 0.010), TPOTMS: f(10), ITLMS: []float64{10},
				PrefillTokensPerS: f(40 / 0.020), PromptTokens: n(100), CompletionTokens: n(2), CachedTokens: n(60),
				TokenCountSource: SourceUsage, SSETokenEvents: 2, UsageSeen: true}, SSEEvents: 2},
		},
		{
			// Nothing was prefilled: a rate of no work is absent, not 0.
			name: "wholly cached prompt",
			tl:   stream(40, usage(100, 2, 100, -1), tok{at: 20, ch: A}, tok{at: 30, ch: A}),
			want: Metrics{RequestMetrics: report.RequestMetrics{TTFBMS: f(5), TTFTMS: f(20), TTFOMS: f(20), E2EMS: 40, ReasoningTokens: n(0),
				AnswerTokensPerS: f(1 / 0.010), DecodeTokensPerS: f(1 / 0.010), TPOTMS: f(10), ITLMS: []float64{10},
				PromptTokens: n(100), CompletionTokens: n(2), CachedTokens: n(100),
				TokenCountSource: SourceUsage, SSETokenEvents: 2, UsageSeen: true}, SSEEvents: 2},
		},
		{
			// A tool call is a token but no answer content: no ttfo, no answer rate.
			name: "tool calls only",
			tl:   stream(50, usage(30, 12, -1, -1), evenly(10, 10, 4, T)...),
			want: Metrics{RequestMetrics: report.RequestMetrics{TTFBMS: f(5), TTFTMS: f(10), E2EMS: 50, ReasoningTokens: n(0),
				DecodeTokensPerS: f(11 / 0.030), TPOTMS: f(30.0 / 11), ITLMS: gaps(10, 3), PrefillTokensPerS: f(30 / 0.010),
				PromptTokens: n(30), CompletionTokens: n(12), TokenCountSource: SourceUsage,
				SSETokenEvents: 4, UsageSeen: true}, SSEEvents: 4},
		},
		{
			// The stream broke after two events, before usage and [DONE]:
			// the figures are what was measured until then.
			name: "error mid-stream",
			tl:   stream(35, Usage{}, tok{at: 10, ch: A}, tok{at: 25, ch: A}),
			want: Metrics{RequestMetrics: report.RequestMetrics{TTFBMS: f(5), TTFTMS: f(10), TTFOMS: f(10), E2EMS: 35, ReasoningTokens: n(0),
				AnswerTokensPerS: f(1 / 0.015), DecodeTokensPerS: f(1 / 0.015), TPOTMS: f(15), ITLMS: []float64{15},
				CompletionTokens: n(2), TokenCountSource: SourceSSEEvents, SSETokenEvents: 2}, SSEEvents: 2},
		},
		{
			// Events arriving in one read share a time: no interval, no rate.
			name: "every event in one read",
			tl:   stream(20, usage(10, 3, -1, -1), evenly(10, 0, 3, A)...),
			want: Metrics{RequestMetrics: report.RequestMetrics{TTFBMS: f(5), TTFTMS: f(10), TTFOMS: f(10), E2EMS: 20, ReasoningTokens: n(0),
				ITLMS: gaps(0, 2), PrefillTokensPerS: f(10 / 0.010), PromptTokens: n(10), CompletionTokens: n(3),
				TokenCountSource: SourceUsage, SSETokenEvents: 3, CoalescedEvents: 2, TTFTCoalesced: true, UsageSeen: true}, SSEEvents: 3},
		},
		{
			name: "llama.cpp timings",
			tl: stream(40, Usage{Source: SourceTimings, Prompt: 12, Completion: 3, Cached: 2, PromptSet: true, CompletionSet: true, CachedSet: true},
				evenly(10, 10, 3, A)...),
			want: Metrics{RequestMetrics: report.RequestMetrics{TTFBMS: f(5), TTFTMS: f(10), TTFOMS: f(10), E2EMS: 40, ReasoningTokens: n(0),
				AnswerTokensPerS: f(2 / 0.020), DecodeTokensPerS: f(2 / 0.020), TPOTMS: f(10), ITLMS: gaps(10, 2),
				PrefillTokensPerS: f(10 / 0.010), PromptTokens: n(12), CompletionTokens: n(3), CachedTokens: n(2),
				TokenCountSource: SourceTimings, SSETokenEvents: 3}, SSEEvents: 3},
		},
		{
			// Refused (an HTTP status, a redirect): only what was measured.
			name: "no body",
			tl:   &Timeline{Headers: ms(5), HeadersSet: true, End: ms(6), Usage: usage(1, 1, -1, -1)},
			want: Metrics{RequestMetrics: report.RequestMetrics{TTFBMS: f(5), E2EMS: 6}},
		},
		{
			name: "never answered",
			tl:   &Timeline{End: ms(3)},
			want: Metrics{RequestMetrics: report.RequestMetrics{E2EMS: 3}},
		},
		{
			name: "non-streamed",
			tl:   &Timeline{Body: BodyJSON, Headers: ms(5), HeadersSet: true, End: ms(9), Usage: usage(10, 4, 2, -1), OutputTextBytes: 12, UsageSeen: true},
			want: Metrics{RequestMetrics: report.RequestMetrics{TTFBMS: f(5), E2EMS: 9, ReasoningTokens: n(0), PromptTokens: n(10), CompletionTokens: n(4), CachedTokens: n(2),
				TokenCountSource: SourceUsage, UsageSeen: true}, OutputTextBytes: 12},
		},
		{
			// Reasoning text and no count (the Messages API): unknown.
			name: "non-streamed reasoning without a count",
			tl:   &Timeline{Body: BodyJSON, End: ms(9), Usage: usage(10, 4, -1, -1), ReasoningTextBytes: 7},
			want: Metrics{RequestMetrics: report.RequestMetrics{E2EMS: 9, PromptTokens: n(10), CompletionTokens: n(4), TokenCountSource: SourceUsage}, ReasoningTextBytes: 7},
		},
		{
			name: "non-streamed without counts",
			tl:   &Timeline{Body: BodyJSON, End: ms(9), OutputTextBytes: 3},
			want: Metrics{RequestMetrics: report.RequestMetrics{E2EMS: 9, ReasoningTokens: n(0)}, OutputTextBytes: 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			same(t, Derive(tt.tl), tt.want)
		})
	}
}

// same fails with every field of got that differs from want (floats to a
// relative 1e-9).
func same(t *testing.T, got, want Metrics) {
	t.Helper()
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for _, sf := range reflect.VisibleFields(gv.Type()) {
		if sf.Anonymous {
			continue // its fields are visited themselves
		}
		name := sf.Name
		gf, wf := gv.FieldByIndex(sf.Index), wv.FieldByIndex(sf.Index)
		g, w := gf.Interface(), wf.Interface()
		ok := reflect.DeepEqual(g, w)
		switch g := g.(type) {
		case *float64:
			w := w.(*float64)
			ok = (g == nil) == (w == nil) && (g == nil || close(*g, *w))
		case []float64:
			w := w.([]float64)
			ok = len(g) == len(w)
			for j := 0; ok && j < len(g); j++ {
				ok = close(g[j], w[j])
			}
		}
		if !ok {
			t.Errorf("%s: got %s, want %s", name, show(gf), show(wf))
		}
	}
}

func show(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "absent"
		}
		v = v.Elem()
	}
	return fmt.Sprint(v.Interface())
}

// TestTimelineBounds: the token-event bound of max_tokens, and the ITL
// sample that stays bounded over an endless stream.
func TestTimelineBounds(t *testing.T) {
	var tl Timeline
	tl.Reset(4)
	var err error
	for i := range TokenEventLimit(4) + 1 {
		if err = tl.Token(ms(float64(i)), ChannelAnswer, 0); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrTooManyTokens) || tl.TokenEvents() != TokenEventLimit(4)+1 {
		t.Fatalf("after %d events: %v", tl.TokenEvents(), err)
	}
	tl.Reset(0)
	for i := range 3*MaxITL + 5 {
		if err := tl.Token(ms(float64(i)), ChannelAnswer, 0); err != nil {
			t.Fatal(err)
		}
	}
	if l := len(tl.ITL()); l > MaxITL || l < MaxITL/2 || cap(tl.ITL()) > MaxITL {
		t.Fatalf("itl len %d cap %d", l, cap(tl.ITL()))
	}
	if tl.All.Events != 3*MaxITL+5 || tl.All.Last != ms(3*MaxITL+4) {
		t.Fatalf("span %+v: the events past the ITL bound are not counted", tl.All)
	}
}

// TestTokenAllocs: recording token events allocates only when the gap
// list doubles past what Reset sized, and Reset sizes at most itlPresize
// gaps whatever max_tokens asks (an open stream's memory).
func TestTokenAllocs(t *testing.T) {
	for _, tc := range []struct {
		name             string
		maxTokens, count int
		allocs           float64 // Reset's, then one per doubling
	}{
		{"within the presize", 1024, itlPresize, 1},
		{"one doubling", 1024, 1000, 2},
		{"four doublings", 16384, 8000, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tl Timeline
			i := 0
			allocs := testing.AllocsPerRun(20, func() {
				tl.Reset(tc.maxTokens)
				for range tc.count {
					i++
					_ = tl.Token(time.Duration(i), ChannelAnswer|ChannelReasoning, 0)
				}
			})
			if allocs > tc.allocs {
				t.Fatalf("%v allocations per %d events, want at most %v", allocs, tc.count, tc.allocs)
			}
			tl.Reset(tc.maxTokens)
			if c := cap(tl.ITL()); c > itlPresize {
				t.Fatalf("Reset(%d) sized the gap list for %d gaps, more than %d", tc.maxTokens, c, itlPresize)
			}
		})
	}
}

// Token events stamped with the arrival of the one before them came in one
// read: each is counted, and the first token's own read holding the next
// makes its ttft an upper bound. The figures themselves are unchanged.
func TestDeriveCountsCoalescedEvents(t *testing.T) {
	a := ChannelAnswer
	for _, tc := range []struct {
		name      string
		events    []tok
		coalesced int
		first     bool
	}{
		{name: "each event its own read", events: evenly(10, 5, 4, a)},
		{name: "one read after the first", events: []tok{{10, a, 0}, {30, a, 0}, {30, a, 0}, {30, a, 0}, {35, a, 0}}, coalesced: 2},
		{name: "the first token shares its read", events: []tok{{30, a, 0}, {30, a, 0}, {35, a, 0}}, coalesced: 1, first: true},
		{name: "two late reads", events: []tok{{10, a, 0}, {30, a, 0}, {30, a, 0}, {50, a, 0}, {50, a, 0}}, coalesced: 2},
		{name: "a single event", events: []tok{{10, a, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Derive(stream(60, Usage{}, tc.events...))
			if m.CoalescedEvents != tc.coalesced || m.TTFTCoalesced != tc.first {
				t.Errorf("coalesced %d, ttft coalesced %v; want %d, %v", m.CoalescedEvents, m.TTFTCoalesced, tc.coalesced, tc.first)
			}
			if want := ms(tc.events[0].at); m.TTFTMS == nil || *m.TTFTMS != durMs(want) {
				t.Errorf("ttft %v, want %v: counting changes no figure", m.TTFTMS, want)
			}
		})
	}
}
