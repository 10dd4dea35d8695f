package transport

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A literal address's socket is set up as DialContext's is (no delay,
// the dialer's keep-alive), and its bind leaves the local port to the
// connect (IP_BIND_ADDRESS_NO_PORT), so ports are shared as without one.
func TestLiteralDialerSocketIsDialContexts(t *testing.T) {
	for _, tc := range []struct{ name, listen string }{
		{"IPv4", "127.0.0.1:0"},
		{"IPv6", "[::1]:0"},
	} {
		t.Run(tc.name, func(t *testing.T) { literalSocketIsDialContexts(t, tc.listen) })
	}
}

func literalSocketIsDialContexts(t *testing.T, listen string) {
	ln := acceptAll(t, listen)
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	got, err := literalDialer(d)(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	want, err := d.DialContext(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	opts := func(c net.Conn) map[string]int {
		raw, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		if err := raw.Control(func(fd uintptr) {
			for _, o := range []struct {
				name         string
				level, value int
			}{
				{"TCP_NODELAY", unix.IPPROTO_TCP, unix.TCP_NODELAY},
				{"SO_KEEPALIVE", unix.SOL_SOCKET, unix.SO_KEEPALIVE},
				{"TCP_KEEPIDLE", unix.IPPROTO_TCP, unix.TCP_KEEPIDLE},
				{"TCP_KEEPINTVL", unix.IPPROTO_TCP, unix.TCP_KEEPINTVL},
				{"TCP_KEEPCNT", unix.IPPROTO_TCP, unix.TCP_KEEPCNT},
				{"IP_BIND_ADDRESS_NO_PORT", unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT},
			} {
				v, err := unix.GetsockoptInt(int(fd), o.level, o.value)
				if err != nil {
					t.Fatalf("%s: %v", o.name, err)
				}
				out[o.name] = v
			}
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	g, w := opts(got), opts(want)
	if g["IP_BIND_ADDRESS_NO_PORT"] != 1 {
		t.Errorf("IP_BIND_ADDRESS_NO_PORT %d, want 1: the bind before the connect would pick the local port", g["IP_BIND_ADDRESS_NO_PORT"])
	}
	delete(g, "IP_BIND_ADDRESS_NO_PORT")
	delete(w, "IP_BIND_ADDRESS_NO_PORT")
	for k, v := range w {
		if g[k] != v {
			t.Errorf("%s: literal dial %d, DialContext %d", k, g[k], v)
		}
	}
	if la := got.LocalAddr().(*net.TCPAddr); !la.IP.IsLoopback() || la.Port == 0 {
		t.Errorf("local address %v, want the loopback address the route gives and a port", la)
	}
}
