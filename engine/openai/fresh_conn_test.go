package openai

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// dropNth is a listener whose n-th connection closes unanswered when its
// first request's bytes arrive: the server never acts on that request.
// Other connections are served normally.
type dropNth struct {
	net.Listener
	n        int64
	accepted atomic.Int64
	dropped  atomic.Int64
}

func (l *dropNth) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if l.accepted.Add(1) == l.n {
		return &dropOnData{Conn: c, dropped: &l.dropped}, nil
	}
	return c, nil
}

type dropOnData struct {
	net.Conn
	dropped *atomic.Int64
}

func (c *dropOnData) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.dropped.Add(1)
		_ = c.Conn.Close()
		return 0, net.ErrClosed
	}
	return n, err
}

func startDropNth(t *testing.T, n int64, h http.Handler) (*httptest.Server, *dropNth) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	l := &dropNth{Listener: srv.Listener, n: n}
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, l
}

// parkHandler holds the first request until release, answers the second
// with "Connection: close" and the rest at once.
type parkHandler struct {
	next             http.Handler
	n                atomic.Int64
	entered, release chan struct{}
}

func newParkHandler() *parkHandler {
	return &parkHandler{next: &paced{tokens: 2}, entered: make(chan struct{}), release: make(chan struct{})}
}

func (h *parkHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch h.n.Add(1) {
	case 1:
		close(h.entered)
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		}
	case 2:
		w.Header().Set("Connection", "close")
	}
	h.next.ServeHTTP(w, r)
}

// within waits for ch, at most 10 s (a bound against a hang, not a
// measurement).
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10 s", what)
		panic("unreachable")
	}
}

// parkConnection leaves in c's pool one connection that never carried a
// request, the way a client's connect storm does, in steps that do not
// depend on timing: request A is held at the server; request B, finding
// no idle connection, dials, and its dial is held; A's connection, freed,
// serves B (Go hands a freed connection to a waiting request); B's answer
// says "Connection: close", so that connection is gone; then B's own dial
// goes on and Go parks its connection, the server's second, unused.
func parkConnection(t *testing.T, c *Client, h *parkHandler) {
	t.Helper()
	a := make(chan error, 1)
	go func() { _, err := c.Stream(t.Context(), chatReq(1)); a <- err }()
	within(t, h.entered, "first request at the server")

	dialing, dial := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
		ConnectStart: func(string, string) {
			once.Do(func() {
				close(dialing)
				select {
				case <-dial:
				case <-time.After(10 * time.Second):
				}
			})
		},
	})
	b := make(chan error, 1)
	go func() { _, err := c.Stream(ctx, chatReq(1)); b <- err }()
	within(t, dialing, "dial for the second request")
	close(h.release)
	if err := within(t, a, "answer to the first request"); err != nil {
		t.Fatalf("first request: %v", err)
	}
	if err := within(t, b, "answer to the second request"); err != nil {
		t.Fatalf("second request: %v", err)
	}
	close(dial)
}

// sendOnParked sends a request that can only get the parked connection:
// its own dial, if it makes one, waits until it has a connection.
func sendOnParked(t *testing.T, c *Client) (Result, httptrace.GotConnInfo, error) {
	t.Helper()
	got := make(chan struct{})
	var first httptrace.GotConnInfo
	var gotOnce, dialOnce sync.Once
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
		ConnectStart: func(string, string) {
			dialOnce.Do(func() {
				select {
				case <-got:
				case <-time.After(10 * time.Second):
				}
			})
		},
		GotConn: func(info httptrace.GotConnInfo) {
			gotOnce.Do(func() { first = info; close(got) })
		},
	})
	res, err := c.Stream(ctx, chatReq(2))
	return res, first, err
}

// stdHTTP sends through net/http's transport: only it dials ahead of
// demand and parks a connection unused (engine/transport's own HTTP/1.1
// reader dials for the request that needs one and pools a connection only
// after a response), so only there can the cases below happen.
func stdHTTP(c *Config) { c.StdHTTP = true }

// A pooled connection that never carried a request and that the server
// closes without answering (its first-request timeout racing the client's
// send) is retried like a stale one, and counted.
func TestUnusedPooledConnectionClosedIsRetried(t *testing.T) {
	h := newParkHandler()
	srv, l := startDropNth(t, 2, h)
	c := newClient(t, srv.URL, stdHTTP)
	parkConnection(t, c, h)
	res, info, err := sendOnParked(t, c)
	if !info.Reused {
		t.Fatalf("the request did not get the parked connection: %+v", info)
	}
	if err != nil {
		t.Fatalf("request on the closed parked connection: %v", err)
	}
	if res.StaleConnectionRetries != 1 || l.dropped.Load() != 1 {
		t.Fatalf("stale retries %d, dropped %d; want 1 and 1", res.StaleConnectionRetries, l.dropped.Load())
	}
}

// With the retry off, the same failure is a stale_connection error that
// says what the connection was.
func TestUnusedPooledConnectionClosedWithoutRetry(t *testing.T) {
	h := newParkHandler()
	srv, l := startDropNth(t, 2, h)
	c := newClient(t, srv.URL, func(c *Config) { stdHTTP(c); c.NoStaleRetry = true })
	parkConnection(t, c, h)
	res, info, err := sendOnParked(t, c)
	if !info.Reused {
		t.Fatalf("the request did not get the parked connection: %+v", info)
	}
	var oe *Error
	if !errors.As(err, &oe) || oe.Class != ClassStaleConnection || !errors.Is(err, ErrStaleConnection) {
		t.Fatalf("error %v, want class %s", err, ClassStaleConnection)
	}
	if want := "never carried a request"; !strings.Contains(oe.Message, want) || res.StaleConnectionRetries != 0 || l.dropped.Load() != 1 {
		t.Errorf("message %q (want %q), retries %d, dropped %d", oe.Message, want, res.StaleConnectionRetries, l.dropped.Load())
	}
}

// A connection dialled for the request, which the server took and then
// closed before any response byte, is not resent (the server had the
// request and may have acted on it): a reset that names the cause.
func TestDialledConnectionClosedBeforeResponseIsAReset(t *testing.T) {
	srv, l := startDropNth(t, 1, &paced{tokens: 2})
	c := newClient(t, srv.URL, nil)
	res, err := c.Stream(t.Context(), chatReq(2))
	var oe *Error
	if !errors.As(err, &oe) || oe.Class != ClassReset {
		t.Fatalf("error %v, want class reset", err)
	}
	if res.StaleConnectionRetries != 0 || l.accepted.Load() != 1 {
		t.Errorf("stale retries %d, connections %d; want 0 and 1", res.StaleConnectionRetries, l.accepted.Load())
	}
	if want := "the server closed the connection before any response byte"; !strings.Contains(oe.Message, want) {
		t.Errorf("message %q lacks %q", oe.Message, want)
	}
}

// A stream the server cuts after its first event names a mid-response close.
func TestMidResponseCloseNamesTheCause(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, nil)
	_, err := c.Stream(t.Context(), chatReq(4))
	var oe *Error
	if !errors.As(err, &oe) || oe.Class != ClassReset {
		t.Fatalf("error %v, want class reset", err)
	}
	if want := "read stream"; !strings.HasPrefix(oe.Message, want) || !strings.Contains(oe.Message, "the server closed the connection mid-response") {
		t.Errorf("message %q: want %q and a mid-response close", oe.Message, want)
	}
}

// A refused connect says whether anything listened there: a server that
// accepted this client's connections before and refuses now is overloaded
// or gone, not a wrong address.
func TestConnectionRefusedNamesTheCause(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	c := newClient(t, "http://"+addr, nil)
	_, err = c.Stream(t.Context(), chatReq(1))
	var oe *Error
	if !errors.As(err, &oe) || oe.Class != ClassConnect || !strings.Contains(oe.Message, "nothing is listening at that address") {
		t.Fatalf("never connected: error %v", err)
	}

	srv := httptest.NewServer(&paced{tokens: 1})
	c = newClient(t, srv.URL, func(c *Config) { c.NoStaleRetry = true })
	if _, err := c.Stream(t.Context(), chatReq(1)); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	c.Close()
	_, err = c.Stream(t.Context(), chatReq(1))
	if !errors.As(err, &oe) || oe.Class != ClassConnect || !strings.Contains(oe.Message, "its listen backlog overflowed or it stopped listening") {
		t.Fatalf("connected before: error %v", err)
	}
}
