//go:build linux

package transport

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerClosed reports whether the kernel has seen the server end the TCP
// connection (its FIN or RST arrived), read through TCP_INFO: no read, so
// it neither races the transport's read loop parked on the socket nor
// takes a byte from it. It is false when the state cannot be read.
func peerClosed(c net.Conn) bool {
	raw := rawConnOf(c)
	if raw == nil {
		return false
	}
	var state uint8
	var ok bool
	if err := raw.Control(func(fd uintptr) {
		// tcpi_state is struct tcp_info's first byte, and the kernel
		// copies as much of the struct as is asked for: one byte, where
		// GetsockoptTCPInfo allocates the whole struct (280 B a request).
		st, err := unix.GetsockoptByte(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		if err == nil {
			state, ok = st, true
		}
	}); err != nil || !ok {
		return false
	}
	return state == tcpCloseWait || state == tcpClose
}

// unreadBytes is how many received bytes wait unread in c's socket
// (SIOCINQ): on an idle connection, bytes no request asked for. net/http's
// read loop, parked on every idle connection, closes one that receives
// any ("Unsolicited response received on idle HTTP channel"); h1.go's idle
// connections have no reader, so it looks at checkout. 0 when it cannot
// be read.
func unreadBytes(c net.Conn) int {
	raw := rawConnOf(c)
	if raw == nil {
		return 0
	}
	n := 0
	if err := raw.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ); err == nil {
			n = v
		}
	}); err != nil {
		return 0
	}
	return n
}

// rawConnOf is c's socket, through the timestamping conn or any conn that
// exposes it; nil when there is none.
func rawConnOf(c net.Conn) syscall.RawConn {
	switch t := c.(type) {
	case *poolConn:
		return rawConnOf(t.Conn)
	case *tsConn:
		return t.raw
	case syscall.Conn:
		if r, err := t.SyscallConn(); err == nil {
			return r
		}
	}
	return nil
}

// TCP states (include/net/tcp_states.h): CLOSE_WAIT, the server's FIN
// arrived; CLOSE, a reset ended the connection.
const (
	tcpClose     = 7
	tcpCloseWait = 8
)
