//go:build linux

package transport

import (
	"context"
	"io"
	"net"
	"sync"
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

	// Read's recvmsg, built once per connection: a closure made per call
	// (RawConn.Read takes a func) and unix.Recvmsg's own headers cost
	// three heap allocations per read on the client's hot path. Reads of
	// one connection never overlap (net/http has one reader per
	// connection, and poll.FD serialises them), so the state can live here.
	msg  unix.Msghdr
	iov  unix.Iovec
	n    int
	err  syscall.Errno
	recv func(fd uintptr) bool

	// readEach's state, for the same reasons (one reader, no closure per
	// call).
	each     func(fd uintptr) bool
	eachBufs *sync.Pool
	eachBuf  *[]byte
	eachFn   func(p []byte) bool
	eachStop bool
}

// newTSConn wraps c, whose socket raw has SO_TIMESTAMPNS on.
func newTSConn(c net.Conn, raw syscall.RawConn) *tsConn {
	t := &tsConn{Conn: c, raw: raw, oob: make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))))}
	t.msg.Iov, t.msg.Iovlen = &t.iov, 1
	t.msg.Control = &t.oob[0]
	t.recv = func(fd uintptr) bool {
		t.n, t.err = t.recvmsg(fd)
		return t.err != unix.EAGAIN
	}
	t.each = t.readEachStep
	return t
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
		return newTSConn(c, raw), nil
	}
}

// Read is net.Conn's Read through recvmsg, so the control message with the
// receive timestamp comes along. Deadlines and cancellation still work:
// the runtime poller parks the goroutine when the socket has nothing.
func (c *tsConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.iov.Base = &p[0]
	c.iov.SetLen(len(p))
	c.n, c.err = 0, 0
	err := c.raw.Read(c.recv)
	n, errno := c.n, c.err
	// Drop the reference to p: the connection must not keep a caller's
	// buffer alive.
	c.iov.Base = nil
	if err == nil && errno != 0 {
		err = errno
	}
	if err != nil {
		return max(n, 0), err
	}
	if n == 0 {
		return 0, io.EOF
	}
	if ts, ok := parseTimestampNS(c.oob[:c.msg.Controllen]); ok {
		c.last.Store(ts)
	}
	return n, nil
}

// readEach reads until fn says stop, handing fn the bytes of each read in
// a buffer borrowed from bufs, all in one RawConn.Read: no call through
// the body's layers and no poller set-up per read, and the buffer goes
// back to bufs while the reader waits, so a parked stream holds none.
// fn's bytes are the buffer's: valid until it returns. It returns nil when
// fn stopped, io.EOF at the peer's close.
//
// After each read it tries again before it waits, as Read's next call
// would, and that try usually finds nothing (EAGAIN). Waiting at once
// after a read shorter than its buffer (which emptied the queue) would
// save the try, but is not safe: a FIN or RST that arrives with the last
// bytes, before the poller reports them, shares their one readiness, so
// nothing wakes the wait. Every request of
// TestStreamEndsAtACloseThatCameWithItsLastBytes then hangs until its
// timeout; the embedded simulator's reset_mid_stream fault hung 6 of 40.
func (c *tsConn) readEach(bufs *sync.Pool, fn func(p []byte) (more bool)) error {
	c.eachBufs, c.eachFn, c.eachStop = bufs, fn, false
	c.n, c.err = 0, 0
	err := c.raw.Read(c.each)
	c.putEachBuf()
	c.eachBufs, c.eachFn = nil, nil
	switch {
	case err != nil:
		return err
	case c.err != 0:
		return c.err
	case c.eachStop:
		return nil
	}
	return io.EOF
}

// canReadEach reports whether readEach reads the socket itself.
func (p *poolConn) canReadEach() bool {
	_, ok := p.Conn.(*tsConn)
	return ok
}

// readEach is tsConn.readEach (canReadEach), noting the end of reading as
// Read does.
func (p *poolConn) readEach(bufs *sync.Pool, fn func(p []byte) (more bool)) error {
	err := p.Conn.(*tsConn).readEach(bufs, fn)
	if err != nil {
		p.readEnded.Store(true)
	}
	return err
}

// recvmsg reads the socket fd into iov once, retrying EINTR.
func (c *tsConn) recvmsg(fd uintptr) (int, syscall.Errno) {
	for {
		// The kernel rewrites these on each call, failed ones too.
		c.msg.SetControllen(len(c.oob))
		c.msg.Flags = 0
		r, _, e := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&c.msg)), 0)
		if e != unix.EINTR {
			return int(r), e
		}
	}
}

// readEachStep is readEach's RawConn.Read function: true ends the read.
func (c *tsConn) readEachStep(fd uintptr) bool {
	for {
		if c.eachBuf == nil {
			c.eachBuf = c.eachBufs.Get().(*[]byte)
		}
		p := *c.eachBuf
		c.iov.Base = &p[0]
		c.iov.SetLen(len(p))
		n, e := c.recvmsg(fd)
		if e == unix.EAGAIN {
			c.putEachBuf()
			return false
		}
		if e != 0 {
			c.err = e
			return true
		}
		if n == 0 {
			return true // the peer's close
		}
		if ts, ok := parseTimestampNS(c.oob[:c.msg.Controllen]); ok {
			c.last.Store(ts)
		}
		if !c.eachFn(p[:n]) {
			c.eachStop = true
			return true
		}
	}
}

func (c *tsConn) putEachBuf() {
	c.iov.Base = nil
	if c.eachBuf != nil {
		c.eachBufs.Put(c.eachBuf)
		c.eachBuf = nil
	}
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
