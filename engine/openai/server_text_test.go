package openai

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/internal/textsafe"
)

// rawServer is a scripted server at the byte level: for each connection it
// reads one request (headers and body), then script writes what it likes,
// and the connection closes.
func rawServer(t *testing.T, script func(w *bufio.Writer)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // against a hang only
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				w := bufio.NewWriter(c)
				script(w)
				_ = w.Flush()
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// Every text a server supplies reaches a message with its control
// characters escaped, by the one rule every output follows
// (internal/textsafe), and within a bound: an error body, an error event,
// a header line the HTTP client quotes, a readiness failure, a metadata
// body. A secret the server echoes across the excerpt's cut shows no part.
func TestServerTextIsEscapedInMessages(t *testing.T) {
	const nasty = "\x00\x1b[2J\x1b]0;owned\x07\u202eboom"
	const shown = `\x00\x1b[2J\x1b]0;owned\x07\u202eboom`
	stream := func(c *Client) (string, error) {
		_, err := c.Stream(t.Context(), chatReq(1))
		var oe *Error
		if !errors.As(err, &oe) {
			return "", fmt.Errorf("error %v is no *Error", err)
		}
		return oe.Message, nil
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		raw     func(w *bufio.Writer) // a raw server instead of handler
		call    func(c *Client) (string, error)
		want    string
	}{
		{name: "error body", call: stream, want: "HTTP 500 Internal Server Error: " + shown,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, nasty)
			}},
		{name: "an error body of escapes, 1 MB", call: stream, want: `HTTP 500 Internal Server Error: \x1b\x1b`,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, strings.Repeat("\x1b", 1<<20))
			}},
		{name: "error event in a stream", call: stream, want: "server error event: " + shown,
			handler: func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				sendEvent(w, `{"error":{"message":"\u0000\u001b[2J\u001b]0;owned\u0007\u202eboom"}}`)
			}},
		{name: "an error event of 1 MB", call: stream, want: "server error event: " + strings.Repeat("x", 100),
			handler: func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				sendEvent(w, `{"error":{"message":"`+strings.Repeat("x", 1<<20)+`"}}`)
			}},
		{name: "a malformed header line", call: stream, want: `the answer is not HTTP: Post "http://`,
			raw: func(w *bufio.Writer) { _, _ = w.WriteString("HTTP/1.1 200 OK\r\nX\x1b[2J\r\n\r\n") }},
		{name: "a secret echoed across the excerpt's cut", call: stream, want: "HTTP 400 Bad Request: " + strings.Repeat("a", 400),
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, strings.Repeat("a", 498)+r.Header.Get("Authorization"))
			}},
		{name: "a readiness failure", want: "refuses the request's credentials: GET http://",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusUnauthorized) // said at once, no waiting
				_, _ = io.WriteString(w, nasty)
			},
			call: func(c *Client) (string, error) {
				err := c.WaitReady(t.Context(), time.Now().Add(time.Minute))
				if err == nil {
					return "", errors.New("ready")
				}
				if !strings.Contains(err.Error(), shown) {
					return "", fmt.Errorf("%q lacks %q", err, shown)
				}
				return err.Error(), nil
			}},
		{name: "a metadata body", want: shown,
			handler: func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, nasty) },
			call: func(c *Client) (string, error) {
				return c.Metadata(t.Context())["/version"].Text, nil
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var url string
			if tt.raw != nil {
				url = rawServer(t, tt.raw)
			} else {
				srv := httptest.NewServer(tt.handler)
				defer srv.Close()
				url = srv.URL
			}
			msg, err := tt.call(newClient(t, url, nil))
			if err != nil {
				t.Fatal(err)
			}
			if textsafe.Clean(msg) != msg {
				t.Errorf("raw control characters in %q", msg)
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("message %q lacks %q", msg, tt.want)
			}
			if len(msg) > transport.MaxErrorMessageBytes+len("…") && tt.name != "a metadata body" {
				t.Errorf("message of %d bytes, over %d", len(msg), transport.MaxErrorMessageBytes)
			}
			for i := 4; i <= len(testSecret); i++ {
				if strings.Contains(msg, testSecret[len(testSecret)-i:]) || strings.Contains(msg, testSecret[:i]) {
					t.Fatalf("message %q shows part of the key", msg)
				}
			}
		})
	}
}

// What ends a response inside its head has the class of what it is: a head
// over the bound (Go would take 10 MB) or one that is not HTTP is a
// protocol error naming it; a close inside it is a reset that says where.
// The words of engine/transport's HTTP/1.1 reader (and of Go's HTTP
// client, which says the same after its own prefix) are pinned here.
func TestResponseHeadErrorsAreProtocol(t *testing.T) {
	tests := []struct {
		name   string
		script func(w *bufio.Writer)
		class  ErrorClass
		msg    string
	}{
		{name: "20 MB of headers", class: ClassProtocol,
			msg: fmt.Sprintf("read response headers: the response's status line and headers exceeded %d bytes, the bound on them", transport.MaxResponseHeaderBytes),
			script: func(w *bufio.Writer) {
				_, _ = w.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n")
				line := "X-Big: " + strings.Repeat("a", 1000) + "\r\n"
				for range 20_000 {
					if _, err := w.WriteString(line); err != nil {
						return // the client hung up at its bound
					}
				}
			}},
		{name: "not HTTP", class: ClassProtocol, msg: `malformed HTTP response "SSH-2.0-OpenSSH_9.6"`,
			script: func(w *bufio.Writer) { _, _ = w.WriteString("SSH-2.0-OpenSSH_9.6\r\n\r\n") }},
		{name: "a bad status code", class: ClassProtocol, msg: `malformed HTTP status code "2x0"`,
			script: func(w *bufio.Writer) { _, _ = w.WriteString("HTTP/1.1 2x0 OK\r\n\r\n") }},
		{name: "a header line that is not one", class: ClassProtocol, msg: `the answer is not HTTP: Post "http://`,
			script: func(w *bufio.Writer) { _, _ = w.WriteString("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n") }},
		{name: "closed between header lines", class: ClassReset, msg: "(the server closed the connection inside the response headers)",
			script: func(w *bufio.Writer) { _, _ = w.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n") }},
		{name: "closed inside a header line", class: ClassReset, msg: "(the server closed the connection inside the response headers)",
			script: func(w *bufio.Writer) { _, _ = w.WriteString("HTTP/1.1 200 OK\r\nContent-Ty") }},
	}
	for _, tt := range tests {
		// net/http still reads what the own reader does not send (TLS,
		// proxies): its words must keep their classes too.
		for _, std := range []bool{false, true} {
			t.Run(tt.name+map[bool]string{false: "", true: " (net/http)"}[std], func(t *testing.T) {
				c := newClient(t, rawServer(t, tt.script), func(c *Config) { c.StdHTTP = std })
				_, err := c.Stream(t.Context(), chatReq(1))
				wantErr(t, err, tt.class, nil, tt.msg)
			})
		}
	}
}

// A stream whose body ends with the connection (no length, no chunks)
// and is cut inside a line after the data started is truncated, not a
// decoding error; an unterminated last line that reads whole is taken;
// the server's own error event stays a protocol error.
func TestStreamCutInsideALine(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		class ErrorClass
		is    error
		msg   string
	}{
		{name: "cut inside an event", body: "data: " + contentChunk("a") + "\n\ndata: {\"choices\":[{\"delta\":{\"cont",
			class: ClassTruncated, msg: "the stream ended inside a line (33 bytes after the last line ending): decode chunk"},
		{name: "cut inside the field name", body: "data: " + contentChunk("a") + "\n\nda",
			class: ClassTruncated, is: ErrTruncated, msg: "neither a finish_reason nor [DONE]"},
		{name: "an unterminated [DONE]", body: "data: " + contentChunk("a") + "\n\ndata: [DONE]"},
		{name: "an unterminated error event", body: "data: " + contentChunk("a") + "\n\ndata: {\"error\":{\"message\":\"overloaded\"}}",
			class: ClassProtocol, msg: "server error event: overloaded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := rawServer(t, func(w *bufio.Writer) {
				_, _ = w.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + tt.body)
			})
			_, err := newClient(t, url, nil).Stream(t.Context(), chatReq(1))
			wantErr(t, err, tt.class, tt.is, tt.msg)
		})
	}
}
