package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"
)

// h1Transport sends the requests Stream makes over plain HTTP/1.1 (no
// TLS, no proxy, a POST of a known-length body) without net/http's
// transport: the request in one Write, the head parsed by hand in one
// pooled buffer, the body's framing decoded in the caller's buffer, and
// no goroutine of its own per connection. net/http keeps a read and a
// write goroutine and a bufio.Reader/Writer pair per connection: some 40
// KB per open stream and 15–25 % more CPU per token event
// (bench/h1proto). retryTransport picks it per request (handles), so the
// stale-connection rule, the retry and the Keep-Alive hints stay in one
// place, and everything else (TLS, proxies, metadata, /metrics, token
// counts) stays on net/http.
//
// It calls the request's httptrace hooks itself, as net/http does
// (GetConn, GotConn with Reused, WroteHeaders, WroteRequest,
// GotFirstResponseByte, Got1xxResponse; the dialer calls ConnectStart and
// ConnectDone), so Stream's bookkeeping is the same on either.
type h1Transport struct {
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle     int
	idleTimeout time.Duration

	mu   sync.Mutex
	idle []*h1Conn // most recently used last

	// writeBufs are request buffers (*[]byte) between requests. One goes
	// back as soon as its request is written, not when the answer comes,
	// so the pool holds about as many as writes run at once, never one per
	// request waiting for its answer.
	writeBufs sync.Pool
}

// maxPooledWriteBytes bounds a request buffer kept for the next request:
// a prompt of a few thousand tokens; a larger one is allocated each time.
const maxPooledWriteBytes = 64 << 10

// writeBuf is a request buffer from the pool, or a new one.
func (t *h1Transport) writeBuf() *[]byte {
	if p, ok := t.writeBufs.Get().(*[]byte); ok {
		return p
	}
	return new([]byte)
}

// putWriteBuf gives p back once its bytes are written.
func (t *h1Transport) putWriteBuf(p *[]byte) {
	if cap(*p) <= maxPooledWriteBytes {
		t.writeBufs.Put(p)
	}
}

// h1UserAgent is what net/http sends when the request sets none.
const h1UserAgent = "Go-http-client/1.1"

func newH1Transport(dial func(ctx context.Context, network, addr string) (net.Conn, error), maxIdle int) *h1Transport {
	return &h1Transport{dial: dial, maxIdle: maxIdle, idleTimeout: idleConnTimeout}
}

// handles reports whether req is one h1Transport sends: what Stream sends
// (its trace is in the context) over plain HTTP to a host no proxy is
// configured for, with a body of known length.
func (t *h1Transport) handles(req *http.Request, proxy func(*http.Request) (*url.URL, error)) bool {
	if req.URL.Scheme != "http" || req.Method != http.MethodPost || req.ContentLength <= 0 ||
		req.GetBody == nil || req.Close || req.Context().Value(streamTraceKey{}) == nil {
		return false
	}
	if proxy != nil {
		if u, err := proxy(req); err != nil || u != nil {
			return false
		}
	}
	return true
}

// nothingWritten is a failure to send on a connection before any byte of
// the request went out: on a pooled connection it is sent again on
// another, as net/http does (the server cannot have seen it).
type nothingWritten struct{ err error }

func (e *nothingWritten) Error() string { return e.err.Error() }
func (e *nothingWritten) Unwrap() error { return e.err }

// roundTrip sends req, on a pooled connection unless fresh (then on one
// dialled for it, closed after the response: the stale-connection
// retry's).
func (t *h1Transport) roundTrip(req *http.Request, fresh bool) (*http.Response, error) {
	return t.roundTripTraced(req, fresh, httptrace.ContextClientTrace(req.Context()))
}

// roundTripTraced is roundTrip calling trace's hooks, which req's context
// need not carry: conn puts it there for a dial, the one call that reads
// it from the context.
func (t *h1Transport) roundTripTraced(req *http.Request, fresh bool, trace *httptrace.ClientTrace) (*http.Response, error) {
	wbuf := t.writeBuf()
	b, err := encodeRequest(req, fresh, *wbuf)
	if err != nil {
		return nil, err
	}
	*wbuf = b
	ctx := req.Context()
	addr := hostPort(req)
	if trace != nil && trace.GetConn != nil {
		trace.GetConn(addr)
	}
	for {
		c, err := t.conn(ctx, addr, fresh, trace)
		if err != nil {
			return nil, err
		}
		c.fresh = fresh
		resp, err := c.roundTrip(req, wbuf, trace)
		if err == nil {
			return resp, nil
		}
		var nw *nothingWritten
		if c.reused && errors.As(err, &nw) && ctx.Err() == nil {
			continue
		}
		return nil, err
	}
}

// hostPort is the address to dial for req.
func hostPort(req *http.Request) string {
	if req.URL.Port() != "" {
		return req.URL.Host
	}
	return net.JoinHostPort(req.URL.Hostname(), "80")
}

// encodeRequest writes req's head and body as net/http would (Host,
// User-Agent, Content-Length, the other headers sorted by name) into dst
// (a new buffer sized to the request when dst has too little room), and
// closes its body.
func encodeRequest(req *http.Request, closeConn bool, dst []byte) ([]byte, error) {
	defer func() { _ = req.Body.Close() }()
	var keyArr [16]string // on the stack for the usual few headers
	keys := keyArr[:0]
	for k, vs := range req.Header {
		if !isToken([]byte(k)) {
			return nil, fmt.Errorf("invalid header field name %q", k)
		}
		for _, v := range vs {
			if !validHeaderValue(v) {
				return nil, fmt.Errorf("invalid header field value for %q", k)
			}
		}
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer", "Connection":
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	size := len(req.Method) + len(req.URL.RequestURI()) + len(host) + len(h1UserAgent) + 128 + int(req.ContentLength)
	for _, k := range keys {
		for _, v := range req.Header[k] {
			size += len(k) + len(v) + 4
		}
	}
	b := dst[:0]
	if cap(b) < size {
		b = make([]byte, 0, size)
	}
	b = append(b, req.Method...)
	b = append(b, ' ')
	b = append(b, req.URL.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	ua := h1UserAgent
	if v, ok := req.Header["User-Agent"]; ok {
		ua = ""
		if len(v) > 0 {
			ua = v[0]
		}
	}
	if ua != "" {
		b = append(b, "\r\nUser-Agent: "...)
		b = append(b, ua...)
	}
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, req.ContentLength, 10)
	if closeConn {
		b = append(b, "\r\nConnection: close"...)
	}
	for _, k := range keys {
		for _, v := range req.Header[k] {
			b = append(b, "\r\n"...)
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, trimOWS(v)...)
		}
	}
	b = append(b, "\r\n\r\n"...)
	head := len(b)
	b = slices.Grow(b, int(req.ContentLength))[:head+int(req.ContentLength)]
	if _, err := io.ReadFull(req.Body, b[head:]); err != nil {
		return nil, fmt.Errorf("http: ContentLength=%d with a shorter body: %w", req.ContentLength, err)
	}
	return b, nil
}

// conn is an idle connection to addr, else a new one.
func (t *h1Transport) conn(ctx context.Context, addr string, fresh bool, trace *httptrace.ClientTrace) (*h1Conn, error) {
	if !fresh {
		for {
			c := t.takeIdle(addr)
			if c == nil {
				break
			}
			if c.pc != nil && c.pc.retired.Load() {
				c.close() // the server's Keep-Alive hints retired it while idle
				continue
			}
			if unreadBytes(c.nc) > 0 {
				// The server sent bytes while it was idle, answering no
				// request: read next, they would pass for the next
				// request's response. net/http's read loop closes such a
				// connection; so does this.
				c.close()
				continue
			}
			if trace != nil && trace.GotConn != nil {
				trace.GotConn(httptrace.GotConnInfo{Conn: c.nc, Reused: true, WasIdle: true, IdleTime: time.Since(c.idleAt)})
			}
			return c, nil
		}
	}
	if trace != nil && httptrace.ContextClientTrace(ctx) == nil {
		// The dialer's hooks (connect, DNS) are the context's.
		ctx = httptrace.WithClientTrace(ctx, trace)
	}
	nc, err := t.dialFitting(ctx, addr)
	if err != nil {
		return nil, err
	}
	c := &h1Conn{t: t, nc: nc, pc: poolConnOf(nc), addr: addr}
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: nc})
	}
	return c, nil
}

// dialFitting dials addr in this goroutine when its host is an IP literal
// (literalDialer's DialTCP fits under the request's frames in its 8 KB
// stack), and on a goroutine of its own otherwise, as net/http does: a
// name's dial (net.Dialer's DialContext) is deeper and would leave the
// request's goroutine, parked in a read for as long as the stream lasts,
// with a 16 KB stack. A goroutine per dial costs a second stack per
// stream while a run's streams connect together: 8 KB each for
// DialContext.
func (t *h1Transport) dialFitting(ctx context.Context, addr string) (net.Conn, error) {
	if _, ok := literalAddr("tcp", addr); ok && dialsInline {
		return t.dial(ctx, "tcp", addr)
	}
	type dialed struct {
		nc  net.Conn
		err error
	}
	ch := make(chan dialed, 1)
	go func() {
		nc, err := t.dial(ctx, "tcp", addr)
		ch <- dialed{nc, err}
	}()
	d := <-ch
	return d.nc, d.err
}

// takeIdle takes the most recently used idle connection to addr.
func (t *h1Transport) takeIdle(addr string) *h1Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.idle) - 1; i >= 0; i-- {
		c := t.idle[i]
		if c.addr != addr {
			continue
		}
		t.idle = slices.Delete(t.idle, i, i+1)
		if !c.idleTimer.Stop() {
			// Its idle timeout fired: the timer closes it.
			continue
		}
		c.reused = true
		return c
	}
	return nil
}

// put parks c in the pool, or closes it when the pool is full.
func (t *h1Transport) put(c *h1Conn) {
	if c.pc != nil && c.pc.retired.Load() {
		c.close()
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.idle) >= t.maxIdle {
		c.close()
		return
	}
	c.idleAt = time.Now()
	if c.idleTimer == nil {
		// One timer for the connection's life, reset at each park.
		c.idleTimer = time.AfterFunc(t.idleTimeout, func() { t.expire(c) })
	} else {
		c.idleTimer.Reset(t.idleTimeout)
	}
	t.idle = append(t.idle, c)
}

// expire closes c, idle for idleTimeout.
func (t *h1Transport) expire(c *h1Conn) {
	t.mu.Lock()
	if i := slices.Index(t.idle, c); i >= 0 {
		t.idle = slices.Delete(t.idle, i, i+1)
	}
	t.mu.Unlock()
	c.close()
}

// CloseIdleConnections closes the pooled connections.
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, c := range idle {
		if c.idleTimer != nil {
			c.idleTimer.Stop()
		}
		c.close()
	}
}

// h1Conn is one connection of h1Transport. Only the request that holds it
// reads or writes it.
type h1Conn struct {
	t      *h1Transport
	nc     net.Conn  // what the dial chain returned (a poolConn over a tsConn)
	pc     *poolConn // the Keep-Alive hints' view of nc
	addr   string
	reused bool // it came from the pool
	fresh  bool // the stale-connection retry's: closed after its response

	// rest is the part of the head's read buffer after the head: body
	// bytes that came with it, read before the socket (buf is returned to
	// headBufs once they are).
	buf  *[]byte
	rest []byte

	idleAt    time.Time
	idleTimer *time.Timer
	closeOnce sync.Once
}

// close closes the connection; the context's AfterFunc may call it from
// another goroutine, so it touches nothing the reader does.
func (c *h1Conn) close() {
	c.closeOnce.Do(func() { _ = c.nc.Close() })
}

// dropBuf returns the head's buffer (the reader's goroutine only).
func (c *h1Conn) dropBuf() {
	if c.buf != nil {
		if cap(*c.buf) == headBufBytes {
			headBufs.Put(c.buf)
		}
		c.buf, c.rest = nil, nil
	}
}

// read reads the bytes left after the head first, then the socket.
func (c *h1Conn) read(p []byte) (int, error) {
	if len(c.rest) > 0 {
		n := copy(p, c.rest)
		if c.rest = c.rest[n:]; len(c.rest) == 0 {
			c.dropBuf()
		}
		return n, nil
	}
	return c.nc.Read(p)
}

// headBufBytes is the read buffer of a response head: LLM servers send a
// few hundred bytes; a longer head grows it, up to MaxResponseHeaderBytes.
// It is held while the request waits for its answer, by every open stream
// at once when a run starts them together: small, it costs little.
const headBufBytes = 512

var headBufs = sync.Pool{New: func() any { b := make([]byte, headBufBytes); return &b }}

// max1xx bounds the informational responses before the final one
// (net/http's limit).
const max1xx = 5

// roundTrip writes the request and reads the response head. A context
// that ends closes the connection, which ends a parked read or write.
// wbuf goes back to the transport's pool once it is written; a write
// that wrote nothing leaves it to the caller, which may send it again.
func (c *h1Conn) roundTrip(req *http.Request, wbuf *[]byte, trace *httptrace.ClientTrace) (*http.Response, error) {
	stop := context.AfterFunc(req.Context(), c.close)
	fail := func(err error) (*http.Response, error) {
		stop()
		c.close()
		c.dropBuf()
		return nil, err
	}
	// The head and a body of a known length go out in one write, as
	// net/http's bufio.Writer flushes them: the first byte is then.
	if trace != nil && trace.WroteHeaders != nil {
		trace.WroteHeaders()
	}
	n, err := c.nc.Write(*wbuf)
	if err == nil {
		c.t.putWriteBuf(wbuf)
	}
	if trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{Err: err})
	}
	if err != nil {
		if n == 0 {
			err = &nothingWritten{err: err}
		}
		return fail(err)
	}
	h, err := c.readHead(trace)
	if err != nil {
		return fail(err)
	}
	body := c.body(h, stop)
	resp := &http.Response{
		Status: h.statusText, StatusCode: h.status,
		Proto: h.proto, ProtoMajor: h.major, ProtoMinor: h.minor,
		Header: h.header, Body: body, ContentLength: h.contentLength,
		Close: h.close, Request: req,
	}
	if h.chunked {
		resp.TransferEncoding = []string{"chunked"}
	}
	return resp, nil
}

// body is the reader of the body h announces; stop ends the context's
// hold on the connection.
func (c *h1Conn) body(h *respHead, stop func() bool) *h1Body {
	b := &h1Body{c: c, stop: stop, close: h.close || c.fresh}
	switch {
	case h.chunked:
		b.mode = bodyChunked
	case h.readToClose:
		b.mode = bodyToClose
	default:
		b.mode, b.left = bodyLength, h.contentLength
		b.done = h.contentLength == 0
	}
	return b
}

// readHead reads the response's head (skipping informational ones), and
// keeps the bytes read after it for the body.
func (c *h1Conn) readHead(trace *httptrace.ClientTrace) (*respHead, error) {
	c.buf = headBufs.Get().(*[]byte)
	buf := *c.buf
	fill, scan, informational := 0, 0, 0
	gotByte, statusChecked := false, false
	for {
		if fill > 0 {
			// The status line is judged once whole, as net/http does: an
			// answer that is not HTTP fails without waiting for the rest.
			if !statusChecked {
				if i := indexByte(buf[:fill], '\n'); i >= 0 {
					var probe respHead
					if err := parseStatusLine(line(buf[:i+1]), &probe); err != nil {
						return nil, err
					}
					statusChecked = true
				}
			}
			end, next := headEnd(buf[:fill], scan)
			scan = next
			if end >= 0 {
				h, err := parseHead(buf[:end])
				if err != nil {
					return nil, err
				}
				if h.status < 100 || h.status > 199 {
					c.rest = buf[end:fill]
					if len(c.rest) == 0 {
						c.dropBuf()
					}
					return h, nil
				}
				if h.status == http.StatusSwitchingProtocols {
					return nil, &headError{what: "response", text: "101 Switching Protocols, to a request that asked for no upgrade"}
				}
				if informational++; informational > max1xx {
					return nil, fmt.Errorf("%w: too many 1xx informational responses", errNotHTTP)
				}
				if trace != nil && trace.Got1xxResponse != nil {
					if err := trace.Got1xxResponse(h.status, textproto.MIMEHeader(h.header)); err != nil {
						return nil, err
					}
				}
				// The final head may have come with it: look before reading.
				fill = copy(buf, buf[end:fill])
				scan, statusChecked = 0, false
				continue
			}
		}
		if fill == len(buf) {
			if len(buf) >= MaxResponseHeaderBytes {
				return nil, errHeadTooLarge
			}
			nb := make([]byte, min(2*len(buf), MaxResponseHeaderBytes))
			copy(nb, buf[:fill])
			c.dropBuf()
			buf, c.buf = nb, &nb
		}
		n, err := c.nc.Read(buf[fill:])
		if n > 0 {
			if !gotByte && trace != nil && trace.GotFirstResponseByte != nil {
				trace.GotFirstResponseByte()
			}
			gotByte = true
			fill += n
			continue
		}
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) && (fill > 0 || informational > 0) {
			// Cut inside the head: a complete line that is not HTTP says
			// more than the close.
			if i := lastIndexByte(buf[:fill], '\n'); i >= 0 {
				if _, perr := parseHead(buf[:i+1]); errors.Is(perr, errNotHTTP) {
					return nil, perr
				}
			}
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func lastIndexByte(b []byte, c byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == c {
			return i
		}
	}
	return -1
}

// How a body ends.
const (
	bodyLength  = iota // Content-Length bytes (0: none)
	bodyChunked        // chunked framing
	bodyToClose        // the connection's close
)

// h1Body reads a response's body from its connection. Read to its end and
// closed, it hands the connection back to the pool (unless the response
// or the request said close); closed before its end, it closes the
// connection.
type h1Body struct {
	c     *h1Conn
	stop  func() bool // ends the context's hold on the connection
	mode  int
	left  int64 // bodyLength: bytes still to come
	ch    chunked
	close bool // the connection ends with this response
	// done: the body ended (the last data may not have been returned
	// yet); err: the error every later Read returns; ended: the
	// connection was pooled or closed.
	done  bool
	err   error
	ended bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	for {
		if b.err != nil {
			return 0, b.err
		}
		if b.done {
			// The connection goes back at Close: after the caller timed
			// the last bytes by it, and after hintBody applied the
			// Keep-Alive hints, which the next request must find.
			return 0, io.EOF
		}
		if len(p) == 0 {
			return 0, nil
		}
		q := p
		if b.mode == bodyLength {
			q = p[:min(int64(len(p)), b.left)]
		}
		n, err := b.c.read(q)
		n, err = b.took(q, n, err)
		if b.err != nil {
			b.end(false)
		}
		if err != nil {
			return 0, err
		}
		if n > 0 {
			return n, nil
		}
		// Framing alone, or the end: read on, or say it.
	}
}

// took makes the body of q[:n], bytes read from the connection with err:
// the framing decoded in place (the body's bytes are q[:m]), the end
// noted, and an error kept for every later read (the caller then closes
// the connection: not inside readEach's read, whose Close would wait for
// it).
func (b *h1Body) took(q []byte, n int, err error) (m int, _ error) {
	switch b.mode {
	case bodyLength:
		b.left -= int64(n)
		b.done = b.left == 0
		if !b.done && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
	case bodyChunked:
		m, rest, done, derr := b.ch.decode(q[:n])
		if done && rest < n {
			b.close = true // bytes after the body (end looks at those not read yet)
		}
		n, b.done = m, done
		if derr != nil {
			err = derr
		} else if !done && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
	case bodyToClose:
		if errors.Is(err, io.EOF) {
			b.done, err = true, nil
		}
	}
	if err != nil {
		b.err = err
		if n == 0 {
			return 0, err
		}
		// The bytes before the error first; the next read says it.
	}
	return n, nil
}

// readEach hands fn the body's bytes read by read, until the body's end
// (nil) or an error, fn's included. Chunked and read-to-close bodies are
// read from the socket with readEach, where the connection has it (see
// tsConn.readEach), after the bytes that came with the head; bodies of a
// length through Read.
func (b *h1Body) readEach(bufs *sync.Pool, fn func(p []byte) error) error {
	pc := b.c.pc
	if b.mode == bodyLength || pc == nil || !pc.canReadEach() {
		return readLoop(b, bufs, fn)
	}
	var ferr error
	if q := b.c.rest; len(q) > 0 {
		// The bytes that came with the head, decoded in the head's buffer.
		b.c.rest = nil
		if n, _ := b.took(q, len(q), nil); n > 0 {
			ferr = fn(q[:n])
		}
		b.c.dropBuf()
	}
	if ferr == nil && b.err == nil && !b.done {
		err := pc.readEach(bufs, func(p []byte) bool {
			n, _ := b.took(p, len(p), nil)
			if n > 0 {
				if ferr = fn(p[:n]); ferr != nil {
					return false
				}
			}
			return !b.done && b.err == nil
		})
		if err != nil {
			_, _ = b.took(nil, 0, err)
		}
	}
	if b.err != nil {
		b.end(false)
	}
	if ferr != nil {
		return ferr
	}
	return b.err
}

// end hands the connection back (reuse) or closes it, once.
func (b *h1Body) end(reuse bool) {
	if b.ended {
		return
	}
	b.ended = true
	// Bytes past the body's end, unasked for: the connection is not in a
	// state to reuse.
	unread := len(b.c.rest) > 0
	b.c.dropBuf()
	// stop is false when the context ended: its close ran, or runs.
	if !b.stop() || !reuse || unread || b.close || b.mode == bodyToClose {
		b.c.close()
		return
	}
	b.c.t.put(b.c)
}

func (b *h1Body) Close() error {
	b.end(b.done && b.err == nil)
	if b.err == nil {
		b.err = errBodyClosed
	}
	return nil
}

var errBodyClosed = errors.New("http: read on closed response body")
