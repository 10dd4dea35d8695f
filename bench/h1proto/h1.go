package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/engine/transport/sse"
)

// variant is one way the prototype reads a stream.
type variant struct {
	// stdHead parses the head with http.ReadResponse from a bufio.Reader
	// and reads the body through net/http's chunked reader; otherwise the
	// head and the chunked framing are parsed here, in the read buffer.
	stdHead bool
	// kernelTS reads with recvmsg and SO_TIMESTAMPNS (as engine/transport
	// does); otherwise net.Conn.Read and time.Now after it.
	kernelTS bool
	// skipAfterShort skips the recvmsg after a short read and waits on the
	// poller first (kernelTS only): a short TCP read drained the queue, so
	// the next try would fail with EAGAIN.
	skipAfterShort bool
	readBytes      int
}

// variants are the prototype's clients by name.
var variants = map[string]variant{
	"h1-std":       {stdHead: true, kernelTS: true, readBytes: 4 << 10},
	"h1-hand":      {kernelTS: true, readBytes: 4 << 10},
	"h1-hand-nots": {readBytes: 4 << 10},
	"h1-hand-16k":  {kernelTS: true, readBytes: 16 << 10},
	"h1-hand-64k":  {kernelTS: true, readBytes: 64 << 10},
	"h1-hand-skip": {kernelTS: true, skipAfterShort: true, readBytes: 4 << 10},
}

// counts are one stream's read statistics.
type counts struct {
	reads, eagain, skipped int64
	// late: reads after a skipped try that found data older than the
	// call, i.e. the wait parked with data queued (recvReader).
	// lateMaxNS is the longest such read's data waited (kernel receive
	// to the read's return).
	late, lateMaxNS int64
	// lost: waits ended by the deadline that found data queued.
	lost int64
}

// sockReader is a connection's read path: n bytes into p and the kernel's
// receive time of them in unix ns (0 when it has none).
type sockReader interface {
	read(p []byte) (n int, atNS int64, err error)
	counts() counts
}

// plainReader is net.Conn.Read, with no clock of its own.
type plainReader struct {
	c     net.Conn
	reads int64
}

func (r *plainReader) read(p []byte) (int, int64, error) {
	n, err := r.c.Read(p)
	if n > 0 {
		r.reads++
	}
	return n, 0, err
}

func (r *plainReader) counts() counts { return counts{reads: r.reads, eagain: -1} }

// stream is one goroutine's kept-alive connection and the state it reuses
// from request to request: what tollgate keeps per stream.
type stream struct {
	v      variant
	nc     net.Conn
	rd     sockReader
	br     *bufio.Reader // stdHead only
	buf    []byte
	parser *sse.Parser
	acc    *openai.Accumulator
	ch     chunked

	// per request
	start time.Time
	last  time.Duration
}

func dialStream(addr string, v variant) (*stream, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &stream{v: v, nc: nc, buf: make([]byte, v.readBytes), parser: sse.NewParser(0), acc: openai.NewAccumulator()}
	if v.kernelTS {
		r, err := newRecvReader(nc.(*net.TCPConn), v.skipAfterShort)
		if err != nil {
			_ = nc.Close()
			return nil, err
		}
		s.rd = r
	} else {
		s.rd = &plainReader{c: nc}
	}
	if v.stdHead {
		// net/http's reader size is the transport's ReadBufferSize (4 KiB
		// in tollgate); the body is then read through it.
		s.br = bufio.NewReaderSize(timedReader{s}, 4<<10)
	}
	return s, nil
}

// timedReader is the stream's socket as an io.Reader for bufio, taking
// the arrival time of every read that returns bytes.
type timedReader struct{ s *stream }

func (t timedReader) Read(p []byte) (int, error) {
	n, ts, err := t.s.rd.read(p)
	if n > 0 {
		t.s.stamp(ts)
	}
	if n == 0 && err == nil {
		err = io.EOF
	}
	return n, err
}

// stamp sets the arrival of the bytes just read, as an offset from the
// request's start: the kernel's receive time when there is one, never
// before the previous arrival nor after now (engine/transport's rule).
func (s *stream) stamp(tsNS int64) {
	now := time.Since(s.start)
	at := now
	if tsNS != 0 {
		if k := time.Unix(0, tsNS).Sub(s.start); k > 0 && k <= now {
			at = k
		}
	}
	s.last = max(at, s.last)
}

var errShort = errors.New("stream ended early")

// lostWakeupWait bounds a wait of the skip variant (recvReader): a lost
// wake-up costs at most this much of its request's time.
const lostWakeupWait = 500 * time.Millisecond

// lostWakeupWaits bounds the waits of one read of the skip variant.
const lostWakeupWaits = 120

// do sends req (prebuilt bytes, one Write) and reads its streamed answer:
// every SSE event through the parser and openai's accumulator (its JSON
// decoded, each token's arrival kept), then the request's metrics derived.
func (s *stream) do(req []byte, maxTokens int) (measure.Metrics, error) {
	s.acc.Reset(maxTokens)
	s.parser.Reset()
	s.last = 0
	s.start = time.Now()
	if s.v.skipAfterShort {
		// A lost wake-up ends at this deadline (recvReader).
		if err := s.nc.SetReadDeadline(s.start.Add(lostWakeupWait)); err != nil {
			return measure.Metrics{}, err
		}
	}
	if _, err := s.nc.Write(req); err != nil {
		return measure.Metrics{}, err
	}
	emit := s.acc.Event
	var err error
	if s.v.stdHead {
		err = s.readStd(emit)
	} else {
		err = s.readHand(emit)
	}
	if err == nil {
		err = s.parser.Flush(s.last, emit)
	}
	if err == nil {
		err = s.acc.Finished()
	}
	if err != nil {
		return measure.Metrics{}, err
	}
	if got := s.acc.TokenEvents(); got != maxTokens {
		return measure.Metrics{}, fmt.Errorf("%w: %d token events of %d", errShort, got, maxTokens)
	}
	return s.acc.Metrics(time.Since(s.start)), nil
}

func (s *stream) readStd(emit func(*sse.Event) error) error {
	resp, err := http.ReadResponse(s.br, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	s.acc.FirstByte(s.last)
	if err := checkHead(resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding")); err != nil {
		return err
	}
	for {
		n, rerr := resp.Body.Read(s.buf)
		if n > 0 {
			if err := s.parser.Feed(s.buf[:n], s.last, emit); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			if resp.Close {
				return errors.New("server closes the connection (prototype keeps connections alive only)")
			}
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// readHand parses the head in the read buffer, then decodes the chunked
// body in place, feeding each chunk's bytes to the SSE parser.
func (s *stream) readHand(emit func(*sse.Event) error) error {
	fill := 0
	var body []byte
	for body == nil {
		if fill == len(s.buf) {
			return fmt.Errorf("response head over %d bytes", len(s.buf))
		}
		n, ts, err := s.rd.read(s.buf[fill:])
		if n > 0 {
			s.stamp(ts)
			if fill == 0 {
				s.acc.FirstByte(s.last)
			}
			fill += n
			if i := bytes.Index(s.buf[:fill], crlfcrlf); i >= 0 {
				h, err := parseHead(s.buf[:i+2])
				if err != nil {
					return err
				}
				if err := checkHead(h.status, h.contentType, h.contentEncoding); err != nil {
					return err
				}
				if !h.chunked || h.close {
					return errors.New("prototype reads chunked bodies on kept-alive connections only")
				}
				body = s.buf[i+4 : fill]
			}
		}
		if err != nil {
			return eof(err)
		}
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
	}
	s.ch = chunked{}
	feed := func(b []byte) error { return s.parser.Feed(b, s.last, emit) }
	done, err := s.ch.feed(body, feed)
	for !done && err == nil {
		var n int
		var ts int64
		n, ts, err = s.rd.read(s.buf)
		if n > 0 {
			s.stamp(ts)
			var ferr error
			done, ferr = s.ch.feed(s.buf[:n], feed)
			if ferr != nil {
				return ferr
			}
			if done {
				return nil
			}
		}
		if err == nil && n == 0 {
			err = io.ErrUnexpectedEOF
		}
	}
	if err != nil {
		return eof(err)
	}
	return nil
}

func eof(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

var crlfcrlf = []byte("\r\n\r\n")

// checkHead refuses what tollgate refuses before reading a stream.
func checkHead(status int, ct, enc string) error {
	if status != http.StatusOK {
		return fmt.Errorf("HTTP %d", status)
	}
	if enc != "" && !strings.EqualFold(enc, "identity") {
		return fmt.Errorf("Content-Encoding %q", enc)
	}
	if mt, _, _ := strings.Cut(ct, ";"); !strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
		return fmt.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	return nil
}

// head is what the prototype reads of a response head.
type head struct {
	status                       int
	contentType, contentEncoding string
	chunked, close               bool
}

// parseHead reads a status line and header lines, each ending in CRLF
// (b holds the last header's CRLF, not the blank line).
func parseHead(b []byte) (head, error) {
	var h head
	line, rest, ok := bytes.Cut(b, crlf)
	if !ok || len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return h, fmt.Errorf("malformed status line %q", line)
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return h, fmt.Errorf("malformed status line %q", line)
	}
	h.status = code
	h.close = line[7] == '0' // HTTP/1.0 closes unless told otherwise
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, crlf)
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return h, fmt.Errorf("malformed header line %q", line)
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Type")):
			h.contentType = string(v)
		case bytes.EqualFold(k, []byte("Content-Encoding")):
			h.contentEncoding = string(v)
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			h.chunked = bytes.EqualFold(v, []byte("chunked"))
		case bytes.EqualFold(k, []byte("Connection")):
			h.close = bytes.EqualFold(v, []byte("close"))
		}
	}
	return h, nil
}

var crlf = []byte("\r\n")

// chunked decodes a chunked body (RFC 9112 §7.1) fed in pieces as they
// are read.
type chunked struct {
	state int
	left  int64
	line  []byte // a size or trailer line split across reads
}

const (
	chunkSize = iota
	chunkData
	chunkDataEnd
	chunkTrailer
)

// maxChunkLine bounds a chunk-size or trailer line.
const maxChunkLine = 4 << 10

// feed passes each piece of chunk data in b to f, and reports done once
// the last chunk and its trailer section ended.
func (c *chunked) feed(b []byte, f func([]byte) error) (done bool, err error) {
	for len(b) > 0 {
		if c.state == chunkData {
			k := int(min(c.left, int64(len(b))))
			if err := f(b[:k]); err != nil {
				return false, err
			}
			b, c.left = b[k:], c.left-int64(k)
			if c.left == 0 {
				c.state = chunkDataEnd
			}
			continue
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(c.line)+len(b) > maxChunkLine {
				return false, errors.New("chunked: line too long")
			}
			c.line = append(c.line, b...)
			return false, nil
		}
		line := b[:i]
		if len(c.line) > 0 {
			c.line = append(c.line, line...)
			line = c.line
		}
		b = b[i+1:]
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch c.state {
		case chunkSize:
			if j := bytes.IndexByte(line, ';'); j >= 0 {
				line = line[:j] // chunk extensions are ignored
			}
			n, perr := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
			if perr != nil || n < 0 {
				return false, fmt.Errorf("chunked: bad size line %q", line)
			}
			c.state, c.left = chunkData, n
			if n == 0 {
				c.state = chunkTrailer
			}
		case chunkDataEnd:
			if len(line) != 0 {
				return false, errors.New("chunked: data not followed by CRLF")
			}
			c.state = chunkSize
		case chunkTrailer:
			if len(line) == 0 {
				c.line = c.line[:0]
				if len(b) > 0 {
					return true, errors.New("chunked: bytes after the body (pipelining is not expected)")
				}
				return true, nil
			}
		}
		c.line = c.line[:0]
	}
	return false, nil
}
