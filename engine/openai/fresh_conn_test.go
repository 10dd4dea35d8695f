package openai

import (
	"context"
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

// dropFirst is a listener whose first connection, or those accepted while
// parking is set, close unanswered when their first request's bytes
// arrive: the server never acts on them. Other connections are served
// normally.
type dropFirst struct {
	net.Listener
	parking   atomic.Bool
	accepted  atomic.Int64
	dropped   atomic.Int64
	candidate atomic.Pointer[dropOnData]
}

func (l *dropFirst) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if n := l.accepted.Add(1); l.parking.Load() || n == 1 {
		d := &dropOnData{Conn: c, l: l}
		l.candidate.Store(d)
		return d, nil
	}
	return c, nil
}

type dropOnData struct {
	net.Conn
	l            *dropFirst
	clientClosed atomic.Bool
}

func (c *dropOnData) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.l.dropped.Add(1)
		_ = c.Conn.Close()
		return 0, net.ErrClosed
	}
	if errors.Is(err, io.EOF) {
		c.clientClosed.Store(true)
	}
	return n, err
}

func startDropFirst(t *testing.T, h http.Handler) (*httptest.Server, *dropFirst) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	l := &dropFirst{Listener: srv.Listener}
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, l
}

// parkConnection leaves one connection in the client's pool that never
// carried a request, as a client's connect storm does: the request that
// dialled it is canceled while it dials, and Go parks the connection. Go
// may hand it to the canceled request instead, which closes it: then it
// tries again.
func parkConnection(t *testing.T, c *Client, l *dropFirst) {
	t.Helper()
	l.accepted.Store(1) // only connections accepted while parking are dropped
	l.parking.Store(true)
	defer l.parking.Store(false)
	for range 20 {
		l.candidate.Store(nil)
		ctx, cancel := context.WithCancel(t.Context())
		var once sync.Once
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			ConnectStart: func(string, string) { once.Do(cancel) },
		})
		if _, err := c.Stream(ctx, chatReq(1)); err == nil {
			t.Fatal("the parking request was not canceled")
		}
		deadline := time.Now().Add(5 * time.Second)
		for l.candidate.Load() == nil && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond) // a client's close would reach the server by now
		if d := l.candidate.Load(); d != nil && !d.clientClosed.Load() {
			return
		}
	}
	t.Fatal("no connection stayed parked in 20 tries")
}

// A pooled connection that never carried a request and that the server
// closes without reading (its first-request timeout racing the client's
// send) is retried like a stale one, and counted.
func TestUnusedPooledConnectionClosedIsRetried(t *testing.T) {
	srv, l := startDropFirst(t, &paced{tokens: 2})
	c := newClient(t, srv.URL, nil)
	parkConnection(t, c, l)
	res, err := c.Stream(t.Context(), chatReq(2))
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
	srv, l := startDropFirst(t, &paced{tokens: 2})
	c := newClient(t, srv.URL, func(c *Config) { c.NoStaleRetry = true })
	parkConnection(t, c, l)
	res, err := c.Stream(t.Context(), chatReq(2))
	var oe *Error
	if !errors.As(err, &oe) || oe.Class != ClassStaleConnection || !errors.Is(err, ErrStaleConnection) {
		t.Fatalf("error %v, want class %s", err, ClassStaleConnection)
	}
	if want := "never carried a request"; !strings.Contains(oe.Message, want) || res.StaleConnectionRetries != 0 {
		t.Errorf("message %q (want %q), retries %d", oe.Message, want, res.StaleConnectionRetries)
	}
}

// closeFirst is a listener that closes its first connection as soon as it
// accepts it, before reading anything (a server whose first-request
// timeout fired while the client was busy connecting), and tells closed.
type closeFirst struct {
	net.Listener
	accepted atomic.Int64
	closed   chan struct{}
}

func (l *closeFirst) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.accepted.Add(1) > 1 {
			return c, nil
		}
		_ = c.Close()
		close(l.closed)
	}
}

// A connection the server closed before the client wrote its request (the
// client dialled it, then was too slow to write) is retried, counted: the
// server never had the request. The client's lateness is a trace hook that
// holds the dial until the server has closed.
func TestConnectionClosedBeforeSendIsRetried(t *testing.T) {
	for _, retry := range []bool{true, false} {
		t.Run(map[bool]string{true: "retried", false: "retry off"}[retry], func(t *testing.T) {
			srv := httptest.NewUnstartedServer(&paced{tokens: 2})
			l := &closeFirst{Listener: srv.Listener, closed: make(chan struct{})}
			srv.Listener = l
			srv.Start()
			defer srv.Close()
			c := newClient(t, srv.URL, func(c *Config) { c.NoStaleRetry = !retry })
			var once sync.Once
			ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
				ConnectDone: func(string, string, error) {
					once.Do(func() {
						select {
						case <-l.closed:
						case <-time.After(5 * time.Second):
						}
						// The FIN crosses loopback within the close itself;
						// this leaves it ample time to arrive.
						time.Sleep(50 * time.Millisecond)
					})
				},
			})
			res, err := c.Stream(ctx, chatReq(2))
			if retry {
				if err != nil || res.StaleConnectionRetries != 1 || l.accepted.Load() != 2 {
					t.Fatalf("err %v, stale retries %d, connections %d; want success, 1, 2", err, res.StaleConnectionRetries, l.accepted.Load())
				}
				return
			}
			var oe *Error
			if !errors.As(err, &oe) || oe.Class != ClassStaleConnection || !strings.Contains(oe.Message, "before the request was sent") {
				t.Fatalf("error %v, want a stale_connection closed before the request was sent", err)
			}
		})
	}
}

// A connection dialled for the request, which the server took and then
// closed before any response byte, is not resent (the server had the
// request and may have acted on it): a reset that names the cause.
func TestDialledConnectionClosedBeforeResponseIsAReset(t *testing.T) {
	srv, l := startDropFirst(t, &paced{tokens: 2})
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
