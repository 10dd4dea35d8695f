package seam

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// node is an httptest route node: it answers one-token completions,
// echoes the session header (or not), and counts the connections that
// carried transfers as the server saw them.
type node struct {
	srv *httptest.Server
	// echo decides whether the n-th completion (from 1) echoes the session.
	echo func(n int) bool

	mu        sync.Mutex
	remotes   map[string]bool // remote addresses of completion requests
	sessions  []string        // the session header of each completion
	completes atomic.Int64
	open      atomic.Int64 // connections open on the server
}

func newNode(t *testing.T, echo func(int) bool) *node {
	t.Helper()
	n := &node{echo: echo, remotes: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "{}") })
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"data":[{"id":"node-model"}]}`)
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		k := int(n.completes.Add(1))
		n.mu.Lock()
		n.remotes[r.RemoteAddr] = true
		n.sessions = append(n.sessions, r.Header.Get("X-Meshnet-Session"))
		n.mu.Unlock()
		if n.echo(k) {
			w.Header().Set("X-Meshnet-Session", r.Header.Get("X-Meshnet-Session"))
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\" t%d\"}]}\n\ndata: [DONE]\n\n", k)
	})
	n.srv = httptest.NewUnstartedServer(mux)
	n.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			n.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			n.open.Add(-1)
		}
	}
	n.srv.Start()
	t.Cleanup(n.srv.Close)
	return n
}

func always(int) bool { return true }

// liveScenario is route-session-live.yaml pointed at url.
func liveScenario(t *testing.T, url string, sets ...string) *scenarios.Scenario {
	t.Helper()
	sets = append([]string{"vars.base_url=" + url}, sets...)
	sc, err := scenarios.Load("../../examples/route-session-live.yaml", scenarios.Options{Sets: sets})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func capture(t *testing.T, run *scenarios.Run) *report.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := Capture(ctx, run, LiveOptions{Samples: true})
	if err != nil {
		t.Fatalf("%s: %v", run.Name, err)
	}
	return r
}

func samplesOf(r *report.Run) []report.SeamSample {
	var out []report.SeamSample
	for _, name := range r.PhaseOrder {
		out = append(out, r.Phases[name].Samples.([]report.SeamSample)...)
	}
	return out
}

// Connections are counted on both ends: what the client's dialer counted
// is what the server saw, one per seam cached and one per transfer
// stateless, direct and through the relay, and none is open afterwards.
func TestLiveConnectionOwnership(t *testing.T) {
	for _, tc := range []struct {
		name, run string
		conns     int
	}{
		{name: "direct cached: one connection for the session", run: "direct/cached", conns: 1},
		{name: "direct stateless: one connection per transfer", run: "direct/stateless", conns: 17},
		{name: "relay cached: one connection for the session", run: "relay/cached", conns: 1},
		{name: "relay stateless: one connection per transfer", run: "relay/stateless", conns: 17},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t, always)
			sc := liveScenario(t, n.srv.URL)
			var run *scenarios.Run
			for _, r := range sc.Runs {
				if r.Name == tc.run {
					run = r
				}
			}
			r := capture(t, run)
			ss := samplesOf(r)
			if len(ss) != 17 || int(n.completes.Load()) != 17 {
				t.Fatalf("%d samples, %d requests served; want 17 (prefill + 16 decode)", len(ss), n.completes.Load())
			}
			if r.Connections.Attempts != tc.conns || len(n.remotes) != tc.conns {
				t.Errorf("client dialled %d, server saw %d connections; want %d", r.Connections.Attempts, len(n.remotes), tc.conns)
			}
			attempted := 0
			for _, s := range ss {
				if s.ConnectionAttempted {
					attempted++
				}
				if s.SessionID != "benchmark-route-session" || s.Source != report.SourceLive || s.HTTPStatus != 200 {
					t.Errorf("sample %+v", s)
				}
				if s.WireBytes != s.RequestBytes+s.ResponseBytes || s.PayloadBytes <= 0 || s.WireBytes <= s.PayloadBytes {
					t.Errorf("%s: payload %d wire %d (request %d response %d)", s.ActivationID, s.PayloadBytes, s.WireBytes, s.RequestBytes, s.ResponseBytes)
				}
			}
			if attempted != tc.conns {
				t.Errorf("%d samples opened a connection, want %d", attempted, tc.conns)
			}
			if *r.Cleanup != (report.Cleanup{SessionClosed: true}) {
				t.Errorf("cleanup %+v", *r.Cleanup)
			}
			if r.OutputTokens[0] != " t2" || r.OutputTokens[15] != " t17" {
				t.Errorf("output tokens %q", r.OutputTokens)
			}
			for _, s := range n.sessions {
				if s != "benchmark-route-session" {
					t.Errorf("the server got session %q", s)
				}
			}
			if run.Target.Seam.Transport == "relay" {
				rc := r.Relay
				if rc == nil || rc.Connections != tc.conns || rc.UpstreamConnections != tc.conns || rc.OpenConnections != 0 {
					t.Fatalf("relay %+v", rc)
				}
				var up, down int64
				for _, s := range ss {
					up, down = up+s.RequestBytes, down+s.ResponseBytes
				}
				if rc.BytesToUpstream != up || rc.BytesFromUpstream != down {
					t.Errorf("relay carried %d/%d bytes, the client wrote/read %d/%d", rc.BytesToUpstream, rc.BytesFromUpstream, up, down)
				}
			} else if r.Relay != nil {
				t.Errorf("a direct run has relay counters %+v", r.Relay)
			}
			// The server sees the closes too (it may take a moment).
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for n.open.Load() != 0 && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			if got := n.open.Load(); got != 0 {
				t.Errorf("%d connections still open on the server", got)
			}
		})
	}
}

// A connection the session never closes is counted after close, whatever
// the mode, and really is open until the snapshot was taken.
func TestLiveLeakIsCounted(t *testing.T) {
	for _, tc := range []struct {
		name, run string
		want      int
	}{
		{name: "cached direct leaks its connection", run: "direct/cached", want: 1},
		{name: "stateless direct leaks two", run: "direct/stateless", want: 2},
		{name: "cached relay: the client socket and its relay pair", run: "relay/cached", want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t, always)
			leak := tc.want
			if tc.run == "relay/cached" {
				leak = 1
			}
			sc := liveScenario(t, n.srv.URL, fmt.Sprintf("targets.route.faults={leak_connections: %d}", leak))
			for _, run := range sc.Runs {
				if run.Name != tc.run {
					continue
				}
				r := capture(t, run)
				if !r.Cleanup.SessionClosed || r.Cleanup.OpenConnections != tc.want {
					t.Errorf("cleanup %+v, want %d open", *r.Cleanup, tc.want)
				}
			}
		})
	}
}

// The session id of a sample is what the server echoed: a server that
// drops the header after the prefill splits the run into two sessions.
func TestLiveSessionIDIsTheEcho(t *testing.T) {
	n := newNode(t, func(k int) bool { return k == 1 })
	sc := liveScenario(t, n.srv.URL)
	r := capture(t, sc.Runs[0])
	ids := map[string]bool{}
	for _, s := range samplesOf(r) {
		ids[s.SessionID] = true
	}
	if len(ids) != 2 || !ids[""] || !ids["benchmark-route-session"] {
		t.Errorf("session ids %v", ids)
	}
	if len(r.Warnings) != 0 {
		t.Errorf("warnings %q: the header was echoed once", r.Warnings)
	}
}

func TestLiveNeverEchoedWarns(t *testing.T) {
	n := newNode(t, func(int) bool { return false })
	sc := liveScenario(t, n.srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := Capture(ctx, sc.Runs[0], LiveOptions{SessionGates: []string{"one route session per run"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "route-session-live.yaml:") ||
		!strings.Contains(r.Warnings[0], `gate "one route session per run"`) || !strings.Contains(r.Warnings[0], "X-Meshnet-Session on none of 17 transfers") {
		t.Errorf("warnings %q", r.Warnings)
	}
}

// An endpoint that refuses a transfer fails the run with a matchable error,
// and the session is still closed and measured.
func TestLiveRefusedTransfer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" {
			http.Error(w, `{"error":"no"}`, http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
	}))
	defer srv.Close()
	sc := liveScenario(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := Capture(ctx, sc.Runs[0], LiveOptions{})
	if !errors.Is(err, ErrTransfer) || !strings.Contains(err.Error(), "HTTP 400") {
		t.Fatalf("err %v", err)
	}
	if r == nil || r.Cleanup == nil || !r.Cleanup.SessionClosed || r.Cleanup.OpenConnections != 0 {
		t.Fatalf("run %+v", r)
	}
}

// The embedded simulator stands in for a route node: it echoes the session
// header, and over TLS a fresh connection costs a handshake that the
// cached session pays once.
func TestLiveEmbeddedTLS(t *testing.T) {
	sc, err := scenarios.Load("../../examples/route-session-live.yaml", scenarios.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*report.Run{}
	for _, run := range sc.Runs {
		got[run.Name] = capture(t, run)
	}
	for name, r := range got {
		if !strings.HasPrefix(r.Target.BaseURL, "https://127.0.0.1:") {
			t.Errorf("%s: base url %s", name, r.Target.BaseURL)
		}
		for _, s := range samplesOf(r) {
			if s.SessionID != "benchmark-route-session" {
				t.Fatalf("%s: session %q", name, s.SessionID)
			}
		}
	}
	if a, b := got["direct/cached"].Connections.Attempts, got["direct/stateless"].Connections.Attempts; a != 1 || b != 17 {
		t.Errorf("connections cached %d stateless %d", a, b)
	}
}

// A server that advertises keep-alive and closes the connection after every
// streamed answer anyway (llama-server does): the cached session cannot hold
// its connection, which the counts show, and a transfer that meets the dead
// connection is sent again on a fresh one, not lost.
func TestLiveServerClosingAfterEachAnswer(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		k := served.Add(1)
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		body := fmt.Sprintf("data: {\"choices\":[{\"text\":\"t%d\"}]}\n\ndata: [DONE]\n\n", k)
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nKeep-Alive: timeout=5, max=100\r\nX-Meshnet-Session: %s\r\nContent-Length: %d\r\n\r\n%s",
			r.Header.Get("X-Meshnet-Session"), len(body), body)
		_ = buf.Flush()
	}))
	defer srv.Close()
	sc := liveScenario(t, srv.URL)
	r := capture(t, sc.Runs[0]) // direct/cached
	if r.Connections.Attempts != 17 || len(r.OutputTokens) != 16 {
		t.Errorf("%d connections for 17 transfers (%d tokens); want one each", r.Connections.Attempts, len(r.OutputTokens))
	}
	if r.Connections.StaleRetries > 0 && served.Load() != 17 {
		t.Errorf("a retried transfer reached the model twice: %d served", served.Load())
	}
	if *r.Cleanup != (report.Cleanup{SessionClosed: true}) {
		t.Errorf("cleanup %+v", *r.Cleanup)
	}
}

// An interrupt mid-transfer ends the session: the error is the context's,
// and the cleanup still finds nothing open or in flight.
func TestLiveInterruptClosesTheSession(t *testing.T) {
	started := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
			return
		}
		// Read to the end, so the server notices the client going away.
		_, _ = io.Copy(io.Discard, r.Body)
		once.Do(func() { close(started) })
		select { // a transfer that does not answer
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}))
	defer srv.Close()
	sc := liveScenario(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		select {
		case <-started:
			cancel()
		case <-ctx.Done():
		}
	}()
	r, err := Capture(ctx, sc.Runs[1], LiveOptions{}) // direct/stateless
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want the context's", err)
	}
	if r == nil || *r.Cleanup != (report.Cleanup{SessionClosed: true}) {
		t.Fatalf("run %+v", r)
	}
}
