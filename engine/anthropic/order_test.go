package anthropic

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport"
)

// A Messages API stream is held to the protocol's order; what breaks it is
// a protocol error naming the event and what was due, and a stream that
// ends before message_stop is truncated.
func TestStreamOrder(t *testing.T) {
	block := func(deltas ...string) string {
		s := ev("content_block_start", textStart)
		for _, d := range deltas {
			s += ev("content_block_delta", textDelta(d))
		}
		return s + ev("content_block_stop", textStop)
	}
	end := ev("message_delta", msgDelta(2)) + ev("message_stop", msgStop)
	tests := []struct {
		name   string
		stream string
		class  measure.ErrorClass // "": success
		is     error
		msg    string
	}{
		{name: "whole", stream: ev("message_start", msgStart) + block("a", "b") + end},
		{name: "ping between blocks and before the start", stream: ev("ping", ping) + ev("message_start", msgStart) + block("a") + ev("ping", ping) +
			ev("content_block_start", thinkStart) + ev("content_block_delta", thinkDelta("b")) + ev("ping", ping) + ev("content_block_stop", blockStop) + ev("ping", ping) + end},
		{name: "an event type added later is skipped", stream: ev("message_start", msgStart) + ev("citation_hint", `{"type":"citation_hint"}`) + block("a", "b") + end},
		{name: "repeated message_delta", stream: ev("message_start", msgStart) + block("a", "b") + ev("message_delta", msgDelta(1)) + end},
		{name: "cut after two deltas", stream: ev("message_start", msgStart) + ev("content_block_start", textStart) +
			ev("content_block_delta", textDelta("a")) + ev("content_block_delta", textDelta("b")),
			class: measure.ClassTruncated, is: transport.ErrTruncated,
			msg: "the stream ended after content_block_delta (4 events, 2 token events); expected content_block_delta or content_block_stop"},
		{name: "cut after message_delta", stream: ev("message_start", msgStart) + block("a", "b") + ev("message_delta", msgDelta(2)),
			class: measure.ClassTruncated, is: transport.ErrTruncated, msg: "after message_delta (6 events, 2 token events); expected message_delta or message_stop"},
		{name: "[DONE] is no message_stop", stream: ev("message_start", msgStart) + block("a") + "data: [DONE]\n\n",
			class: measure.ClassTruncated, is: transport.ErrTruncated, msg: "after content_block_stop"},
		{name: "reverse order", stream: ev("message_stop", msgStop) + ev("message_delta", msgDelta(2)) + ev("content_block_delta", textDelta("a")) + ev("message_start", msgStart),
			class: measure.ClassProtocol, is: ErrEventOrder, msg: `"message_stop" before any event; expected message_start`},
		{name: "delta without content_block_start", stream: ev("message_start", msgStart) + ev("content_block_delta", textDelta("a")) + end,
			class: measure.ClassProtocol, is: ErrEventOrder, msg: `"content_block_delta" after message_start; expected content_block_start or message_delta`},
		{name: "two message_starts", stream: ev("message_start", msgStart) + ev("message_start", msgStart) + block("a") + end,
			class: measure.ClassProtocol, is: ErrEventOrder, msg: `"message_start" after message_start; expected content_block_start or message_delta`},
		{name: "block left open", stream: ev("message_start", msgStart) + ev("content_block_start", textStart) + ev("content_block_delta", textDelta("a")) + end,
			class: measure.ClassProtocol, is: ErrEventOrder, msg: `"message_delta" after content_block_delta; expected content_block_delta or content_block_stop`},
		{name: "a delta of another block", stream: ev("message_start", msgStart) + ev("content_block_start", textStart) + ev("content_block_delta", thinkDelta("a")),
			class: measure.ClassProtocol, is: ErrEventOrder, msg: "content_block_delta for content block 0 while block 1 is open"},
		{name: "message_stop without message_delta", stream: ev("message_start", msgStart) + block("a") + ev("message_stop", msgStop),
			class: measure.ClassProtocol, is: ErrEventOrder, msg: `"message_stop" after content_block_stop; expected content_block_start or message_delta`},
		{name: "an event after message_stop", stream: ev("message_start", msgStart) + block("a") + end + ev("content_block_start", textStart),
			class: measure.ClassProtocol, is: ErrEventOrder, msg: `"content_block_start" after message_stop; expected the end of the stream`},
		{name: "event name and data disagree", stream: ev("message_start", msgStart) + ev("content_block_stop", textStart),
			class: measure.ClassProtocol, is: ErrEventOrder, msg: `an event named "content_block_stop" carries data of type "content_block_start"`},
		{name: "error event is the server's error", stream: ev("message_start", msgStart) + ev("content_block_start", textStart) +
			ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			class: measure.ClassProtocol, msg: `server error event: Overloaded (type "overloaded_error"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := scripted(t, []string{tc.stream}, nil)
			res := stream(t, newClient(t, srv.URL), 16)
			if tc.class == "" {
				if res.Err != nil {
					t.Fatalf("want success, got %v", res.Err)
				}
				if !res.DoneSeen || res.SSETokenEvents == 0 {
					t.Fatalf("done %v, %d token events", res.DoneSeen, res.SSETokenEvents)
				}
				return
			}
			if res.Err == nil || res.Err.Class != tc.class || !strings.Contains(res.Err.Message, tc.msg) {
				t.Fatalf("error %v, want class %s with %q", res.Err, tc.class, tc.msg)
			}
			if tc.is != nil && !errors.Is(res.Err, tc.is) {
				t.Fatalf("error %v does not wrap %v", res.Err, tc.is)
			}
			var se *transport.StreamError
			if tc.is == nil && !errors.As(res.Err, &se) {
				t.Fatalf("error %v, want the server's *StreamError", res.Err)
			}
		})
	}
}

// Pings after the first token do not keep a stalled answer alive.
func TestPingsDoNotResetTheIdleClock(t *testing.T) {
	for _, stall := range []bool{true, false} {
		t.Run(fmt.Sprintf("stall=%v", stall), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				write := func(s string) { _, _ = w.Write([]byte(s)); w.(http.Flusher).Flush() }
				write(ev("message_start", msgStart) + ev("content_block_start", textStart))
				gap := 100 * time.Millisecond
				if stall {
					gap = 3 * time.Second
				}
				for i := range 3 {
					write(ev("content_block_delta", textDelta(fmt.Sprint(i))))
					for end := time.Now().Add(gap); time.Now().Before(end) && r.Context().Err() == nil; {
						write(ev("ping", ping))
						time.Sleep(5 * time.Millisecond)
					}
				}
				write(ev("content_block_stop", textStop) + ev("message_delta", msgDelta(3)) + ev("message_stop", msgStop))
			}))
			defer srv.Close()
			c, err := New(transport.Config{BaseURL: srv.URL, IdleTimeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			res := stream(t, c, 16)
			if !stall {
				if res.Err != nil {
					t.Fatalf("want success, got %v", res.Err)
				}
				return
			}
			if res.Err == nil || res.Err.Class != measure.ClassTimeoutIdle || res.E2EMS > 1500 {
				t.Fatalf("error %v after %vms, want timeout_idle after about 300ms", res.Err, res.E2EMS)
			}
		})
	}
}

// A whole message is judged by the same rule: no stop_reason, or a body
// cut inside its JSON, is truncated.
func TestWholeMessageMustSayItStopped(t *testing.T) {
	tests := []struct {
		name, body string
		class      measure.ErrorClass
		msg        string
	}{
		{name: "stopped", body: `{"type":"message","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`},
		{name: "no stop_reason", body: `{"type":"message","content":[{"type":"text","text":"hi"}],"stop_reason":null}`,
			class: measure.ClassTruncated, msg: "the message has no stop_reason"},
		{name: "cut", body: `{"type":"message","content":[{"type":"text","text":"h`,
			class: measure.ClassTruncated, msg: "inside its JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tc.body))
				w.(http.Flusher).Flush()
			}))
			defer srv.Close()
			res, _ := newClient(t, srv.URL).Stream(t.Context(), measure.Request{Messages: []measure.Message{{Role: "user", Content: "hi"}}, MaxTokens: 4})
			if tc.class == "" {
				if res.Err != nil {
					t.Fatalf("want success, got %v", res.Err)
				}
				return
			}
			if res.Err == nil || res.Err.Class != tc.class || !strings.Contains(res.Err.Message, tc.msg) || !errors.Is(res.Err, transport.ErrTruncated) {
				t.Fatalf("error %v, want class %s with %q", res.Err, tc.class, tc.msg)
			}
		})
	}
}
