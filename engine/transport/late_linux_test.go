//go:build linux

package transport

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport/sse"
)

// tokenWire reads the stream lateServer sends: an event whose data has
// "t": is a token, [DONE] ends it.
type tokenWire struct{ nameWire }

func (tokenWire) Header(http.Header, string) {}

func (tokenWire) Body(measure.Request, map[string]any) (string, []byte, error) {
	return "/v1/chat/completions", []byte("{}"), nil
}

func (tokenWire) NewStream(req measure.Request) Stream {
	s := &tokenStream{}
	s.tl.Reset(req.MaxTokens)
	return s
}

type tokenStream struct {
	tl   measure.Timeline
	done bool
}

func (s *tokenStream) Event(ev *sse.Event) error {
	s.tl.Events++
	switch {
	case ev.Done:
		s.done = true
	case bytes.Contains(ev.Data, []byte(`"t":`)):
		return s.tl.Token(ev.At, measure.ChannelAnswer, 1)
	}
	return nil
}

func (s *tokenStream) Timeline() *measure.Timeline { return &s.tl }
func (s *tokenStream) End(*measure.Result)         {}
func (s *tokenStream) Finished() error {
	if !s.done {
		return ErrTruncated
	}
	return nil
}

// lateServer streams a role event, then after a pause tokens tokenGap
// apart, each event written and flushed on its own (Go's TCP connections
// are TCP_NODELAY), recording when it wrote each token: just before the
// write and once it was flushed, the kernel's receive time on loopback lies
// between them. written counts the tokens flushed so far; when firstRead is
// set, the second token waits until it is closed (the client has read the
// first), so the first token's read holds it alone however late a busy
// machine wakes the reader.
type lateServer struct {
	mu        sync.Mutex
	before    []time.Time
	after     []time.Time
	firstRead chan struct{}
	written   atomic.Int32
}

const (
	lateTokens   = 40
	lateTokenGap = 2 * time.Millisecond
	latePause    = 50 * time.Millisecond
)

func (s *lateServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	f := w.(http.Flusher)
	send := func(data string) (time.Time, time.Time) {
		before := time.Now()
		fmt.Fprintf(w, "data: %s\n\n", data)
		f.Flush()
		return before, time.Now()
	}
	s.mu.Lock()
	firstRead := s.firstRead
	s.mu.Unlock()
	s.written.Store(0)
	send(`{"role":"assistant"}`)
	time.Sleep(20 * time.Millisecond)
	var before, after []time.Time
	for i := range lateTokens {
		b, a := send(fmt.Sprintf(`{"t":%d}`, i))
		before, after = append(before, b), append(after, a)
		s.written.Add(1)
		if i == 0 && firstRead != nil {
			select {
			case <-firstRead:
			case <-time.After(10 * time.Second):
			case <-r.Context().Done():
			}
		}
		time.Sleep(lateTokenGap)
	}
	send("[DONE]")
	s.mu.Lock()
	s.before, s.after = before, after
	s.mu.Unlock()
}

// untilWritten waits (at most 10 s) until the server has flushed n tokens.
func (s *lateServer) untilWritten(n int32) {
	for deadline := time.Now().Add(10 * time.Second); s.written.Load() < n && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}

// The client reads late: lateRead sleeps latePause on the read that
// carries the marker, after recvmsg returned and before the read is timed.
// Late at the first token, the kernel clock still times it when it
// arrived (within 1 ms of the server's write; the read clock is late by
// the pause), and the tokens that queued meanwhile come in one read: they
// are counted as coalesced. Late before it (at the role event), the kernel
// merges the queued segments into one receive time, the newest, so no
// read recovers the first token's own; the request says so in its count.
func TestLateReaderClock(t *testing.T) {
	srv := &lateServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	for _, tc := range []struct {
		name      string
		marker    string
		userspace bool
		ttftExact bool // the kernel's receive time of the first token
		ttftShare bool // its read held later tokens too
		// holdSecond: the server writes the second token only once the
		// client has read the first; queuedBy: the pause lasts until the
		// server has written this many tokens.
		holdSecond bool
		queuedBy   int32
	}{
		{name: "kernel clock, late at the first token", marker: `{"t":0}`, ttftExact: true, holdSecond: true, queuedBy: 3},
		{name: "read clock, late at the first token", marker: `{"t":0}`, userspace: true, holdSecond: true, queuedBy: 3},
		{name: "kernel clock, late before the first token", marker: `"role"`, ttftShare: true, queuedBy: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{BaseURL: ts.URL, UserspaceClock: tc.userspace, TotalTimeout: 30 * time.Second}, tokenWire{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			srv.mu.Lock()
			srv.firstRead = nil
			srv.mu.Unlock()
			// One request on time first: the kernel turns timestamping on
			// for the host lazily (a deferred static key), and until it is
			// on a read's time is the read's, not the segments'.
			if _, err := c.Stream(context.Background(), measure.Request{MaxTokens: lateTokens, Stream: true}); err != nil {
				t.Fatal(err)
			}
			var paused bool
			var firstRead chan struct{}
			c.lateRead = func(p []byte) {
				if !paused && bytes.Contains(p, []byte(tc.marker)) {
					paused = true
					if firstRead != nil {
						close(firstRead)
					}
					// The pause, and then until tokens queued behind the
					// marker (a loaded server may write them later than
					// the pause alone allows): the next read holds several.
					time.Sleep(latePause)
					srv.untilWritten(tc.queuedBy)
				}
			}
			want := measure.ArrivalKernel
			if tc.userspace {
				want = measure.ArrivalRead
			}
			var res measure.Result
			for try := 0; ; try++ {
				paused = false
				firstRead = nil
				if tc.holdSecond {
					firstRead = make(chan struct{})
				}
				srv.mu.Lock()
				srv.firstRead = firstRead
				srv.mu.Unlock()
				res, err = c.Stream(context.Background(), measure.Request{MaxTokens: lateTokens, Stream: true})
				if err != nil {
					t.Fatal(err)
				}
				if res.ArrivalClock == want || try == 20 {
					break
				}
			}
			if res.ArrivalClock != want || !paused || res.TTFTMS == nil {
				t.Fatalf("clock %q, paused %v, ttft %v; want clock %q, paused", res.ArrivalClock, paused, res.TTFTMS, want)
			}
			srv.mu.Lock()
			before, after := srv.before[0].Sub(res.Start), srv.after[0].Sub(res.Start)
			srv.mu.Unlock()
			ttft := time.Duration(*res.TTFTMS * float64(time.Millisecond))
			t.Logf("ttft %v, the server wrote the first token in [%v, %v]; %d of %d token events coalesced, ttft coalesced %v",
				ttft, before, after, res.CoalescedEvents, res.SSETokenEvents, res.TTFTCoalesced)
			if res.TTFTCoalesced != tc.ttftShare {
				t.Errorf("ttft coalesced %v, want %v", res.TTFTCoalesced, tc.ttftShare)
			}
			switch {
			case tc.ttftExact:
				if ttft < before-time.Millisecond || ttft > after+time.Millisecond {
					t.Errorf("ttft %v, want within 1 ms of the server's write in [%v, %v]", ttft, before, after)
				}
			case tc.userspace:
				if ttft < before+latePause-time.Millisecond {
					t.Errorf("ttft %v on the read clock, want the pause in it: at least %v", ttft, before+latePause)
				}
			}
			// Tokens queued through the pause: one read held several.
			if res.CoalescedEvents == 0 || res.CoalescedEvents >= res.SSETokenEvents {
				t.Errorf("%d of %d token events coalesced, want some and fewer than all", res.CoalescedEvents, res.SSETokenEvents)
			}
		})
	}
}
