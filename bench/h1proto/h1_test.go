package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/sim"
)

// TestChunkedDecodesWhateverTheReadsSplit feeds each body cut at every
// byte, so every state meets a read boundary.
func TestChunkedDecodesWhateverTheReadsSplit(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"two chunks", "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world"},
		{"extension and trailer", "3;x=y\r\nabc\r\n0\r\nX-T: 1\r\n\r\n", "abc"},
		{"upper-case hex", "A\r\n0123456789\r\n0\r\n\r\n", "0123456789"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for cut := range len(tc.body) {
				var c chunked
				var got []byte
				f := func(b []byte) error { got = append(got, b...); return nil }
				done, err := c.feed([]byte(tc.body[:cut]), f)
				if err != nil || done {
					t.Fatalf("cut %d: first part: done %v, err %v", cut, done, err)
				}
				done, err = c.feed([]byte(tc.body[cut:]), f)
				if err != nil || !done || string(got) != tc.want {
					t.Fatalf("cut %d: done %v, err %v, data %q, want %q", cut, done, err, got, tc.want)
				}
			}
		})
	}
}

func TestChunkedRefusesBadFraming(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"size not hex", "zz\r\nabc\r\n"},
		{"data without its CRLF", "3\r\nabcX\r\n"},
		{"bytes after the body", "0\r\n\r\nHTTP/1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c chunked
			if _, err := c.feed([]byte(tc.body), func([]byte) error { return nil }); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestParseHead(t *testing.T) {
	for _, tc := range []struct {
		name, head string
		want       head
		bad        bool
	}{
		{"stream", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\ntransfer-encoding: chunked\r\n",
			head{status: 200, contentType: "text/event-stream", chunked: true}, false},
		{"close", "HTTP/1.1 503 Busy\r\nConnection: close\r\n", head{status: 503, close: true}, false},
		{"HTTP/1.0 closes", "HTTP/1.0 200 OK\r\n", head{status: 200, close: true}, false},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n", head{}, true},
		{"header without colon", "HTTP/1.1 200 OK\r\nbroken\r\n", head{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := parseHead([]byte(tc.head))
			if (err != nil) != tc.bad {
				t.Fatalf("err %v, want an error: %v", err, tc.bad)
			}
			if !tc.bad && h != tc.want {
				t.Fatalf("got %+v, want %+v", h, tc.want)
			}
		})
	}
}

// TestEveryClientReadsWholeStreamsOnKeptAliveConnections runs each
// in-process client against the embedded simulator: every request's token
// events are all there (each was decoded through the accumulator) and
// each stream sent all its requests on one connection.
func TestEveryClientReadsWholeStreamsOnKeptAliveConnections(t *testing.T) {
	names := []string{"transport", "transport-std"}
	for n, v := range variants {
		if v.kernelTS && runtime.GOOS != "linux" {
			continue
		}
		names = append(names, n)
	}
	slices.Sort(names)
	const conc, requests, tokens = 3, 10, 16
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s, err := sim.New(sim.Config{DecodeStep: 200 * time.Microsecond, TTFTBase: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			srv := httptest.NewUnstartedServer(s.Handler())
			var conns atomic.Int64
			srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)

			var cr childReport
			transport := strings.HasPrefix(name, "transport")
			if transport {
				cr, err = runTransport(srv.URL, conc, requests, tokens, name == "transport-std")
			} else {
				cr, err = runProto(variants[name], srv.URL, conc, requests, tokens)
			}
			if err != nil {
				t.Fatal(err)
			}
			if cr.Requests != requests || cr.Events != requests*tokens {
				t.Errorf("%d requests, %d token events; want %d, %d", cr.Requests, cr.Events, requests, requests*tokens)
			}
			if got := conns.Load(); got != conc {
				t.Errorf("%d connections for %d streams", got, conc)
			}
			if !transport && cr.Reads == 0 {
				t.Error("no reads counted")
			}
		})
	}
}

// The chunked decoder hands the SSE parser the body bytes only.
func TestChunkedPassesBodyBytesOnly(t *testing.T) {
	var c chunked
	var got bytes.Buffer
	body := "d\r\ndata: {\"a\":1}\r\n2\r\n\n\n\r\n0\r\n\r\n"
	done, err := c.feed([]byte(body), func(b []byte) error { got.Write(b); return nil })
	if err != nil || !done || got.String() != "data: {\"a\":1}\n\n" {
		t.Fatalf("done %v err %v got %q", done, err, got.String())
	}
}
