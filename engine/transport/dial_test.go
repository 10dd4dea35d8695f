package transport

import (
	"context"
	"errors"
	"net"
	"net/http/httptrace"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestLiteralAddr(t *testing.T) {
	for _, tc := range []struct {
		name, network, addr string
		ok                  bool
	}{
		{"IPv4", "tcp", "127.0.0.1:8000", true},
		{"IPv6", "tcp", "[::1]:8000", true},
		{"IPv4-mapped IPv6", "tcp", "[::ffff:127.0.0.1]:80", true},
		{"tcp4 and IPv4", "tcp4", "10.0.0.1:80", true},
		{"tcp6 and IPv6", "tcp6", "[2001:db8::1]:443", true},
		{"a name", "tcp", "localhost:8000", false},
		{"a DNS name", "tcp", "api.example.com:443", false},
		{"a zone", "tcp", "[fe80::1%eth0]:80", false},
		{"no port", "tcp", "127.0.0.1", false},
		{"a port name", "tcp", "127.0.0.1:http", false},
		{"tcp4 and IPv6", "tcp4", "[::1]:80", false},
		{"tcp6 and IPv4", "tcp6", "127.0.0.1:80", false},
		{"udp", "udp", "127.0.0.1:53", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := literalAddr(tc.network, tc.addr); ok != tc.ok {
				t.Errorf("literalAddr(%q, %q) ok = %v, want %v", tc.network, tc.addr, ok, tc.ok)
			}
		})
	}
}

// connectTrace records the trace's connect hooks.
type connectTrace struct {
	starts, dones []string
	errs          []error
}

func (r *connectTrace) ctx(parent context.Context) context.Context {
	return httptrace.WithClientTrace(parent, &httptrace.ClientTrace{
		ConnectStart: func(network, addr string) { r.starts = append(r.starts, network+" "+addr) },
		ConnectDone: func(network, addr string, err error) {
			r.dones = append(r.dones, network+" "+addr)
			r.errs = append(r.errs, err)
		},
	})
}

// literalDialer's DialTCP and net.Dialer's DialContext, which it stands in
// for, are one dial to the trace and to the caller: the same connect hooks
// with the same arguments (connect_ms is their difference), and the same
// errors, for a literal address; a name still goes through DialContext.
func TestLiteralDialerIsDialContextToTheTraceAndTheCaller(t *testing.T) {
	ln := acceptAll(t, "127.0.0.1:0")
	// A port nothing listens on: one just closed.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedAddr := closed.Addr().String()
	closed.Close()

	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	lit := literalDialer(d)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	live := func() (context.Context, context.CancelFunc) { return t.Context(), func() {} }
	for _, tc := range []struct {
		name   string
		ctx    func() (context.Context, context.CancelFunc) // one per dial
		addr   string
		wantOK bool
	}{
		{"connects", live, ln.Addr().String(), true},
		{"refused", live, refusedAddr, false},
		{"cancelled before it starts", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return ctx, cancel
		}, ln.Addr().String(), false},
		// TEST-NET-1 is never routed: the connect times out, or the
		// network is unreachable at once, alike for both.
		{"times out or is unreachable", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(t.Context(), 50*time.Millisecond)
		}, "192.0.2.1:80", false},
		{"a name", live, net.JoinHostPort("localhost", port), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got, want connectTrace
			gctx, gcancel := tc.ctx()
			defer gcancel()
			gc, gerr := lit(got.ctx(gctx), "tcp", tc.addr)
			wctx, wcancel := tc.ctx()
			defer wcancel()
			wc, werr := d.DialContext(want.ctx(wctx), "tcp", tc.addr)
			for _, c := range []net.Conn{gc, wc} {
				if c != nil {
					c.Close()
				}
			}
			if (gerr == nil) != tc.wantOK || (werr == nil) != tc.wantOK {
				t.Fatalf("literal dial: %v; DialContext: %v; want success %v", gerr, werr, tc.wantOK)
			}
			if gerr != nil {
				if gerr.Error() != werr.Error() {
					t.Errorf("literal dial's error %q, DialContext's %q", gerr, werr)
				}
				for _, target := range []error{syscall.ECONNREFUSED, syscall.ENETUNREACH, context.Canceled, context.DeadlineExceeded, os.ErrDeadlineExceeded} {
					if errors.Is(gerr, target) != errors.Is(werr, target) {
						t.Errorf("errors.Is(%v): literal dial %v, DialContext %v", target, errors.Is(gerr, target), errors.Is(werr, target))
					}
				}
				var gop, wop *net.OpError
				if errors.As(gerr, &gop) != errors.As(werr, &wop) {
					t.Errorf("literal dial's error %T, DialContext's %T", gerr, werr)
				}
				var gne, wne net.Error
				if errors.As(gerr, &gne) && errors.As(werr, &wne) && gne.Timeout() != wne.Timeout() {
					t.Errorf("Timeout(): literal dial %v, DialContext %v", gne.Timeout(), wne.Timeout())
				}
			} else if g, w := gc.(*net.TCPConn), wc.(*net.TCPConn); g == nil || w == nil {
				t.Errorf("connections %T and %T, want *net.TCPConn", gc, wc)
			}
			if len(got.starts) != len(want.starts) || len(got.dones) != len(want.dones) {
				t.Fatalf("literal dial traced starts %q dones %q; DialContext %q %q", got.starts, got.dones, want.starts, want.dones)
			}
			// A name resolves to addresses DialContext may try in another
			// order; a literal is one address, named alike.
			if tc.addr != net.JoinHostPort("localhost", port) {
				for i := range got.starts {
					if got.starts[i] != want.starts[i] || got.dones[i] != want.dones[i] || (got.errs[i] == nil) != (want.errs[i] == nil) {
						t.Errorf("hook %d: literal dial %q %q %v; DialContext %q %q %v", i, got.starts[i], got.dones[i], got.errs[i], want.starts[i], want.dones[i], want.errs[i])
					}
				}
			}
		})
	}
}

// acceptAll listens on addr and accepts every connection, until the test
// ends; it skips the test where addr's family has no loopback.
func acceptAll(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s here: %v", addr, err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return ln
}
