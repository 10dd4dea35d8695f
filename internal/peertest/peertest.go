// Package peertest serves any handler with the connection habits of real
// servers that tests must survive: keep-alive advertised and the connection
// closed anyway (llama.cpp's llama-server), closed after N requests, closed
// after an idle time.
package peertest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Policy is how the server treats its connections.
type Policy struct {
	// KeepAlive is the Keep-Alive header sent with every response
	// (e.g. "timeout=5, max=100"); empty sends none.
	KeepAlive string
	// ConnectionClose answers "Connection: close" (and the server closes the
	// connection after the response, as HTTP says).
	ConnectionClose bool
	// CloseAfterEach closes a connection when the next request arrives on
	// it, without answering: the client learns only by sending, as with
	// llama-server.
	CloseAfterEach bool
	// MaxRequests > 0 closes a connection when request MaxRequests+1
	// arrives on it, without answering.
	MaxRequests int
	// IdleClose > 0 closes a connection idle that long after a response.
	IdleClose time.Duration
}

// Server is a running httptest server with a Policy.
type Server struct {
	*httptest.Server
	conns     atomic.Int64 // connections accepted
	dropped   atomic.Int64 // requests that arrived on a connection and were dropped unanswered
	idleCuts  atomic.Int64 // connections the server closed for idleness
	peerFirst atomic.Int64 // connections the client closed while idle, before the server did
}

// Conns is the number of connections accepted so far.
func (s *Server) Conns() int64 { return s.conns.Load() }

// Dropped is the number of requests dropped unanswered on a closing connection.
func (s *Server) Dropped() int64 { return s.dropped.Load() }

// IdleCuts is the number of connections the server closed for idleness.
func (s *Server) IdleCuts() int64 { return s.idleCuts.Load() }

// ClientClosedIdle is the number of idle connections the client closed
// before the server's idle timer fired.
func (s *Server) ClientClosedIdle() int64 { return s.peerFirst.Load() }

type connKey struct{}

// Start serves h under p; the server closes when the test ends.
func Start(h http.Handler, p Policy) *Server {
	s := &Server{}
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.KeepAlive != "" {
			w.Header().Set("Keep-Alive", p.KeepAlive)
		}
		if p.ConnectionClose {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
		if c, ok := r.Context().Value(connKey{}).(*conn); ok {
			c.served()
		}
	}))
	hs.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	hs.Listener = &listener{Listener: hs.Listener, s: s, p: p}
	hs.Start()
	s.Server = hs
	return s
}

type listener struct {
	net.Listener
	s *Server
	p Policy
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.s.conns.Add(1)
	return &conn{Conn: c, s: l.s, p: l.p}, nil
}

// conn applies the policy: it knows how many responses it has finished and
// drops the next request when the policy says the connection is done.
type conn struct {
	net.Conn
	s *Server
	p Policy

	mu       sync.Mutex
	answered int
	closing  bool // the next request is dropped
	idle     *time.Timer
	closed   bool
}

func (c *conn) served() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answered++
	if c.p.CloseAfterEach || (c.p.MaxRequests > 0 && c.answered >= c.p.MaxRequests) {
		c.closing = true
	}
	if c.p.IdleClose > 0 {
		c.idle = time.AfterFunc(c.p.IdleClose, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if !c.closed {
				c.closed = true
				c.s.idleCuts.Add(1)
				_ = c.Conn.Close()
			}
		})
	}
}

func (c *conn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	if n == 0 && errors.Is(err, io.EOF) && c.idle != nil && !c.closed && c.answered > 0 {
		// The client hung up on an idle connection before our timer.
		if c.idle.Stop() {
			c.s.peerFirst.Add(1)
		}
		c.closed = true
	}
	if n > 0 {
		if c.idle != nil {
			c.idle.Stop()
			c.idle = nil
		}
		if c.closing {
			c.s.dropped.Add(1)
			c.closed = true
			_ = c.Conn.Close()
			return 0, net.ErrClosed
		}
	}
	return n, err
}

// Header is a convenience for policies: "timeout=T, max=M".
func Header(timeoutS, maxRequests int) string {
	return "timeout=" + strconv.Itoa(timeoutS) + ", max=" + strconv.Itoa(maxRequests)
}

// Refused is the URL of a loopback port where nothing listens: a
// connection to it is refused. It panics when no port can be had.
func Refused() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	url := "http://" + ln.Addr().String()
	_ = ln.Close()
	return url
}
