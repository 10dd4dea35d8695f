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
	var raw syscall.RawConn
	switch t := c.(type) {
	case *tsConn:
		raw = t.raw
	case syscall.Conn:
		r, err := t.SyscallConn()
		if err != nil {
			return false
		}
		raw = r
	default:
		return false
	}
	var state uint8
	var ok bool
	if err := raw.Control(func(fd uintptr) {
		info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		if err == nil {
			state, ok = info.State, true
		}
	}); err != nil || !ok {
		return false
	}
	return state == tcpCloseWait || state == tcpClose
}

// TCP states (include/net/tcp_states.h): CLOSE_WAIT, the server's FIN
// arrived; CLOSE, a reset ended the connection.
const (
	tcpClose     = 7
	tcpCloseWait = 8
)
