//go:build linux

package transport

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tsConn reads with recvmsg and SO_TIMESTAMPNS, keeping the kernel's receive
// time of the data each read returned. A timestamp taken after the read
// returns includes however long the goroutine waited to be scheduled; on a
// busy client that is milliseconds, the kernel's is not.
type tsConn struct {
	net.Conn
	raw  syscall.RawConn // net's interface to the socket; the calls go through unix
	last atomic.Int64    // unix ns of the newest data returned by Read; 0 if none
	oob  []byte
}

// kernelTimestampDialer wraps TCP connections in tsConn when the socket
// accepts SO_TIMESTAMPNS; any other connection is returned as it is.
func kernelTimestampDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc, ok := c.(*net.TCPConn)
		if !ok {
			return c, nil
		}
		raw, err := tc.SyscallConn()
		if err != nil {
			return c, nil
		}
		var serr error
		if err := raw.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		}); err != nil || serr != nil {
			return c, nil
		}
		return &tsConn{Conn: c, raw: raw, oob: make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))))}, nil
	}
}

// Read is net.Conn's Read through recvmsg, so the control message with the
// receive timestamp comes along. Deadlines and cancellation still work:
// the runtime poller parks the goroutine when the socket has nothing.
func (c *tsConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n, oobn int
	var rerr error
	err := c.raw.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), p, c.oob, 0)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		if n < 0 {
			n = 0
		}
		return n, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	if ts, ok := parseTimestampNS(c.oob[:oobn]); ok {
		c.last.Store(ts)
	}
	return n, nil
}

// parseTimestampNS finds the SO_TIMESTAMPNS control message without
// allocating (this runs once per read, on the client's hot path, so not
// unix.ParseSocketControlMessage, which builds a slice).
func parseTimestampNS(oob []byte) (int64, bool) {
	for len(oob) >= unix.CmsgLen(0) {
		h, data, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			return 0, false
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SO_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&data[0]))
			return ts.Nano(), true
		}
		oob = rest
	}
	return 0, false
}

// lastReceive returns the kernel receive time of the newest data read.
func (c *tsConn) lastReceive() (time.Time, bool) {
	ns := c.last.Load()
	if ns == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}
