package transport

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
)

// The HTTP/1.1 response parser of h1Transport (h1.go): a head parsed from
// the bytes of its read buffer, and a chunked body decoded in the
// caller's buffer, in place. What net/http's transport would do per
// response with a bufio.Reader pair and a goroutine per connection.

// errNotHTTP marks a response that is not HTTP/1.x: its status line or a
// header line cannot be read (Client.classify: a protocol error).
var errNotHTTP = errors.New("malformed HTTP")

// errHeadTooLarge is a response head over MaxResponseHeaderBytes (net/http's
// words, which classify also matches for the responses net/http reads).
var errHeadTooLarge = fmt.Errorf("server response headers exceeded %d bytes; aborted", MaxResponseHeaderBytes)

// errBadChunk marks a chunked body whose framing is broken. net/http's
// chunked reader errors fall to classify's reset class; so does this.
var errBadChunk = errors.New("malformed chunked encoding")

// headError is a status or header line that is not HTTP, quoted.
type headError struct {
	what string // "response", "status code", "version", "header line"
	text string
}

func (e *headError) Error() string {
	return fmt.Sprintf("%v %s %q", errNotHTTP, e.what, Cut([]byte(e.text), 200))
}

func (e *headError) Is(target error) bool { return target == errNotHTTP }

// respHead is a parsed response head.
type respHead struct {
	proto         string
	major, minor  int
	status        int
	statusText    string // "200 OK", as http.Response.Status
	header        http.Header
	contentLength int64 // -1: not given
	chunked       bool
	// close: the connection ends with this response (HTTP/1.0 without
	// keep-alive, Connection: close); readToClose: the body is everything
	// until then (no length, not chunked).
	close, readToClose bool
}

// bodyless reports whether a response with this status has no body,
// whatever its headers say (RFC 9112 §6.3).
func bodyless(status int) bool {
	return status >= 100 && status <= 199 || status == http.StatusNoContent || status == http.StatusNotModified
}

// headEnd is the length of the head at the start of b, through the blank
// line that ends it, scanning from from (a line start already known not to
// be the blank one); -1 and the start of the last incomplete line when b
// holds no blank line yet.
func headEnd(b []byte, from int) (end, next int) {
	for i := from; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1, i
		}
		if j == 0 || j == 1 && b[i] == '\r' {
			return i + j + 1, i + j + 1
		}
		i += j + 1
	}
}

// line trims a line's ending (LF or CRLF).
func line[T ~string | ~[]byte](b T) T {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

// parseStatusLine reads "HTTP/1.1 200 OK" with net/http's rules and words;
// the strings it sets are l's.
func parseStatusLine[T ~string | ~[]byte](l T, h *respHead) error {
	sp := indexByteOf(l, ' ')
	if sp < 0 {
		return &headError{what: "response", text: string(l)}
	}
	proto, status := l[:sp], l[sp+1:]
	for len(status) > 0 && status[0] == ' ' {
		status = status[1:]
	}
	code := status
	if i := indexByteOf(code, ' '); i >= 0 {
		code = code[:i]
	}
	if len(code) != 3 {
		return &headError{what: "status code", text: string(code)}
	}
	n := 0
	for i := range 3 {
		c := code[i]
		if c < '0' || c > '9' {
			return &headError{what: "status code", text: string(code)}
		}
		n = n*10 + int(c-'0')
	}
	major, minor, ok := parseVersion(proto)
	if !ok || major != 1 {
		return &headError{what: "version", text: string(proto)}
	}
	h.major, h.minor, h.status = major, minor, n
	if hs, ok := any(l).(string); ok {
		h.proto, h.statusText = hs[:sp], string(status)
	}
	return nil
}

// parseVersion is http.ParseHTTPVersion without its string.
func parseVersion[T ~string | ~[]byte](v T) (major, minor int, ok bool) {
	if len(v) != 8 || string(v[:5]) != "HTTP/" || v[6] != '.' || v[5] < '0' || v[5] > '9' || v[7] < '0' || v[7] > '9' {
		return 0, 0, false
	}
	return int(v[5] - '0'), int(v[7] - '0'), true
}

func indexByteOf[T ~string | ~[]byte](s T, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// parseHead reads a head: b holds the status line and header lines, each
// ending in LF (the blank line may follow; it is not needed). Header
// values are trimmed; a folded line continues the one before it. Every
// string of the head is a part of one copy of b, the header names most
// servers send are shared constants, and the values' slices share one
// array: a few allocations per response, not three per header.
func parseHead(b []byte) (*respHead, error) {
	text := string(b)
	h := &respHead{contentLength: -1}
	first, rest, _ := strings.Cut(text, "\n")
	if err := parseStatusLine(line(first), h); err != nil {
		return nil, err
	}
	lines := strings.Count(rest, "\n")
	h.header = make(http.Header, lines)
	values := make([]string, 0, lines)
	var lastKey string
	for len(rest) > 0 {
		var l string
		l, rest, _ = strings.Cut(rest, "\n")
		l = line(l)
		if len(l) == 0 {
			break
		}
		if l[0] == ' ' || l[0] == '\t' {
			// obs-fold (RFC 9112 §5.2): a space stands for the fold.
			vs := h.header[lastKey]
			if lastKey == "" || len(vs) == 0 {
				return nil, &headError{what: "header line", text: l}
			}
			vs[len(vs)-1] += " " + strings.Trim(l, " \t")
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok || len(k) == 0 || !isToken([]byte(k)) {
			return nil, &headError{what: "header line", text: l}
		}
		key, common := commonHeaders[k]
		if !common {
			key = textproto.CanonicalMIMEHeaderKey(k)
		}
		v = strings.Trim(v, " \t")
		if vs, seen := h.header[key]; seen {
			h.header[key] = append(vs, v)
		} else {
			values = append(values, v)
			h.header[key] = values[len(values)-1 : len(values) : len(values)]
		}
		lastKey = key
	}
	return h, h.framing()
}

// commonHeaders maps the header names LLM servers send, as Go, uvicorn
// and llama.cpp spell them, to their canonical form.
var commonHeaders = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"Access-Control-Allow-Origin", "Cache-Control", "Connection", "Content-Encoding",
		"Content-Length", "Content-Type", "Date", "Keep-Alive", "Location", "Retry-After", "Server",
		"Transfer-Encoding", "Vary", "X-Accel-Buffering", "X-Request-Id"} {
		m[k], m[strings.ToLower(k)] = k, k
	}
	return m
}()

// framing reads what the headers say of the body and the connection,
// with net/http's rules (transfer.go).
func (h *respHead) framing() error {
	conn := h.header["Connection"]
	h.close = hasToken(conn, "close") || h.minor == 0 && !hasToken(conn, "keep-alive")
	if te := h.header["Transfer-Encoding"]; len(te) > 0 {
		if len(te) != 1 || !strings.EqualFold(te[0], "chunked") {
			return &headError{what: "header line", text: "Transfer-Encoding: " + fmt.Sprint(te)}
		}
		h.chunked = true
	}
	if cl := h.header["Content-Length"]; len(cl) > 0 && !h.chunked {
		for _, v := range cl[1:] {
			if v != cl[0] {
				return &headError{what: "header line", text: "Content-Length: " + fmt.Sprint(cl)}
			}
		}
		n, err := strconv.ParseInt(cl[0], 10, 64)
		if err != nil || n < 0 || cl[0][0] == '+' {
			return &headError{what: "header line", text: "Content-Length: " + cl[0]}
		}
		h.contentLength = n
	}
	if bodyless(h.status) {
		h.chunked, h.contentLength = false, 0
		return nil
	}
	if !h.chunked && h.contentLength < 0 {
		h.readToClose, h.close = true, true
	}
	return nil
}

// isToken reports whether b is an RFC 9110 token (a header name).
func isToken(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || !tokenChar[c] {
			return false
		}
	}
	return true
}

var tokenChar = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// validHeaderValue is net/http's rule for a field value it sends: no
// control byte but HTAB.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// hasToken reports whether a comma-separated header holds token.
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for len(v) > 0 {
			var part string
			part, v, _ = strings.Cut(v, ",")
			if strings.EqualFold(trimOWS(part), token) {
				return true
			}
		}
	}
	return false
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// maxChunkLine bounds a chunk-size line or a trailer line (net/http's
// maxLineLength).
const maxChunkLine = 4 << 10

// chunked decodes a chunked body (RFC 9112 §7.1) in the buffers it is
// read into, in place: framing out, data moved down over it. Extensions
// are ignored; trailers are read and dropped (tollgate reads none).
type chunked struct {
	state        uint8
	left         int64  // data bytes left in the current chunk
	line         []byte // a size or trailer line split across reads
	trailerBytes int
}

const (
	chunkSize    = iota // reading a chunk-size line
	chunkData           // inside a chunk's data
	chunkDataCR         // the CR after a chunk's data
	chunkDataLF         // the LF after it
	chunkTrailer        // reading trailer lines after the last chunk
	chunkDone           // the body ended
)

// decode strips the framing from p in place: the data is then p[:n].
// done reports that the body ended, and rest is the index in p of the
// first byte after it (len(p) when the body did not end inside p).
func (c *chunked) decode(p []byte) (n, rest int, done bool, err error) {
	r := 0
	for r < len(p) {
		switch c.state {
		case chunkData:
			k := int(min(c.left, int64(len(p)-r)))
			n += copy(p[n:], p[r:r+k])
			r += k
			if c.left -= int64(k); c.left == 0 {
				c.state = chunkDataCR
			}
		case chunkDataCR:
			if p[r] != '\r' {
				return n, r, false, fmt.Errorf("%w: chunk data not followed by CRLF", errBadChunk)
			}
			r, c.state = r+1, chunkDataLF
		case chunkDataLF:
			if p[r] != '\n' {
				return n, r, false, fmt.Errorf("%w: chunk data not followed by CRLF", errBadChunk)
			}
			r, c.state = r+1, chunkSize
		case chunkSize, chunkTrailer:
			l, next, ok, lerr := c.takeLine(p, r)
			if lerr != nil {
				return n, r, false, lerr
			}
			r = next
			if !ok {
				continue
			}
			if c.state == chunkTrailer {
				if c.trailerBytes += len(l); c.trailerBytes > MaxResponseHeaderBytes {
					return n, r, false, fmt.Errorf("%w: trailers over %d bytes", errBadChunk, MaxResponseHeaderBytes)
				}
				if len(l) == 2 { // the blank line
					c.state = chunkDone
					return n, r, true, nil
				}
				continue
			}
			size, serr := chunkLength(l)
			if serr != nil {
				return n, r, false, serr
			}
			c.left, c.state = size, chunkData
			if size == 0 {
				c.state = chunkTrailer
			}
		case chunkDone:
			return n, r, true, nil
		}
	}
	return n, r, c.state == chunkDone, nil
}

// takeLine returns the line (with its CRLF) that starts at p[r] or that an
// earlier read began, and the index after it; ok is false when p ends
// before the line does (what there is of it is kept).
func (c *chunked) takeLine(p []byte, r int) (l []byte, next int, ok bool, err error) {
	i := bytes.IndexByte(p[r:], '\n')
	if i < 0 {
		if len(c.line)+len(p)-r > maxChunkLine {
			return nil, len(p), false, fmt.Errorf("%w: a line over %d bytes", errBadChunk, maxChunkLine)
		}
		c.line = append(c.line, p[r:]...)
		return nil, len(p), false, nil
	}
	l, next = p[r:r+i+1], r+i+1
	if len(c.line) > 0 {
		c.line = append(c.line, l...)
		l = c.line
		c.line = c.line[:0]
	}
	if len(l) > maxChunkLine {
		return nil, next, false, fmt.Errorf("%w: a line over %d bytes", errBadChunk, maxChunkLine)
	}
	if len(l) < 2 || l[len(l)-2] != '\r' {
		// net/http refuses a bare LF here too (request smuggling).
		return nil, next, false, fmt.Errorf("%w: a line ends with a bare LF", errBadChunk)
	}
	return l, next, true, nil
}

// chunkLength parses a chunk-size line "1a;ext=v\r\n" (at most 16 hex
// digits, as net/http).
func chunkLength(l []byte) (int64, error) {
	l = l[:len(l)-2]
	if i := bytes.IndexByte(l, ';'); i >= 0 {
		l = l[:i]
	}
	l = bytes.Trim(l, " \t")
	if len(l) == 0 || len(l) > 15 {
		return 0, fmt.Errorf("%w: chunk size %q", errBadChunk, Cut(l, 40))
	}
	var n int64
	for _, c := range l {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, fmt.Errorf("%w: chunk size %q", errBadChunk, Cut(l, 40))
		}
		n = n<<4 | int64(c)
	}
	return n, nil
}
