package sse

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

type gotEvent struct {
	Name string
	Data string
	At   time.Duration
	Done bool
}

// collect feeds the given chunks (chunk i arrives at i ms) and returns the
// events, copying them out of the callback as the contract requires.
func collect(t *testing.T, p *Parser, chunks []string) ([]gotEvent, error) {
	t.Helper()
	var got []gotEvent
	emit := func(ev *Event) error {
		got = append(got, gotEvent{string(ev.Name), string(ev.Data), ev.At, ev.Done})
		return nil
	}
	for i, c := range chunks {
		if err := p.Feed([]byte(c), time.Duration(i)*time.Millisecond, emit); err != nil {
			return got, err
		}
	}
	return got, p.Flush(time.Duration(len(chunks))*time.Millisecond, emit)
}

func TestParserTable(t *testing.T) {
	roleFirst := `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`
	tests := []struct {
		name   string
		chunks []string
		want   []gotEvent
	}{
		{
			name:   "role-only first chunk then content",
			chunks: []string{"data: " + roleFirst + "\n\n", "data: {\"c\":1}\n\n"},
			want:   []gotEvent{{Data: roleFirst, At: 0}, {Data: `{"c":1}`, At: time.Millisecond}},
		},
		{
			name:   "no space after colon",
			chunks: []string{"data:{\"a\":1}\n\n"},
			want:   []gotEvent{{Data: `{"a":1}`}},
		},
		{
			name:   "only one leading space stripped",
			chunks: []string{"data:  x\n\n"},
			want:   []gotEvent{{Data: " x"}},
		},
		{
			name:   "CRLF endings",
			chunks: []string{"data: a\r\n\r\ndata: b\r\n\r\n"},
			want:   []gotEvent{{Data: "a"}, {Data: "b"}},
		},
		{
			name:   "CR-only endings",
			chunks: []string{"data: a\r\rdata: b\r\r"},
			want:   []gotEvent{{Data: "a"}, {Data: "b"}},
		},
		{
			name:   "CRLF split across reads",
			chunks: []string{"data: a\r", "\n\r", "\n"},
			want:   []gotEvent{{Data: "a", At: time.Millisecond}}, // the CR alone ends the blank line
		},
		{
			name:   "comments and keep-alives ignored",
			chunks: []string{": ping\n\n:\n", "data: x\n: mid-event comment\n\n"},
			want:   []gotEvent{{Data: "x", At: time.Millisecond}},
		},
		{
			name:   "multi-line data joined with LF",
			chunks: []string{"data: line1\ndata: line2\ndata:\n\n"},
			want:   []gotEvent{{Data: "line1\nline2\n"}},
		},
		{
			name:   "event field",
			chunks: []string{"event: error\ndata: {\"error\":{\"message\":\"boom\"}}\n\n", "data: plain\n\n"},
			want:   []gotEvent{{Name: "error", Data: `{"error":{"message":"boom"}}`}, {Data: "plain", At: time.Millisecond}},
		},
		{
			name:   "event without data is not dispatched and type resets",
			chunks: []string{"event: ping\n\ndata: x\n\n"},
			want:   []gotEvent{{Data: "x"}},
		},
		{
			name:   "done marker",
			chunks: []string{"data: [DONE]\n\n"},
			want:   []gotEvent{{Data: "[DONE]", Done: true}},
		},
		{
			name:   "id and retry ignored, unknown fields ignored",
			chunks: []string{"id: 7\nretry: 100\nfoo: bar\nbare\ndata: x\n\n"},
			want:   []gotEvent{{Data: "x"}},
		},
		{
			name:   "missing final blank line dispatched on flush",
			chunks: []string{"data: [DONE]"},
			want:   []gotEvent{{Data: "[DONE]", Done: true, At: time.Millisecond}},
		},
		{
			name:   "BOM at stream start",
			chunks: []string{"\xEF\xBB\xBFdata: x\n\n"},
			want:   []gotEvent{{Data: "x"}},
		},
		{
			name:   "timestamp is that of the completing read",
			chunks: []string{"data: {\"choices\":", "[]}\n", "\n"},
			want:   []gotEvent{{Data: `{"choices":[]}`, At: 2 * time.Millisecond}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := collect(t, NewParser(0), tt.chunks)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// A realistic stream split at every byte offset (and into single bytes) must
// give the same events as when fed whole.
func TestParserSplitAtEveryOffset(t *testing.T) {
	stream := ": keep-alive\r\n\r\n" +
		"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\r\n\r\n" +
		"data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hm\"}}]}\n\n" +
		"event: message\ndata: a\ndata: b\n\n" +
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"x\"}]}}]}\r\r" +
		"data: [DONE]\r\n\r\n"
	strip := func(evs []gotEvent) []gotEvent {
		for i := range evs {
			evs[i].At = 0
		}
		return evs
	}
	whole, err := collect(t, NewParser(0), []string{stream})
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) != 5 || !whole[4].Done {
		t.Fatalf("whole stream parsed to %+v", whole)
	}
	whole = strip(whole)
	p := NewParser(0)
	for cut := 0; cut <= len(stream); cut++ {
		p.Reset()
		got, err := collect(t, p, []string{stream[:cut], stream[cut:]})
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		if !reflect.DeepEqual(strip(got), whole) {
			t.Fatalf("cut %d:\ngot  %+v\nwant %+v", cut, got, whole)
		}
	}
	bytesOne := make([]string, len(stream))
	for i := range stream {
		bytesOne[i] = stream[i : i+1]
	}
	p.Reset()
	got, err := collect(t, p, bytesOne)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(strip(got), whole) {
		t.Fatalf("byte-at-a-time:\ngot  %+v\nwant %+v", got, whole)
	}
}

func TestParserLimits(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		what   string
	}{
		{name: "line in one read", chunks: []string{"data: " + strings.Repeat("x", 64) + "\n\n"}, what: "line"},
		{name: "line across reads without ending", chunks: []string{"data: xxxxxxxxxx", strings.Repeat("y", 60)}, what: "line"},
		{name: "line across reads with ending", chunks: []string{"data: xxxxxxxxxx", strings.Repeat("y", 60) + "\n"}, what: "line"},
		{name: "joined event data", chunks: []string{strings.Repeat("data: 0123456789\n", 8) + "\n"}, what: "event data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := collect(t, NewParser(64), tt.chunks)
			var le *LimitError
			if !errors.As(err, &le) {
				t.Fatalf("want *LimitError, got %v", err)
			}
			if le.What != tt.what || le.LimitBytes != 64 || !strings.Contains(err.Error(), "64-byte limit") {
				t.Fatalf("unexpected error %+v: %v", le, err)
			}
		})
	}
	// Exactly at the limit is fine.
	got, err := collect(t, NewParser(8), []string{"data:123\n\n"})
	if err != nil || len(got) != 1 {
		t.Fatalf("at-limit line: %v %+v", err, got)
	}
}

func TestParserEmitErrorStops(t *testing.T) {
	p := NewParser(0)
	stop := errors.New("stop")
	n := 0
	err := p.Feed([]byte("data: a\n\ndata: b\n\n"), 0, func(*Event) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("err=%v n=%d", err, n)
	}
}

func TestParserNoAllocsPerEvent(t *testing.T) {
	p := NewParser(0)
	chunk := []byte(sampleEvent(3))
	emit := func(*Event) error { return nil }
	_ = p.Feed(chunk, 0, emit) // grow buffers
	allocs := testing.AllocsPerRun(1000, func() {
		_ = p.Feed(chunk, 0, emit)
	})
	if allocs != 0 {
		t.Fatalf("allocs per event = %v, want 0", allocs)
	}
}

func FuzzParser(f *testing.F) {
	f.Add([]byte("data: a\r\n\r\n: c\ndata: [DONE]\n\n"), 3)
	f.Add([]byte("event: error\rdata: x\r\r"), 1)
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		if cut < 0 {
			cut = -cut
		}
		if len(b) > 0 {
			cut %= len(b) + 1
		} else {
			cut = 0
		}
		var whole, split []string
		rec := func(dst *[]string) func(*Event) error {
			return func(ev *Event) error { *dst = append(*dst, string(ev.Name)+"|"+string(ev.Data)); return nil }
		}
		p := NewParser(0)
		_ = p.Feed(b, 0, rec(&whole))
		_ = p.Flush(0, rec(&whole))
		p.Reset()
		_ = p.Feed(b[:cut], 0, rec(&split))
		_ = p.Feed(b[cut:], 0, rec(&split))
		_ = p.Flush(0, rec(&split))
		if !reflect.DeepEqual(whole, split) {
			t.Fatalf("split at %d differs:\n%q\n%q", cut, whole, split)
		}
	})
}

// sampleEvent is a typical ~150-byte OpenAI chat chunk event.
func sampleEvent(i int) string {
	return fmt.Sprintf(`data: {"id":"chatcmpl-%06d","object":"chat.completion.chunk","created":1730000000,"model":"m","choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}`+"\n\n", i)
}

func BenchmarkParser(b *testing.B) {
	chunk := []byte(sampleEvent(1))
	p := NewParser(0)
	n, events := 0, 0
	emit := func(ev *Event) error { n += len(ev.Data); events++; return nil }
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		// One event per read, the worst case for per-call overhead.
		if err := p.Feed(chunk, 0, emit); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkParserBulk64KiB(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 64<<10; i++ {
		sb.WriteString(sampleEvent(i))
	}
	buf := []byte(sb.String())
	p := NewParser(0)
	events := 0
	emit := func(*Event) error { events++; return nil }
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Feed(buf, 0, emit); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
