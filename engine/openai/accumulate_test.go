package openai

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/transport/sse"
)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

type timedEvent struct {
	at   time.Duration
	name string
	data string
}

func run(t *testing.T, evs []timedEvent, end time.Duration) (Metrics, error) {
	t.Helper()
	a := NewAccumulator()
	a.Reset(0)
	a.FirstByte(ms(2))
	for _, e := range evs {
		ev := &sse.Event{Name: []byte(e.name), Data: []byte(e.data), At: e.at, Done: e.data == "[DONE]"}
		if err := a.Event(ev); err != nil {
			return a.Metrics(end), err
		}
	}
	return a.Metrics(end), nil
}

func TestChunkFastPathMatchesSlow(t *testing.T) {
	tests := []struct {
		name string
		json string
		fast bool // the scanner, not the fallback, must accept it
	}{
		{"role only", `{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`, true},
		{"llama.cpp role with null content", `{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"created":1,"id":"x","model":"m","object":"chat.completion.chunk"}`, true},
		{"content", `{"choices":[{"index":0,"delta":{"content":" hello"}}]}`, true},
		{"escaped content", `{"choices":[{"delta":{"content":"a\"b\\c\n\u00e9\ud83d\ude00\u4e2d"}}]}`, true},
		{"lone surrogate", `{"choices":[{"delta":{"content":"\ud83d x"}}]}`, true},
		{"reasoning_content", `{"choices":[{"delta":{"reasoning_content":"think","content":null}}]}`, true},
		{"reasoning", `{"choices":[{"delta":{"reasoning":"think"}}]}`, true},
		{"tool_calls", `{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}`, true},
		{"empty tool_calls", `{"choices":[{"delta":{"tool_calls":[]}}]}`, true},
		{"completions text", `{"id":"cmpl","object":"text_completion","choices":[{"index":0,"text":" world","logprobs":null,"finish_reason":null}]}`, true},
		{"usage null", `{"choices":[{"delta":{"content":"x"}}],"usage":null}`, true},
		{"final usage", `{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16,"prompt_tokens_details":{"cached_tokens":3}}}`, true},
		{"usage with null details", `{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":4,"prompt_tokens_details":null}}`, true},
		{"finish with usage", `{"choices":[{"text":"","index":0,"finish_reason":"length"}],"usage":{"completion_tokens":4,"prompt_tokens":12}}`, true},
		{"timings", `{"choices":[{"delta":{},"finish_reason":"length"}],"timings":{"prompt_n":9,"prompt_ms":1.5,"cache_n":3,"predicted_n":4,"predicted_per_second":99.5}}`, true},
		{"error object", `{"error":{"message":"boom","type":"server_error","code":500}}`, true},
		{"whitespace everywhere", " { \"choices\" : [ { \"delta\" : { \"content\" : \"x\" } } ] } ", true},
		{"multiple choices", `{"choices":[{"index":0,"delta":{"content":""}},{"index":1,"delta":{"content":"y"}}]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fast, slow chunkInfo
			s := scanner{b: []byte(tt.json)}
			ok := s.topLevel(&fast)
			s.ws()
			ok = ok && s.i == len(s.b)
			if ok != tt.fast {
				t.Fatalf("fast path accepted=%v, want %v", ok, tt.fast)
			}
			if err := parseChunk([]byte(tt.json), &fast); err != nil {
				t.Fatal(err)
			}
			if err := parseChunkSlow([]byte(tt.json), &slow); err != nil {
				t.Fatal(err)
			}
			norm := func(c chunkInfo) string {
				return fmt.Sprintf("tok=%v cb=%d rb=%d fin=%q u=%v %d/%d c=%v/%d tm=%v %d/%d c=%v/%d err=%v",
					c.tokens, c.contentBytes, c.reasoningBytes, c.finish, c.usage, c.prompt, c.completion,
					c.cachedSet, c.cached, c.timings, c.promptN, c.predictedN, c.cacheNSet, c.cacheN, c.errRaw != nil)
			}
			if norm(fast) != norm(slow) {
				t.Fatalf("fast %s\nslow %s", norm(fast), norm(slow))
			}
		})
	}
}

func TestChunkMalformed(t *testing.T) {
	for _, tt := range []struct{ name, data string }{
		{"not json", "hello"},
		{"truncated", `{"choices":[{"delta":{"content":"x`},
		{"trailing garbage", `{"choices":[]} x`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ci chunkInfo
			if err := parseChunk([]byte(tt.data), &ci); err == nil {
				t.Fatal("want error")
			}
		})
	}
}

func TestTTFTIgnoresNonTokenEvents(t *testing.T) {
	tests := []struct {
		name     string
		first    string // event at 10 ms that must NOT stop the clock
		ttftWant float64
	}{
		{"role only", `{"choices":[{"delta":{"role":"assistant"}}]}`, 30},
		{"empty content", `{"choices":[{"delta":{"role":"assistant","content":""}}]}`, 30},
		{"null content", `{"choices":[{"delta":{"role":"assistant","content":null}}]}`, 30},
		{"usage only", `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0}}`, 30},
		{"empty text", `{"choices":[{"text":""}]}`, 30},
		{"empty tool_calls", `{"choices":[{"delta":{"tool_calls":[]}}]}`, 30},
		{"reasoning first", `{"choices":[{"delta":{"reasoning_content":"hmm"}}]}`, 10},
		{"reasoning (alt name) first", `{"choices":[{"delta":{"reasoning":"hmm"}}]}`, 10},
		{"tool_calls first", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}`, 10},
		{"completions text first", `{"choices":[{"text":"x"}]}`, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := run(t, []timedEvent{
				{at: ms(10), data: tt.first},
				{at: ms(30), data: `{"choices":[{"delta":{"content":"a"}}]}`},
				{at: ms(40), data: "[DONE]"},
			}, ms(41))
			if err != nil {
				t.Fatal(err)
			}
			if m.TTFTMS == nil || *m.TTFTMS != tt.ttftWant {
				t.Fatalf("ttft = %v, want %v", deref64(m.TTFTMS), tt.ttftWant)
			}
		})
	}
}

func deref64(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// The same token timing delivered with each usage shape must give the same
// figures; only the provenance fields may differ.
func TestUsageShapesGiveIdenticalMetrics(t *testing.T) {
	tok := func(at float64, s string) timedEvent {
		return timedEvent{at: ms(at), data: `{"choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}]}`}
	}
	tokNullUsage := func(at float64, s string) timedEvent {
		return timedEvent{at: ms(at), data: `{"choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}],"usage":null}`}
	}
	text := func(at float64, s string) timedEvent {
		return timedEvent{at: ms(at), data: `{"choices":[{"index":0,"text":"` + s + `","finish_reason":null}]}`}
	}
	role := timedEvent{at: ms(5), data: `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`}
	usage := `{"prompt_tokens":20,"completion_tokens":4,"total_tokens":24,"prompt_tokens_details":{"cached_tokens":5}}`
	done := timedEvent{at: ms(82), data: "[DONE]"}
	shapes := []struct {
		name   string
		events []timedEvent
		source string
	}{
		{"final usage chunk with empty choices (OpenAI, vLLM, FreeToken)", []timedEvent{
			role, tok(50, "a"), tok(60, "b"), tok(70, "c"), tok(80, "d"),
			{at: ms(81), data: `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`},
			{at: ms(81), data: `{"choices":[],"usage":` + usage + `}`}, done,
		}, SourceUsage},
		{"usage null on every other chunk", []timedEvent{
			{at: ms(5), data: `{"choices":[{"index":0,"delta":{"role":"assistant"}}],"usage":null}`},
			tokNullUsage(50, "a"), tokNullUsage(60, "b"), tokNullUsage(70, "c"), tokNullUsage(80, "d"),
			{at: ms(81), data: `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":null}`},
			{at: ms(81), data: `{"choices":[],"usage":` + usage + `}`}, done,
		}, SourceUsage},
		{"usage in the finish_reason chunk (llama.cpp /v1/completions)", []timedEvent{
			text(50, "a"), text(60, "b"), text(70, "c"), text(80, "d"),
			{at: ms(81), data: `{"choices":[{"index":0,"text":"","finish_reason":"length"}],"usage":` + usage + `}`}, done,
		}, SourceUsage},
		{"no usage, llama.cpp timings", []timedEvent{
			role, tok(50, "a"), tok(60, "b"), tok(70, "c"), tok(80, "d"),
			{at: ms(81), data: `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"timings":{"prompt_n":15,"cache_n":5,"predicted_n":4,"predicted_ms":30.1}}`}, done,
		}, SourceTimings},
		{"no usage at all", []timedEvent{
			role, tok(50, "a"), tok(60, "b"), tok(70, "c"), tok(80, "d"),
			{at: ms(81), data: `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`}, done,
		}, SourceSSEEvents},
	}
	var ref Metrics
	for i, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			m, err := run(t, sh.events, ms(83))
			if err != nil {
				t.Fatal(err)
			}
			if m.TokenCountSource != sh.source {
				t.Fatalf("source %q, want %q", m.TokenCountSource, sh.source)
			}
			if sh.source == SourceSSEEvents {
				if m.PromptTokens != nil || m.CachedTokens != nil || m.PrefillTokensPerS != nil {
					t.Fatalf("prompt figures must be absent without usage: %+v", m)
				}
				// Everything else matches: fill in what only usage knows.
				m.PromptTokens, m.CachedTokens, m.PrefillTokensPerS = ref.PromptTokens, ref.CachedTokens, ref.PrefillTokensPerS
			}
			// Provenance fields legitimately differ between shapes.
			m.TokenCountSource, m.UsageSeen, m.SSEEvents, m.Server = "", false, 0, nil
			if i == 0 {
				ref = m
				want := func(name string, got *float64, v float64) {
					if got == nil || *got < v-1e-9 || *got > v+1e-9 {
						t.Errorf("%s = %v, want %v", name, deref64(got), v)
					}
				}
				want("ttft_ms", m.TTFTMS, 50)
				want("ttfb_ms", m.TTFBMS, 2)
				want("tpot_ms", m.TPOTMS, 10)
				want("decode_tokens_per_s", m.DecodeTokensPerS, 100)
				want("prefill_tokens_per_s", m.PrefillTokensPerS, 15/0.050)
				if !reflect.DeepEqual(m.ITLMS, []float64{10, 10, 10}) || *m.CompletionTokens != 4 ||
					*m.PromptTokens != 20 || *m.CachedTokens != 5 || m.FinishReason != "length" ||
					!m.DoneSeen || m.OutputTextBytes != 4 || m.SSETokenEvents != 4 || m.E2EMS != 83 {
					t.Fatalf("reference metrics wrong: %+v", m)
				}
				return
			}
			if !reflect.DeepEqual(m, ref) {
				t.Fatalf("metrics differ from the first shape:\n got %s\nwant %s", dump(m), dump(ref))
			}
		})
	}
}

func dump(m Metrics) string {
	return fmt.Sprintf("ttft=%v tpot=%v dec=%v pre=%v p=%v c=%v cached=%v itl=%v fin=%q done=%v bytes=%d ev=%d",
		deref64(m.TTFTMS), deref64(m.TPOTMS), deref64(m.DecodeTokensPerS), deref64(m.PrefillTokensPerS),
		derefInt(m.PromptTokens), derefInt(m.CompletionTokens), derefInt(m.CachedTokens), m.ITLMS, m.FinishReason,
		m.DoneSeen, m.OutputTextBytes, m.SSETokenEvents)
}

func derefInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestAbsentRatherThanZero(t *testing.T) {
	tests := []struct {
		name   string
		events []timedEvent
		ttft   bool
	}{
		{"no token at all", []timedEvent{{at: ms(5), data: `{"choices":[{"delta":{"role":"assistant"}}]}`}, {at: ms(6), data: "[DONE]"}}, false},
		{"one completion token", []timedEvent{
			{at: ms(5), data: `{"choices":[{"delta":{"content":"a"}}]}`},
			{at: ms(6), data: `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}`},
		}, true},
		{"many tokens in one event (zero interval)", []timedEvent{
			{at: ms(5), data: `{"choices":[{"delta":{"content":"abc"}}]}`},
			{at: ms(6), data: `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":3}}`},
		}, true},
		{"two events in the same read", []timedEvent{
			{at: ms(5), data: `{"choices":[{"delta":{"content":"a"}}]}`},
			{at: ms(5), data: `{"choices":[{"delta":{"content":"b"}}]}`},
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := run(t, tt.events, ms(7))
			if err != nil {
				t.Fatal(err)
			}
			if m.DecodeTokensPerS != nil || m.TPOTMS != nil {
				t.Fatalf("decode/tpot must be absent: %s", dump(m))
			}
			if (m.TTFTMS != nil) != tt.ttft {
				t.Fatalf("ttft presence = %v, want %v", m.TTFTMS != nil, tt.ttft)
			}
		})
	}
}

func TestStreamEndsWithoutDoneOrUsage(t *testing.T) {
	m, err := run(t, []timedEvent{{at: ms(5), data: `{"choices":[{"delta":{"content":"a"}}]}`}}, ms(9))
	if err != nil {
		t.Fatal(err)
	}
	if m.DoneSeen || m.UsageSeen || m.TokenCountSource != SourceSSEEvents || *m.CompletionTokens != 1 {
		t.Fatalf("flags wrong: %+v", m)
	}
}

func TestErrorEvents(t *testing.T) {
	tests := []struct {
		name, event, data, msg, code string
	}{
		{"error object in data", "", `{"error":{"message":"out of memory","type":"server_error","code":500}}`, "out of memory", "500"},
		{"error string in data", "", `{"error":"model crashed"}`, "model crashed", ""},
		{"object error form (vLLM)", "", `{"object":"error","message":"bad request","type":"BadRequestError","code":400}`, "bad request", "400"},
		{"event error with JSON", "error", `{"message":"overloaded","code":"busy"}`, "overloaded", "busy"},
		{"event error with text", "error", `upstream went away`, "upstream went away", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, []timedEvent{{at: ms(1), name: tt.event, data: tt.data}}, ms(2))
			var se *StreamError
			if !errors.As(err, &se) {
				t.Fatalf("want *StreamError, got %v", err)
			}
			if se.Message != tt.msg || se.Code != tt.code {
				t.Fatalf("got %+v", se)
			}
		})
	}
}

const benchChunk = `{"id":"chatcmpl-123456","object":"chat.completion.chunk","created":1730000000,"model":"m","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]}`

func BenchmarkAccumulatorEvent(b *testing.B) {
	a := NewAccumulator()
	a.Reset(4096)
	ev := &sse.Event{Data: []byte(benchChunk)}
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		if n == 4096 {
			a.Reset(4096)
			n = 0
		}
		n++
		ev.At += time.Microsecond
		if err := a.Event(ev); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
}

// Parse + account, the client's whole per-token CPU cost after the read.
func BenchmarkParseAndAccount(b *testing.B) {
	a := NewAccumulator()
	a.Reset(4096)
	p := sse.NewParser(0)
	chunk := []byte("data: " + benchChunk + "\n\n")
	emit := a.Event
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		if n == 4096 {
			a.Reset(4096)
			n = 0
		}
		n++
		if err := p.Feed(chunk, time.Duration(n), emit); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// FuzzParseChunk checks the scanner never panics and, whenever encoding/json
// accepts a chunk, agrees with it on whether the chunk carries a token.
func FuzzParseChunk(f *testing.F) {
	f.Add([]byte(benchChunk))
	f.Add([]byte(`{"choices":[{"delta":{"content":"\ud83d\ude00","tool_calls":[]}}],"usage":{"prompt_tokens":1}}`))
	f.Add([]byte(`{"choices":[{"text":"a\u00e9"}],"timings":{"prompt_n":1,"cache_n":2}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, slow chunkInfo
		fastErr := parseChunk(data, &fast)
		if parseChunkSlow(data, &slow) == nil {
			if fastErr != nil {
				t.Fatalf("slow path accepts what parseChunk rejects: %v", fastErr)
			}
			if fast.tokens != slow.tokens && bytes.Equal(bytes.ToLower(data), data) {
				t.Fatalf("token flag differs: fast %v slow %v", fast.tokens, slow.tokens)
			}
		}
	})
}

// A whole streamed request's accounting: Reset, 256 token events and the
// metrics at the end (the per-request cost beside the per-event one).
func BenchmarkRequest256(b *testing.B) {
	a := NewAccumulator()
	ev := &sse.Event{Data: []byte(benchChunk)}
	b.ReportAllocs()
	for b.Loop() {
		a.Reset(256)
		for i := range 256 {
			ev.At = time.Duration(i+1) * time.Millisecond
			if err := a.Event(ev); err != nil {
				b.Fatal(err)
			}
		}
		if m := a.Metrics(300 * time.Millisecond); m.DecodeTokensPerS == nil {
			b.Fatal("no decode rate")
		}
	}
}
