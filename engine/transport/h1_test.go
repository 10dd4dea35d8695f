package transport

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// scriptConn is a connection whose server side is a script: each Read
// returns at most piece bytes of it, then io.EOF (the server's close).
type scriptConn struct {
	data   []byte
	piece  int
	closed atomic.Bool
}

func (c *scriptConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.piece)], c.data)
	c.data = c.data[n:]
	return n, nil
}

func (c *scriptConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *scriptConn) Close() error                     { c.closed.Store(true); return nil }
func (c *scriptConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *scriptConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *scriptConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptConn) SetWriteDeadline(time.Time) error { return nil }

// h1Read is what h1Conn makes of a response: its head, and its body read
// to the end (or the error) in reads of at most piece bytes from the
// socket and into a buffer of readBytes; pooled reports whether the
// connection went back to the pool.
type h1Read struct {
	head   *respHead
	body   []byte
	err    error
	pooled bool
	left   int // bytes of the script not read
}

func readScript(raw []byte, piece, readBytes int) h1Read {
	t := newH1Transport(nil, 4)
	sc := &scriptConn{data: raw, piece: piece}
	c := &h1Conn{t: t, nc: sc, addr: "x:80"}
	h, err := c.readHead(nil)
	if err != nil {
		return h1Read{err: err}
	}
	b := c.body(h, func() bool { return true })
	var out h1Read
	out.head = h
	buf := make([]byte, readBytes)
	for {
		n, err := b.Read(buf)
		out.body = append(out.body, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			out.err = err
			break
		}
	}
	_ = b.Close()
	out.pooled = len(t.idle) == 1 && !sc.closed.Load()
	out.left = len(sc.data)
	return out
}

// readSocket is readScript over a loopback TCP connection (a tsConn,
// where the platform has one): the server writes raw in writes of piece
// bytes, a moment apart, and closes; the body is read with readEach from
// a pool of readBytes buffers.
func readSocket(t *testing.T, raw []byte, piece, readBytes int) h1Read {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		s, err := ln.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		for rest := raw; len(rest) > 0; {
			n := min(piece, len(rest))
			if _, err := s.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
			time.Sleep(20 * time.Microsecond)
		}
	}()
	nc, err := kernelTimestampDialer((&net.Dialer{}).DialContext)(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	pc := &poolConn{Conn: nc}
	tr := newH1Transport(nil, 4)
	c := &h1Conn{t: tr, nc: pc, pc: pc, addr: "x:80"}
	h, err := c.readHead(nil)
	if err != nil {
		_ = nc.Close()
		return h1Read{err: err}
	}
	b := c.body(h, func() bool { return true })
	bufs := sync.Pool{New: func() any { b := make([]byte, readBytes); return &b }}
	out := h1Read{head: h}
	out.err = b.readEach(&bufs, func(p []byte) error {
		out.body = append(out.body, p...)
		return nil
	})
	_ = b.Close()
	out.pooled = len(tr.idle) == 1
	_ = nc.Close()
	return out
}

const okHead = "HTTP/1.1 200 OK\r\n"

// What the reader makes of responses, whatever size the reads of the
// socket and of the caller are.
func TestH1Response(t *testing.T) {
	big := okHead + strings.Repeat("X-Big: "+strings.Repeat("a", 1000)+"\r\n", 1100) + "\r\n"
	tests := []struct {
		name   string
		raw    string
		status int
		body   string
		header map[string]string
		err    error // errors.Is
		pooled bool
		whole  bool // the response arrives in one read
	}{
		{name: "content-length", raw: okHead + "Content-Length: 5\r\n\r\nhello", status: 200, body: "hello", pooled: true},
		{name: "chunked", raw: okHead + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", status: 200, body: "hello world", pooled: true},
		{name: "chunk extensions", raw: okHead + "Transfer-Encoding: chunked\r\n\r\n5;a=b;c\r\nhello\r\nA ; q=\"x;y\"\r\n0123456789\r\n0;last\r\n\r\n", status: 200, body: "hello0123456789", pooled: true},
		{name: "trailers", raw: okHead + "Transfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Trailer: 1\r\nY: 2\r\n\r\n", status: 200, body: "ok", pooled: true},
		{name: "chunked wins over content-length", raw: okHead + "Content-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", status: 200, body: "ok", pooled: true},
		{name: "1xx skipped", raw: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + okHead + "Content-Length: 2\r\n\r\nok", status: 200, body: "ok", pooled: true},
		{name: "too many 1xx", raw: strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 6) + okHead + "Content-Length: 0\r\n\r\n", err: errNotHTTP},
		{name: "101 unasked", raw: "HTTP/1.1 101 Switching Protocols\r\n\r\n", err: errNotHTTP},
		{name: "oversize head", raw: big, err: errHeadTooLarge},
		{name: "bad chunk size", raw: okHead + "Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", err: errBadChunk},
		{name: "chunk size of 16 digits", raw: okHead + "Transfer-Encoding: chunked\r\n\r\n1000000000000000\r\nx", err: errBadChunk},
		{name: "chunk size line with a bare LF", raw: okHead + "Transfer-Encoding: chunked\r\n\r\n2\nok\r\n0\r\n\r\n", err: errBadChunk},
		{name: "chunk data not followed by CRLF", raw: okHead + "Transfer-Encoding: chunked\r\n\r\n2\r\nokX\r\n0\r\n\r\n", body: "ok", err: errBadChunk},
		{name: "chunk size line over the bound", raw: okHead + "Transfer-Encoding: chunked\r\n\r\n2;" + strings.Repeat("e", maxChunkLine) + "\r\nok\r\n0\r\n\r\n", err: errBadChunk},
		{name: "close mid-chunk", raw: okHead + "Transfer-Encoding: chunked\r\n\r\n5\r\nhel", body: "hel", err: io.ErrUnexpectedEOF},
		{name: "close before the last chunk", raw: okHead + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", body: "hello", err: io.ErrUnexpectedEOF},
		{name: "content-length short", raw: okHead + "Content-Length: 10\r\n\r\nhello", body: "hello", err: io.ErrUnexpectedEOF},
		{name: "read until close", raw: okHead + "Content-Type: text/event-stream\r\n\r\ndata: x\n\n", status: 200, body: "data: x\n\n"},
		{name: "HTTP/1.0 closes", raw: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", status: 200, body: "ok"},
		{name: "HTTP/1.0 keep-alive", raw: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", status: 200, body: "ok", pooled: true},
		{name: "Connection: close", raw: okHead + "Connection: Keep-Alive, close\r\nContent-Length: 2\r\n\r\nok", status: 200, body: "ok"},
		{name: "204 has no body", raw: "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", status: 204, pooled: true},
		// Only bytes that come with the body's end are seen: later ones
		// would be read as the next request's answer (net/http's read
		// loop would see them on the idle connection).
		{name: "bytes after the body in the same read", whole: true, raw: okHead + "Transfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\nHTTP/1.1 200 OK", status: 200, body: "ok"},
		{name: "bytes after a content-length body", whole: true, raw: okHead + "Content-Length: 2\r\n\r\nokHTTP/1.1", status: 200, body: "ok"},
		{name: "LF-only head lines", raw: "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", status: 200, body: "ok", pooled: true},
		{name: "headers canonical, trimmed, folded", raw: okHead + "content-type:  text/event-stream \r\nX-Long: a\r\n  b\r\nContent-Length: 0\r\n\r\n", status: 200, pooled: true,
			header: map[string]string{"Content-Type": "text/event-stream", "X-Long": "a b"}},
		{name: "not HTTP", raw: "SSH-2.0-OpenSSH_9.6\r\n\r\n", err: errNotHTTP},
		{name: "a bad status code", raw: "HTTP/1.1 2x0 OK\r\n\r\n", err: errNotHTTP},
		{name: "HTTP/2 status line", raw: "HTTP/2 200\r\n\r\n", err: errNotHTTP},
		{name: "a header line without a colon", raw: okHead + "no colon here\r\n\r\n", err: errNotHTTP},
		{name: "a header name with a space", raw: okHead + "Content Length: 2\r\n\r\nok", err: errNotHTTP},
		{name: "conflicting content lengths", raw: okHead + "Content-Length: 2\r\nContent-Length: 3\r\n\r\nok", err: errNotHTTP},
		{name: "a negative content length", raw: okHead + "Content-Length: -1\r\n\r\n", err: errNotHTTP},
		{name: "an unsupported transfer encoding", raw: okHead + "Transfer-Encoding: gzip, chunked\r\n\r\n", err: errNotHTTP},
		{name: "closed inside the head", raw: okHead + "Content-Ty", err: io.ErrUnexpectedEOF},
		{name: "closed inside the head after a bad line", raw: okHead + "bad line\r\nX", err: errNotHTTP},
		{name: "closed before any byte", raw: "", err: io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, piece := range []int{1, 3, 7, 64, 1 << 30} {
				if tt.whole && piece < len(tt.raw) {
					continue
				}
				for _, readBytes := range []int{1, 5, 4 << 10} {
					got := readScript([]byte(tt.raw), piece, readBytes)
					at := fmt.Sprintf("reads of %d, buffer %d", piece, readBytes)
					if piece == 7 && readBytes == 1 && len(tt.raw) < 4<<10 {
						// Over a loopback socket, the body through readEach.
						got = readSocket(t, []byte(tt.raw), piece, 5)
						at = "over a socket in writes of 7, readEach's buffer 5"
					} else if piece == 1<<30 && readBytes == 1 {
						got = readSocket(t, []byte(tt.raw), piece, 4<<10)
						at = "over a socket in one write, readEach's buffer 4096"
					}
					if tt.err != nil {
						if !errors.Is(got.err, tt.err) {
							t.Fatalf("%s: error %v, want %v", at, got.err, tt.err)
						}
						if string(got.body) != tt.body {
							t.Fatalf("%s: body %q before the error, want %q", at, got.body, tt.body)
						}
						continue
					}
					if got.err != nil {
						t.Fatalf("%s: %v", at, got.err)
					}
					if got.head.status != tt.status || string(got.body) != tt.body || got.pooled != tt.pooled {
						t.Fatalf("%s: status %d, body %q, pooled %v; want %d, %q, %v", at, got.head.status, got.body, got.pooled, tt.status, tt.body, tt.pooled)
					}
					for k, v := range tt.header {
						if g := got.head.header.Get(k); g != v {
							t.Fatalf("%s: header %s %q, want %q", at, k, g, v)
						}
					}
				}
			}
		})
	}
}

// FuzzH1Response feeds any bytes as a response: the reader must not panic,
// must read the same whatever the sizes of the socket's reads, and a
// chunked body it accepts must be what net/http's chunked reader reads.
func FuzzH1Response(f *testing.F) {
	for _, s := range []string{
		okHead + "Content-Length: 5\r\n\r\nhello",
		okHead + "Transfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\n" + okHead + "Transfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nuntil close",
		okHead + "Transfer-Encoding: chunked\r\n\r\nfffffffffffffff\r\n",
		"SSH-2.0\r\n\r\n",
	} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, raw []byte, piece uint8) {
		whole := readScript(raw, 1<<30, 4<<10)
		split := readScript(raw, int(piece)+1, int(piece)%7+1)
		// Bytes after the body are seen only when they come with its end
		// (TestH1Response), so reuse is compared only where none follow.
		samePool := whole.pooled == split.pooled || split.left > 0
		if (whole.err == nil) != (split.err == nil) || !bytes.Equal(whole.body, split.body) || !samePool {
			t.Fatalf("whole reads: %q, %v, pooled %v; reads of %d: %q, %v, pooled %v", whole.body, whole.err, whole.pooled, int(piece)+1, split.body, split.err, split.pooled)
		}
		if whole.err != nil || !whole.head.chunked {
			return
		}
		end, _ := headEnd(raw, 0)
		for bytes.HasPrefix(raw[end:], []byte("HTTP/1.1 1")) { // the 1xx heads before
			e, _ := headEnd(raw[end:], 0)
			end += e
		}
		if std, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(raw[end:]))); err == nil && !bytes.Equal(std, whole.body) {
			t.Fatalf("chunked body %q, net/http reads %q", whole.body, std)
		}
	})
}

// h1Server answers each request on a connection with the next of its
// responses, written raw, and closes the connection after the last.
func h1Server(t *testing.T, responses ...string) (addr string, conns *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	conns = new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for _, r := range responses {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					if _, err := io.WriteString(c, r); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), conns
}

// streamRequest is a request as Stream sends it, which h1Transport handles.
func streamRequest(t *testing.T, ctx context.Context, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(withStreamTrace(ctx, &httptrace.ClientTrace{}), http.MethodPost, url, strings.NewReader(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// Stream's requests to a plain-HTTP target go through the own reader
// (StdHTTP: through net/http); a connection read to its end carries the
// next request; one whose body was closed early does not.
func TestH1TransportCarriesStreamRequests(t *testing.T) {
	const chunked = okHead + "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n3\r\nx\n\n\r\n0\r\n\r\n"
	for _, std := range []bool{false, true} {
		t.Run(map[bool]string{false: "own reader", true: "net/http"}[std], func(t *testing.T) {
			addr, conns := h1Server(t, chunked, chunked, chunked)
			c, err := New(Config{BaseURL: "http://" + addr, StdHTTP: std}, nameWire{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for i, readAll := range []bool{true, true, false, true} {
				resp, err := c.http.Do(streamRequest(t, t.Context(), "http://"+addr+"/v1/chat/completions"))
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				hb, _ := resp.Body.(*hintBody)
				if _, own := hb.ReadCloser.(*h1Body); hb == nil || own == std {
					t.Fatalf("request %d: body %T (%T), want the own reader's: %v", i, resp.Body, hb.ReadCloser, !std)
				}
				if readAll {
					b, err := io.ReadAll(resp.Body)
					if err != nil || string(b) != "data: x\n\n" {
						t.Fatalf("request %d: body %q, %v", i, b, err)
					}
				}
				_ = resp.Body.Close()
			}
			// Requests 1 and 2 on the first connection; 3, closed early,
			// ends it; 4 on a second.
			if n := conns.Load(); n != 2 {
				t.Errorf("%d connections, want 2", n)
			}
		})
	}
}

// A context that ends while the reader waits for the server ends the
// wait, for the head and inside the body.
func TestH1ContextEndsAParkedRead(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read to its end, the body lets the server see the client's close.
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			w.(http.Flusher).Flush()
		}
		select {
		case arrived <- struct{}{}:
		default:
			t.Errorf("request %s arrived when none was waited for", r.URL.Path)
		}
		<-r.Context().Done()
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL}, nameWire{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, path := range []string{"/silent", "/stream"} {
		t.Run(path, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				resp, err := c.http.Do(streamRequest(t, ctx, srv.URL+path))
				if err == nil {
					_, err = resp.Body.Read(make([]byte, 64))
					_ = resp.Body.Close()
				}
				done <- err
			}()
			<-arrived
			cancel()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("no error after the context ended")
				}
			case <-time.After(10 * time.Second): // against a hang only
				t.Fatal("the parked read did not end with its context")
			}
		})
	}
}

// Bytes a server sends on an idle connection answer no request: the next
// request must not read them as its response. net/http's read loop, parked
// on every idle connection, closes such a one; the own reader has no
// reader on idle connections, so it looks at checkout and dials another.
func TestH1UnsolicitedBytesOnAnIdleConnection(t *testing.T) {
	const chunked = okHead + "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n3\r\nx\n\n\r\n0\r\n\r\n"
	const bogus = okHead + "Content-Type: text/event-stream\r\nContent-Length: 13\r\n\r\ndata: bogus\n\n"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int64
	read, sent := make(chan struct{}), make(chan struct{})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			first := conns.Add(1) == 1
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					if _, err := io.WriteString(c, chunked); err != nil {
						return
					}
					if first {
						first = false
						<-read // the client has read the answer: the connection is idle
						// On loopback the bytes are in the client's socket
						// when the write returns.
						_, _ = io.WriteString(c, bogus)
						close(sent)
					}
				}
			}()
		}
	}()
	addr := ln.Addr().String()
	c, err := New(Config{BaseURL: "http://" + addr}, nameWire{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 2 {
		resp, err := c.http.Do(streamRequest(t, t.Context(), "http://"+addr+"/v1/chat/completions"))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || string(b) != "data: x\n\n" {
			t.Fatalf("request %d: body %q, %v (want the answer to it, not the bytes sent on the idle connection)", i, b, err)
		}
		if i == 0 {
			close(read)
			<-sent
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (the idle one that received bytes closed)", n)
	}
}
