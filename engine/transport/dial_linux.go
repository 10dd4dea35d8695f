package transport

import (
	"context"
	"errors"
	"net"
	"net/http/httptrace"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// dialsInline: literalDialer's dial of a literal address fits under a
// request's frames in its 8 KB stack, so h1Transport dials it there.
const dialsInline = true

// literalDialer dials an address whose host is an IP literal (what a
// benchmark's base URL usually names) with net.Dialer.DialTCP, and any
// other through DialContext. DialTCP skips the name resolution and the
// parallel dial of DialContext, whose call chain is the deepest of a
// request: a DialContext needs an 8 KB stack of its own, DialTCP fits in
// the request's goroutine, so a run that opens its streams together holds
// no second stack per stream while they connect (bench/client -only
// streams: 2,000 streams, peak RSS 86 → 73 MB).
//
// Where DialTCP differs from DialContext, this makes up for it, so the
// two are one dial to the caller (TestLiteralDialerIsDialContextToTheTraceAndTheCaller):
//   - it binds the socket to the wildcard address before connecting (it
//     takes a local address, zero here): IP_BIND_ADDRESS_NO_PORT leaves the
//     choice of the local port to the connect, as without the bind, so
//     ports are shared among destinations as before;
//   - it calls no trace hooks: this calls ConnectStart and ConnectDone
//     around it with the arguments DialContext gives them, so connect_ms
//     keeps its definition, and none for a context already done, which
//     DialContext fails before it connects;
//   - its errors name that local address (":0->"): they are given none.
func literalDialer(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	lit := *d
	lit.ControlContext = func(_ context.Context, _, _ string, c syscall.RawConn) error {
		// Best effort: where the kernel lacks the option (before 4.2),
		// the bind picks the port.
		_ = c.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
		})
		return nil
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ap, ok := literalAddr(network, addr)
		if !ok {
			return d.DialContext(ctx, network, addr)
		}
		var trace *httptrace.ClientTrace
		if ctx.Err() == nil {
			trace = httptrace.ContextClientTrace(ctx)
		}
		raddr := ap.String()
		if trace != nil && trace.ConnectStart != nil {
			trace.ConnectStart(network, raddr)
		}
		c, err := lit.DialTCP(ctx, network, netip.AddrPort{}, ap)
		var oe *net.OpError
		if errors.As(err, &oe) {
			oe.Source = nil
		}
		if trace != nil && trace.ConnectDone != nil {
			trace.ConnectDone(network, raddr, err)
		}
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}
