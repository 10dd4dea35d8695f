//go:build linux

package transport

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
)

// A close that comes right behind a stream's last bytes ends the stream
// at once: the server writes its answer and closes (a FIN, or an RST with
// SO_LINGER 0) in the same instant, so the close often reaches the client
// with the bytes, before it reads them. A reader that waited for the
// poller after a read that emptied the socket would miss it: the bytes and
// the close share one readiness (tsConn.readEach). Each request must end
// long before its 20 s timeout, with the close's outcome.
const chunkedSSE = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

func TestStreamEndsAtACloseThatCameWithItsLastBytes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reset bool
		head  string
		body  string
		class measure.ErrorClass // "" for a whole answer
	}{
		{name: "FIN ends a read-until-close body", head: "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n", body: "data: {\"t\":1}\n\ndata: [DONE]\n\n"},
		{name: "RST inside a chunked body", reset: true, class: measure.ClassReset,
			head: chunkedSSE, body: "f\r\ndata: {\"t\":1}\n\n\r\n"},
		{name: "FIN inside a chunked body", class: measure.ClassReset,
			head: chunkedSSE, body: "f\r\ndata: {\"t\":1}\n\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					s, err := ln.Accept()
					if err != nil {
						return
					}
					go func() {
						defer s.Close()
						req, err := http.ReadRequest(bufio.NewReader(s))
						if err != nil {
							return
						}
						_, _ = io.Copy(io.Discard, req.Body)
						// The head, then a moment later (the client parked in
						// the body's read) the body and the close.
						_, _ = io.WriteString(s, tc.head)
						time.Sleep(time.Millisecond)
						_, _ = io.WriteString(s, tc.body)
						if tc.reset {
							_ = s.(*net.TCPConn).SetLinger(0)
						}
					}()
				}
			}()
			c, err := New(Config{BaseURL: "http://" + ln.Addr().String(), TotalTimeout: 20 * time.Second, NoStaleRetry: true}, tokenWire{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for i := range 40 {
				began := time.Now()
				// The error Stream returns is res.Err's.
				res, _ := c.Stream(context.Background(), measure.Request{MaxTokens: 4, Stream: true})
				var class measure.ErrorClass
				if res.Err != nil {
					class = res.Err.Class
				}
				if class != tc.class || time.Since(began) > 10*time.Second {
					t.Fatalf("request %d: class %q (%v) after %v, want %q at the close", i, class, res.Err, time.Since(began), tc.class)
				}
			}
		})
	}
}
