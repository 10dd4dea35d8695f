package openai

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime/debug"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/transport/sse"
)

// fuzzMaxLine is small so the fuzzer reaches the parser's limits with short
// inputs; the production cap is the same code with a bigger number.
const fuzzMaxLine = 512

// sseOutcome is what one pass of a stream through the parser and the
// accumulator produced, minus everything that legitimately depends on how
// the bytes were split into reads (arrival times).
type sseOutcome struct {
	Events   []string
	Err      string
	Comments int
	Metrics  Metrics
}

// streamThrough feeds stream in chunks of the given sizes (cycled; a size of
// 0 means 1), as Client.Stream does: each event goes to the accumulator and
// the first error from either stops the stream.
func streamThrough(t *testing.T, stream []byte, sizes []int) sseOutcome {
	t.Helper()
	var out sseOutcome
	p := sse.NewParser(fuzzMaxLine)
	acc := NewAccumulator()
	acc.Reset(0)
	acc.FirstByte(0)
	emit := func(ev *sse.Event) error {
		// The parser's cap is what keeps memory bounded against a hostile
		// server: nothing it hands out may be bigger.
		if len(ev.Data) > fuzzMaxLine || len(ev.Name) > fuzzMaxLine {
			t.Fatalf("event beyond the %d-byte cap: name %d bytes, data %d bytes", fuzzMaxLine, len(ev.Name), len(ev.Data))
		}
		if ev.Done != bytes.Equal(bytes.TrimSpace(ev.Data), []byte("[DONE]")) {
			t.Fatalf("Done=%v for data %q", ev.Done, ev.Data)
		}
		out.Events = append(out.Events, fmt.Sprintf("%q|%q|%v", ev.Name, ev.Data, ev.Done))
		return acc.Event(ev)
	}
	var err error
	at := time.Duration(0)
	for i, off := 0, 0; off < len(stream) && err == nil; i++ {
		n := 1
		if len(sizes) > 0 && sizes[i%len(sizes)] > 0 {
			n = sizes[i%len(sizes)]
		}
		n = min(n, len(stream)-off)
		at = time.Duration(i+1) * time.Millisecond
		err = p.Feed(stream[off:off+n], at, emit)
		off += n
	}
	if err == nil {
		err = p.Flush(at, emit)
	}
	if err != nil {
		var le *sse.LimitError
		var se *StreamError
		if !errors.As(err, &le) && !errors.As(err, &se) && err.Error() == "" {
			t.Fatalf("error with no message: %T", err)
		}
		out.Err = err.Error()
	}
	out.Comments = p.Comments()
	m := acc.Metrics(at + time.Millisecond)
	checkMetrics(t, m)
	// Times depend on the split; the rest must not.
	m.TTFBMS, m.TTFTMS, m.E2EMS, m.DecodeTokensPerS, m.TPOTMS, m.PrefillTokensPerS = nil, nil, 0, nil, nil, nil
	m.TTFOMS, m.ReasoningTokensPerS, m.AnswerTokensPerS = nil, nil, nil
	m.ITLMS = make([]float64, len(m.ITLMS))
	out.Metrics = m
	return out
}

// checkMetrics holds the accumulator to the report's rules: optional figures
// are absent rather than NaN or infinite, and the ITL list has one gap per
// pair of token events.
func checkMetrics(t *testing.T, m Metrics) {
	t.Helper()
	finite := func(name string, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%s = %v", name, v)
		}
	}
	finite("e2e_ms", m.E2EMS)
	for name, p := range map[string]*float64{
		"ttfb_ms": m.TTFBMS, "ttft_ms": m.TTFTMS, "decode_tokens_per_s": m.DecodeTokensPerS,
		"tpot_ms": m.TPOTMS, "prefill_tokens_per_s": m.PrefillTokensPerS,
		"ttfo_ms": m.TTFOMS, "reasoning_tokens_per_s": m.ReasoningTokensPerS, "answer_tokens_per_s": m.AnswerTokensPerS,
	} {
		if p != nil {
			finite(name, *p)
		}
	}
	for _, v := range m.ITLMS {
		finite("itl_ms", v)
		if v < 0 {
			t.Fatalf("negative inter-token gap %v", v)
		}
	}
	if m.SSETokenEvents > 0 && len(m.ITLMS) != m.SSETokenEvents-1 {
		t.Fatalf("%d token events but %d gaps", m.SSETokenEvents, len(m.ITLMS))
	}
	if m.SSETokenEvents == 0 && (m.TTFTMS != nil || len(m.ITLMS) > 0) {
		t.Fatalf("no token events, yet ttft %v and %d gaps", m.TTFTMS, len(m.ITLMS))
	}
	if m.OutputTextBytes < 0 || m.ReasoningTextBytes < 0 || m.SSEEvents < m.SSETokenEvents {
		t.Fatalf("impossible counts: %+v", m)
	}
}

// longestLine is the longest line of stream under the event-stream rules
// (CR, LF or CRLF endings; a leading BOM is not part of the first line).
func longestLine(stream []byte) int {
	stream = bytes.TrimPrefix(stream, []byte{0xEF, 0xBB, 0xBF})
	longest, cur := 0, 0
	for _, c := range stream {
		if c == '\r' || c == '\n' {
			cur = 0
			continue
		}
		cur++
		longest = max(longest, cur)
	}
	return longest
}

// FuzzSSE streams arbitrary bytes through the SSE parser and the chunk
// accumulator, split into reads three ways: all at once, byte by byte and at
// fuzzer-chosen sizes. Nothing may panic or hang, no line beyond the cap may
// be accepted, and the events, the error and the counts must not depend on
// the split: a network read boundary carries no meaning. (sse's FuzzParser
// checks one split of the parser alone; this covers the whole client path.)
func FuzzSSE(f *testing.F) {
	chat := func(delta string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	for _, s := range []string{
		chat(`{"role":"assistant","content":""}`) + chat(`{"content":" hello"}`) + chat(`{"content":" world"}`) +
			`data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":3}}}` + "\n\ndata: [DONE]\n\n",
		": keep-alive\r\n\r\n" + chat(`{"reasoning_content":"think"}`) + chat(`{"tool_calls":[{"index":0}]}`) + "data: [DONE]",
		"data: {\"choices\":[{\"text\":\" a\",\"finish_reason\":\"length\"}],\"timings\":{\"prompt_n\":9,\"cache_n\":3,\"predicted_n\":1}}\r\r",
		"event: error\ndata: {\"error\":{\"message\":\"boom\",\"code\":500}}\n\n",
		"data: {\"object\":\"error\",\"message\":\"overloaded\"}\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"\\ud83d\\ude00\"}}]}\n\ndata: not json\n\n",
		"data: a\ndata: b\nid: 1\nretry: 10\n\n",
		"data:" + string(bytes.Repeat([]byte("x"), fuzzMaxLine)) + "\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n" + "data: [DONE]\n\n" + "data: after done\n\n",
	} {
		f.Add([]byte(s), []byte{1, 7, 3})
	}
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		if len(stream) > 16<<10 || len(cuts) > 64 {
			t.Skip() // bigger inputs only slow the fuzzer down
		}
		sizes := make([]int, len(cuts))
		for i, c := range cuts {
			sizes[i] = int(c)
		}
		done := make(chan string, 1)
		var whole, bytewise, split sseOutcome
		go func() {
			defer func() {
				if r := recover(); r != nil {
					done <- fmt.Sprintf("panic: %v\n%s", r, debug.Stack())
				}
			}()
			whole = streamThrough(t, stream, []int{len(stream)})
			bytewise = streamThrough(t, stream, nil)
			split = streamThrough(t, stream, sizes)
			done <- ""
		}()
		select {
		case msg := <-done:
			if msg != "" {
				t.Fatal(msg)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("streaming %d bytes did not finish within 2s", len(stream))
		}
		if whole.Err == "" && longestLine(stream) > fuzzMaxLine {
			t.Fatalf("a %d-byte line was accepted under a %d-byte cap", longestLine(stream), fuzzMaxLine)
		}
		// The coalesced counts say how the reads fell, which is what this
		// test varies; every figure must agree whatever they are.
		whole.Metrics.CoalescedEvents, whole.Metrics.TTFTCoalesced = 0, false
		for name, got := range map[string]sseOutcome{"byte by byte": bytewise, fmt.Sprintf("in reads of %v", sizes): split} {
			got.Metrics.CoalescedEvents, got.Metrics.TTFTCoalesced = 0, false
			if !reflect.DeepEqual(whole, got) {
				t.Fatalf("fed %s, the outcome differs from one read:\nwhole: %+v\nsplit: %+v", name, whole, got)
			}
		}
	})
}
