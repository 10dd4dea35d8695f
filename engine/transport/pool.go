package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Servers such as llama.cpp's llama-server advertise "Keep-Alive: timeout=5,
// max=100" and then close the connection anyway; Go's pool hands the dead
// connection to the next POST and does not retry it (POST is not
// idempotent). Nor does Go retry on a connection it dialled for the
// request, whatever happened to it.
//
// The rule for sending a failed request again, once, on a connection of
// its own, counted in stale_connection_retries, is that the server cannot
// have acted on it; it holds when no response byte arrived and
//
//   - the server had closed the connection before the request's first byte
//     was written (its FIN or reset seen by the kernel or the read loop):
//     nothing was sent, so nothing was done, whatever the connection. A
//     client so busy connecting that it writes a new connection's first
//     request after the server's first-request timeout meets this; or
//   - the connection had sat in the pool (Go's "reused": one that carried
//     requests, or one dialled ahead of demand and parked unused): the
//     failure is then the server's idle close racing the send, the case
//     Go itself retries for idempotent requests. A server that read the
//     request in that moment and died before answering would be resent
//     to, the one case the rule cannot tell apart.
//
// A connection dialled for this very request that took the request and
// then closed is not retried: the server had it and may have acted on it
// (a crash mid-prefill, a proxy that forwarded it). That is a reset.

// ErrStaleConnection marks a request that failed before any response byte
// on a connection the server had closed unseen (the rule above).
var ErrStaleConnection = errors.New("stale connection")

// errClosedBeforeSend is what a connection's first write of a request
// returns when the server has already closed it: nothing is written.
var errClosedBeforeSend = errors.New("the server closed the connection before the request was sent")

// errClosedInHead marks a failure of a response whose head had begun when
// the server closed the connection.
var errClosedInHead = errors.New("the server closed the connection inside the response headers")

// Why a connection was stale, for messages.
const (
	staleReused = "reused keep-alive connection failed before any response byte"
	staleUnused = "pooled connection that had never carried a request failed before any response byte"
	staleClosed = "the server closed the connection before the request was sent"
)

// staleError is a stale-connection failure, with the retry's error when the
// retry on a fresh connection failed too (nil when no retry was made).
type staleError struct {
	why          string
	first, retry error
}

func (e *staleError) Error() string {
	if e.retry == nil {
		return fmt.Sprintf("%v: %s: %v", ErrStaleConnection, e.why, e.first)
	}
	return fmt.Sprintf("%v: %s (%v); retried on a fresh connection: %v", ErrStaleConnection, e.why, e.first, e.retry)
}

// Unwrap yields the retry's error when there was one (what classifies the
// request), else the sentinel and the first error.
func (e *staleError) Unwrap() []error {
	if e.retry != nil {
		return []error{e.retry}
	}
	return []error{ErrStaleConnection, e.first}
}

// staleCounterKey carries a *atomic.Int32 that counts stale-connection
// retries for one logical request.
type staleCounterKey struct{}

func withStaleCounter(ctx context.Context, n *atomic.Int32) context.Context {
	return context.WithValue(ctx, staleCounterKey{}, n)
}

// retryTransport retries a stale-connection failure once on fresh, and
// applies the server's Keep-Alive hints to pooled connections. It sends
// what h1 handles through h1 (nil: everything through net/http), the
// rest through net/http.
type retryTransport struct {
	pooled *http.Transport
	fresh  *http.Transport // keep-alives off: a connection that cannot be stale
	h1     *h1Transport
	retry  bool
}

func newRetryTransport(pooled *http.Transport, h1 *h1Transport, retry bool) *retryTransport {
	fresh := pooled.Clone()
	fresh.DisableKeepAlives = true
	fresh.MaxIdleConns, fresh.MaxIdleConnsPerHost = 0, 0
	return &retryTransport{pooled: pooled, fresh: fresh, h1: h1, retry: retry}
}

func (t *retryTransport) CloseIdleConnections() {
	t.pooled.CloseIdleConnections()
	t.fresh.CloseIdleConnections()
	if t.h1 != nil {
		t.h1.CloseIdleConnections()
	}
}

// send is one attempt of req: on a pooled connection, or on a fresh one
// closed after the response.
func (t *retryTransport) send(req *http.Request, h1, fresh bool) (*http.Response, error) {
	switch {
	case h1:
		return t.h1.roundTrip(req, fresh)
	case fresh:
		return t.fresh.RoundTrip(req)
	}
	return t.pooled.RoundTrip(req)
}

// streamTraceKey carries the trace of a request Stream sends. The retry
// transport's own trace calls its hooks, so one trace serves both: a
// second httptrace.WithClientTrace would compose the two through
// reflection (reflect.MakeFunc per request, reflect.Call per hook).
type streamTraceKey struct{}

func withStreamTrace(ctx context.Context, tr *httptrace.ClientTrace) context.Context {
	return context.WithValue(ctx, streamTraceKey{}, tr)
}

// attempt is what the retry transport's hooks record of one attempt.
type attempt struct {
	trace           httptrace.ClientTrace
	reused, gotByte atomic.Bool
	pc              atomic.Pointer[poolConn]
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	h1 := t.h1 != nil && t.h1.handles(req, t.pooled.Proxy)
	inner, _ := req.Context().Value(streamTraceKey{}).(*httptrace.ClientTrace)
	// One allocation for the attempt's trace and what its hooks record.
	a := &attempt{}
	own, reused, gotByte, pc := &a.trace, &a.reused, &a.gotByte, &a.pc
	if inner != nil {
		*own = *inner
	}
	// This transport's hooks run first, then the stream's.
	innerGotConn, innerGotByte := own.GotConn, own.GotFirstResponseByte
	own.GotConn = func(info httptrace.GotConnInfo) {
		// Go may resend on another connection itself: the last one wins.
		reused.Store(info.Reused)
		if p := poolConnOf(info.Conn); p != nil {
			p.acquired()
			pc.Store(p)
		}
		if innerGotConn != nil {
			innerGotConn(info)
		}
	}
	own.GotFirstResponseByte = func() {
		gotByte.Store(true)
		if innerGotByte != nil {
			innerGotByte()
		}
	}
	var resp *http.Response
	var err error
	if h1 && httptrace.ContextClientTrace(req.Context()) == nil {
		// The own transport takes the trace as it is: no copy of the
		// request and its context per request to carry it.
		resp, err = t.h1.roundTripTraced(req, false, own)
	} else {
		resp, err = t.send(req.WithContext(httptrace.WithClientTrace(req.Context(), own)), h1, false)
	}
	if err == nil {
		if p := pc.Load(); p != nil {
			p.responded(resp.Header)
			resp.Body = &hintBody{ReadCloser: resp.Body, conn: p}
		}
		return resp, nil
	}
	if gotByte.Load() && req.Context().Err() == nil {
		if p := pc.Load(); p != nil && p.readEnded.Load() {
			// The head began and the server closed: Go reads a line cut by
			// the close as a whole one, and calls it malformed.
			return nil, fmt.Errorf("%w: %w", errClosedInHead, err)
		}
	}
	if gotByte.Load() || req.Context().Err() != nil {
		return nil, err
	}
	var why string
	p := pc.Load()
	switch {
	case errors.Is(err, errClosedBeforeSend) || p != nil && p.closedUnsent():
		why = staleClosed
	case reused.Load() && p != nil && !p.carried():
		why = staleUnused
	case reused.Load():
		why = staleReused
	default:
		return nil, err // dialled for this request, which the server may have acted on
	}
	if !t.retry || req.GetBody == nil && req.Body != nil && req.Body != http.NoBody {
		return nil, &staleError{why: why, first: err}
	}
	r2 := req.Clone(req.Context())
	if inner != nil {
		// The stream hears the fresh connection's events too; a copy,
		// as WithClientTrace writes into the trace it is given.
		cp := *inner
		r2 = r2.WithContext(httptrace.WithClientTrace(r2.Context(), &cp))
	}
	if req.GetBody != nil {
		body, gerr := req.GetBody()
		if gerr != nil {
			return nil, &staleError{why: why, first: err}
		}
		r2.Body = body
	}
	// Counted once the resend is certain, whatever it then meets.
	if n, ok := req.Context().Value(staleCounterKey{}).(*atomic.Int32); ok {
		n.Add(1)
	}
	resp, rerr := t.send(r2, h1, true)
	if rerr != nil {
		return nil, &staleError{why: why, first: err, retry: rerr}
	}
	return resp, nil
}

// poolConn is a pooled connection that knows the server's Keep-Alive hints:
// after max responses, or once idle for close to timeout, it retires. A
// retired connection refuses to write, so a request the pool hands it meanwhile
// fails with nothing written, which Go's transport itself resends on another
// connection; at the end of its last response it is closed.
type poolConn struct {
	net.Conn
	retired atomic.Bool
	// checkSend is set when a request takes the connection: its first
	// write looks whether the server closed it meanwhile. readEnded is set
	// once a read failed (the read loop saw the server's FIN or reset).
	// unsent is set when that look refused the write.
	checkSend, readEnded, unsent atomic.Bool

	mu        sync.Mutex
	responses int
	timeout   time.Duration
	idle      *time.Timer
}

// errRetired is what a retired connection's Write returns.
var errRetired = errors.New("connection retired by the server's Keep-Alive hints")

// hintDialer wraps every connection in a poolConn and sets dialed once one
// was made.
func hintDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error), dialed *atomic.Bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		dialed.Store(true)
		return &poolConn{Conn: c}, nil
	}
}

// poolConnOf finds the poolConn under what the transport reports (a TLS
// connection wraps it).
func poolConnOf(c net.Conn) *poolConn {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = tc.NetConn()
	}
	p, _ := c.(*poolConn)
	return p
}

// tsConnOf finds the timestamping connection, if any, under c.
func tsConnOf(c net.Conn) *tsConn {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = tc.NetConn()
	}
	if p, ok := c.(*poolConn); ok {
		c = p.Conn
	}
	t, _ := c.(*tsConn)
	return t
}

func (p *poolConn) Write(b []byte) (int, error) {
	if p.retired.Load() {
		return 0, errRetired
	}
	// One look (a getsockopt) per request, before its first byte: a close
	// seen here makes the request one the server never received.
	if p.checkSend.Swap(false) && (p.readEnded.Load() || peerClosed(p.Conn)) {
		p.unsent.Store(true)
		return 0, errClosedBeforeSend
	}
	return p.Conn.Write(b)
}

func (p *poolConn) Read(b []byte) (int, error) {
	n, err := p.Conn.Read(b)
	if err != nil {
		p.readEnded.Store(true)
	}
	return n, err
}

// closedUnsent reports whether the server's close was seen before anything
// of the request that took the connection was written: the first write
// refused, or none made once the read loop saw the close. Go may report
// either as the read loop's error (EOF, "server closed idle connection").
func (p *poolConn) closedUnsent() bool {
	return p.unsent.Load() || p.checkSend.Load() && p.readEnded.Load()
}

// carried reports whether a response came on the connection: Go counts
// a connection it parked in the pool unused as reused.
func (p *poolConn) carried() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.responses > 0
}

func (p *poolConn) acquired() {
	p.unsent.Store(false)
	p.checkSend.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle != nil {
		p.idle.Stop()
	}
}

// responded applies the hints of a response whose headers just arrived,
// before the transport can hand the connection to anyone else.
func (p *poolConn) responded(h http.Header) {
	timeout, maxN := keepAliveHints(h)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.responses++
	p.timeout = timeout
	if maxN > 0 && p.responses >= maxN {
		// "max" is read as the connection's total; a server that counts
		// down the requests left only makes this retire early.
		p.retired.Store(true)
	}
}

// released runs when the response's body is done.
func (p *poolConn) released() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.retired.Load() {
		_ = p.Conn.Close()
		return
	}
	if p.timeout > 0 {
		// Retire a little before the server closes, so a request never
		// races the server's close.
		lead := min(time.Second, p.timeout/2)
		if p.idle == nil {
			// One timer for the connection's life, reset at each release.
			p.idle = time.AfterFunc(p.timeout-lead, func() {
				p.retired.Store(true)
				_ = p.Conn.Close()
			})
			return
		}
		p.idle.Reset(p.timeout - lead)
	}
}

// keepAliveHints parses "Keep-Alive: timeout=5, max=100" (RFC 2068 §19.7.1.1).
func keepAliveHints(h http.Header) (timeout time.Duration, maxN int) {
	for _, v := range h.Values("Keep-Alive") {
		for _, part := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok {
				continue
			}
			n, err := strconv.Atoi(strings.TrimSpace(val))
			if err != nil || n <= 0 {
				continue
			}
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "timeout":
				timeout = time.Duration(n) * time.Second
			case "max":
				maxN = n
			}
		}
	}
	return timeout, maxN
}

// hintBody reports the end of a response to its connection once.
type hintBody struct {
	io.ReadCloser
	conn *poolConn
	done atomic.Bool
}

func (b *hintBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && b.done.CompareAndSwap(false, true) {
		b.conn.released()
	}
	return n, err
}

// Close applies the hints first: h1Body's Close hands the connection to
// the pool, where the next request must find them applied.
func (b *hintBody) Close() error {
	if b.done.CompareAndSwap(false, true) {
		b.conn.released()
	}
	return b.ReadCloser.Close()
}
