package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
)

// A request's first write on a connection the server has already closed
// writes nothing and says so; on a live connection it writes.
func TestFirstWriteOnClosedConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var dialed atomic.Bool
	dial := hintDialer(kernelTimestampDialer((&net.Dialer{}).DialContext), &dialed)
	for _, closeFirst := range []bool{false, true} {
		if closeFirst && runtime.GOOS != "linux" {
			continue // the kernel's TCP state is read on Linux only
		}
		c, err := dial(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		p := c.(*poolConn)
		srv := <-accepted
		if closeFirst {
			_ = srv.Close()
			// Bounded wait for the FIN: the check reads the kernel's state.
			deadline := time.Now().Add(5 * time.Second)
			for !peerClosed(p.Conn) && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
		}
		p.acquired()
		n, err := p.Write([]byte("POST / HTTP/1.1\r\n"))
		if closeFirst {
			if n != 0 || !errors.Is(err, errClosedBeforeSend) || !p.closedUnsent() {
				t.Errorf("closed by the server: wrote %d, %v, unsent %v; want 0, %v", n, err, p.closedUnsent(), errClosedBeforeSend)
			}
		} else if err != nil || p.closedUnsent() {
			t.Errorf("live connection: %v, unsent %v", err, p.closedUnsent())
		}
		_ = c.Close()
		_ = srv.Close()
	}
	if !dialed.Load() {
		t.Error("dialed not set")
	}
}

type nameWire struct{ Wire }

func (nameWire) Name() string { return "test" }

// Every connection failure names its likely cause, the class unchanged.
func TestErrorMessagesNameTheCause(t *testing.T) {
	c, err := New(Config{BaseURL: "http://127.0.0.1:1"}, nameWire{})
	if err != nil {
		t.Fatal(err)
	}
	dialErr := func(call string, e syscall.Errno) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError(call, e)}
	}
	tests := []struct {
		name    string
		err     error
		during  string
		dialed  bool
		class   measure.ErrorClass
		message string
	}{
		{"EOF before any response byte", fmt.Errorf("read: %w", io.EOF), "await response", false, measure.ClassReset, "the server closed the connection before any response byte"},
		{"reset mid-stream", syscall.ECONNRESET, "read stream", false, measure.ClassReset, "the server closed the connection mid-response"},
		{"cut body", fmt.Errorf("body: %w", io.ErrUnexpectedEOF), "read body", false, measure.ClassReset, "the server closed the connection mid-response"},
		{"EMFILE", dialErr("socket", syscall.EMFILE), "connect", false, measure.ClassConnect, "open-file limit (ulimit -n"},
		{"refused, never connected", dialErr("connect", syscall.ECONNREFUSED), "connect", false, measure.ClassConnect, "nothing is listening at that address"},
		{"refused after connecting", dialErr("connect", syscall.ECONNREFUSED), "connect", true, measure.ClassConnect, "its listen backlog overflowed or it stopped listening"},
		{"out of ports", dialErr("connect", syscall.EADDRNOTAVAIL), "connect", false, measure.ClassConnect, "no local port left"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.dialed.Store(tt.dialed)
			e := c.classify(context.Background(), tt.err, tt.during)
			if e.Class != tt.class || !strings.Contains(e.Message, tt.message) {
				t.Errorf("%s %q, want %s containing %q", e.Class, e.Message, tt.class, tt.message)
			}
			if !errors.Is(e, tt.err) {
				t.Errorf("the cause %v is not wrapped", tt.err)
			}
		})
	}
	if n := OpenFileLimit(); n > 0 {
		e := c.classify(context.Background(), dialErr("socket", syscall.EMFILE), "connect")
		if want := "(ulimit -n " + strconv.FormatUint(n, 10) + ") reached"; !strings.Contains(e.Message, want) {
			t.Errorf("%q lacks %q", e.Message, want)
		}
	}
}

// closeFirst is a listener that closes its first n connections as soon
// as it accepts them, before reading anything (a server whose
// first-request timeout fired while the client was busy connecting).
type closeFirst struct {
	net.Listener
	n        int64
	accepted atomic.Int64
}

func (l *closeFirst) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.accepted.Add(1) > l.n {
			return c, nil
		}
		_ = c.Close()
	}
}

// A connection the server closed before the client wrote its request (the
// client dialled it, then was too slow to write) is resent once on a
// fresh one and counted: the server never had the request. With the
// retry off it is a stale_connection error saying so; a fresh connection
// closed as well ends the request as a reset after the one retry. The
// client's lateness is a trace hook that holds the request, once it has
// its connection, until the client has seen the server's close: no sleep.
func TestConnectionClosedBeforeSendIsRetried(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kernel's TCP state is read on Linux only")
	}
	tests := []struct {
		name    string
		closed  int64 // connections the server closes unread
		retry   bool
		class   measure.ErrorClass // "" for success
		message string
		retries int32
		conns   int64
	}{
		{"retried", 1, true, "", "", 1, 2},
		{"retry off", 1, false, measure.ClassStaleConnection, "the server closed the connection before the request was sent", 0, 1},
		{"the fresh connection closed too", 1 << 30, true, measure.ClassReset, "after a stale-connection retry", 1, 2},
	}
	for _, tt := range tests {
		// Stream's request (its trace under streamTraceKey) goes through
		// the own HTTP/1.1 reader, any other through net/http.
		for _, own := range []bool{true, false} {
			t.Run(tt.name+map[bool]string{true: " (own reader)", false: " (net/http)"}[own], func(t *testing.T) {
				srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					_, _ = io.WriteString(w, "ok")
				}))
				l := &closeFirst{Listener: srv.Listener, n: tt.closed}
				srv.Listener = l
				srv.Start()
				defer srv.Close()
				c, err := New(Config{BaseURL: srv.URL, NoStaleRetry: !tt.retry}, nameWire{})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				var once sync.Once
				var held bool
				trace := &httptrace.ClientTrace{
					// Runs after the transport's own GotConn, before the
					// write; only the first connection is held.
					GotConn: func(info httptrace.GotConnInfo) {
						once.Do(func() {
							p := poolConnOf(info.Conn)
							if p == nil {
								return
							}
							deadline := time.Now().Add(10 * time.Second) // against a hang only
							for !p.readEnded.Load() && !peerClosed(p.Conn) && time.Now().Before(deadline) {
								time.Sleep(time.Millisecond)
							}
							held = p.readEnded.Load() || peerClosed(p.Conn)
						})
					},
				}
				ctx := httptrace.WithClientTrace(t.Context(), trace)
				if own {
					ctx = withStreamTrace(t.Context(), trace)
				}
				var retries atomic.Int32
				ctx = withStaleCounter(ctx, &retries)
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(`{"x":1}`))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := c.http.Do(req)
				if err == nil {
					_ = resp.Body.Close()
				}
				if !held {
					t.Fatal("the client never saw the server's close")
				}
				switch {
				case tt.class == "" && err != nil:
					t.Fatalf("resend: %v", err)
				case tt.class != "" && err == nil:
					t.Fatalf("success, want %s", tt.class)
				case tt.class != "":
					e := c.classify(context.Background(), err, "send request")
					if e.Class != tt.class || !strings.Contains(e.Message, tt.message) {
						t.Fatalf("%s %q, want %s containing %q", e.Class, e.Message, tt.class, tt.message)
					}
					if tt.class == measure.ClassStaleConnection && !errors.Is(err, ErrStaleConnection) {
						t.Errorf("%v is not ErrStaleConnection", err)
					}
				}
				if retries.Load() != tt.retries || l.accepted.Load() != tt.conns {
					t.Errorf("stale retries %d, connections %d; want %d and %d", retries.Load(), l.accepted.Load(), tt.retries, tt.conns)
				}
			})
		}
	}
}
