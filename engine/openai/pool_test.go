package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/peertest"
)

// TestStaleConnections drives the client through servers that break
// keep-alive the ways real ones do, streamed and not, in sequence and
// concurrently: no request may fail, and every resend is counted.
func TestStaleConnections(t *testing.T) {
	tests := []struct {
		name   string
		policy peertest.Policy
		// wantRetries: every request after the first on each connection
		// finds it dead (llama-server); none when the hints are honoured.
		wantRetries bool
	}{
		{name: "llama-server: keep-alive advertised, closed after every response",
			policy: peertest.Policy{KeepAlive: peertest.Header(5, 100), CloseAfterEach: true}, wantRetries: true},
		{name: "closed after every response, no Keep-Alive header",
			policy: peertest.Policy{CloseAfterEach: true}, wantRetries: true},
		{name: "closed after 3 requests, max=3 honoured",
			policy: peertest.Policy{KeepAlive: peertest.Header(5, 3), MaxRequests: 3}},
		{name: "Connection: close honoured",
			policy: peertest.Policy{ConnectionClose: true, CloseAfterEach: true}},
		{name: "closed after 3 requests, not advertised",
			policy: peertest.Policy{MaxRequests: 3}, wantRetries: true},
	}
	for _, tt := range tests {
		for _, stream := range []bool{true, false} {
			name := tt.name + map[bool]string{true: " (stream)", false: " (non-stream)"}[stream]
			t.Run(name, func(t *testing.T) {
				srv := peertest.Start(jsonOrSSE(3), tt.policy)
				defer srv.Close()
				c := newClient(t, srv.URL, func(c *Config) { c.TotalTimeout = time.Minute })
				const sequential, parallel = 8, 4
				retries := 0
				send := func() Result {
					req := chatReq(3)
					req.Stream = stream
					res, err := c.Stream(t.Context(), req)
					if err != nil {
						t.Errorf("request failed: %v", err)
					}
					return res
				}
				for range sequential {
					retries += send().StaleConnectionRetries
				}
				var mu sync.Mutex
				var wg sync.WaitGroup
				for range parallel {
					wg.Go(func() {
						for range sequential {
							n := send().StaleConnectionRetries
							mu.Lock()
							retries += n
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				if int64(retries) != srv.Dropped() {
					t.Errorf("%d stale retries counted, the server dropped %d requests unanswered", retries, srv.Dropped())
				}
				if tt.wantRetries && retries == 0 {
					t.Error("no stale retries: the server's behaviour was not reproduced")
				}
				if !tt.wantRetries && retries != 0 {
					t.Errorf("%d stale retries although the server said when it would close", retries)
				}
			})
		}
	}
}

// jsonOrSSE answers as asked: a stream of n tokens, or one JSON body.
func jsonOrSSE(n int) http.Handler {
	stream := &paced{tokens: n}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Stream bool `json:"stream"`
		}
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &body)
		if body.Stream {
			r.Body = io.NopCloser(bytes.NewReader(data))
			stream.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"message":{"content":"ok"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":%d}}`, n)
	})
}

// TestStaleConnectionWithoutRetry classifies the failure as what it is.
func TestStaleConnectionWithoutRetry(t *testing.T) {
	srv := peertest.Start(&paced{tokens: 2}, peertest.Policy{KeepAlive: peertest.Header(5, 100), CloseAfterEach: true})
	defer srv.Close()
	c := newClient(t, srv.URL, func(c *Config) { c.NoStaleRetry = true })
	if _, err := c.Stream(t.Context(), chatReq(2)); err != nil {
		t.Fatalf("first request: %v", err)
	}
	res, err := c.Stream(t.Context(), chatReq(2))
	var oe *Error
	if !errors.As(err, &oe) || oe.Class != ClassStaleConnection {
		t.Fatalf("error %v, want class %s", err, ClassStaleConnection)
	}
	if !errors.Is(err, ErrStaleConnection) || res.StaleConnectionRetries != 0 {
		t.Errorf("errors.Is(ErrStaleConnection) = %v, retries %d", errors.Is(err, ErrStaleConnection), res.StaleConnectionRetries)
	}
}

// TestStaleRetryFailsTooIsClassifiedByTheRetry: when the fresh connection
// fails as well, the class is the fresh attempt's, and the message says a
// retry was made (not "connect").
func TestStaleRetryFailsTooIsClassifiedByTheRetry(t *testing.T) {
	var mu sync.Mutex
	n := 0
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first {
			(&paced{tokens: 1}).ServeHTTP(w, r)
			return
		}
		panic(http.ErrAbortHandler) // reset every later request
	})
	srv := peertest.Start(h, peertest.Policy{CloseAfterEach: true})
	defer srv.Close()
	c := newClient(t, srv.URL, nil)
	if _, err := c.Stream(t.Context(), chatReq(1)); err != nil {
		t.Fatal(err)
	}
	res, err := c.Stream(t.Context(), chatReq(1))
	var oe *Error
	if !errors.As(err, &oe) || oe.Class != ClassReset {
		t.Fatalf("error %v, want class reset", err)
	}
	if res.StaleConnectionRetries != 1 {
		t.Errorf("stale retries %d, want 1", res.StaleConnectionRetries)
	}
	if want := "after a stale-connection retry"; !strings.Contains(oe.Message, want) {
		t.Errorf("message %q lacks %q", oe.Message, want)
	}
}

// TestKeepAliveTimeoutHonoured: with "timeout=1" the client closes the idle
// connection itself before the server's one-second cut, so the next request
// dials afresh instead of racing the server's close.
func TestKeepAliveTimeoutHonoured(t *testing.T) {
	srv := peertest.Start(&paced{tokens: 1}, peertest.Policy{KeepAlive: peertest.Header(1, 100), IdleClose: time.Second})
	defer srv.Close()
	c := newClient(t, srv.URL, nil)
	if _, err := c.Stream(t.Context(), chatReq(1)); err != nil {
		t.Fatal(err)
	}
	// The client closes at timeout − min(1 s, timeout/2) = 0.5 s, the
	// server at 1 s: wait for whichever closes first, not for a fixed
	// time, which a busy machine could make the client's timer miss (both
	// timers are in this process, so a stall delays both).
	deadline := time.Now().Add(10 * time.Second)
	for srv.ClientClosedIdle() == 0 && srv.IdleCuts() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if srv.ClientClosedIdle() != 1 || srv.IdleCuts() != 0 {
		t.Fatalf("client closed %d idle connections first, server cut %d; want 1 and 0", srv.ClientClosedIdle(), srv.IdleCuts())
	}
	res, err := c.Stream(t.Context(), chatReq(1))
	if err != nil || res.StaleConnectionRetries != 0 || srv.Conns() != 2 {
		t.Fatalf("second request: err %v, stale retries %d, connections %d; want a fresh dial", err, res.StaleConnectionRetries, srv.Conns())
	}
}
