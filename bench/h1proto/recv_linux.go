//go:build linux

package main

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// recvReader reads with recvmsg and SO_TIMESTAMPNS through the runtime
// poller (RawConn.Read), as engine/transport's tsConn does, and counts
// the tries that failed with EAGAIN.
type recvReader struct {
	raw  syscall.RawConn
	msg  unix.Msghdr
	iov  unix.Iovec
	oob  []byte
	n    int
	err  syscall.Errno
	recv func(fd uintptr) bool

	// skipAfterShort: after a read shorter than its buffer the queue was
	// empty, so the next call goes to the poller before trying: the idea
	// of saving the failed try (EAGAIN) after each data read. It is NOT
	// safe through RawConn: RawRead's prepareRead (runtime pollReset)
	// clears the readiness the poller recorded for data that came since
	// that read, so the wait can park with data queued until the next
	// segment's edge (forever at a stream's end). Measured only: late
	// counts the reads that found data older than their call (a missed
	// wake-up); a read deadline (lostWakeupWait, re-armed from now each
	// time it passes) ends a wait that missed its data, and lost counts
	// the deadlines after which data was already queued.
	skipAfterShort bool
	short, skip    bool
	tries          int // recvmsg calls in this read
	tc             *net.TCPConn

	c counts
}

func newRecvReader(tc *net.TCPConn, skipAfterShort bool) (*recvReader, error) {
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, serr
	}
	r := &recvReader{raw: raw, tc: tc, skipAfterShort: skipAfterShort, oob: make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))))}
	r.msg.Iov, r.msg.Iovlen = &r.iov, 1
	r.msg.Control = &r.oob[0]
	r.recv = func(fd uintptr) bool {
		if r.skip {
			// One pass through the poller's wait, then a real try: a
			// readiness the poller kept from before returns at once.
			r.skip = false
			r.c.skipped++
			return false
		}
		r.tries++
		for {
			r.msg.SetControllen(len(r.oob))
			r.msg.Flags = 0
			n, _, e := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), 0)
			if e == unix.EINTR {
				continue
			}
			if e == unix.EAGAIN {
				r.c.eagain++
				return false
			}
			r.n, r.err = int(n), e
			return true
		}
	}
	return r, nil
}

func (r *recvReader) read(p []byte) (int, int64, error) {
	if len(p) == 0 {
		return 0, 0, nil
	}
	r.iov.Base = &p[0]
	r.iov.SetLen(len(p))
	r.n, r.err = 0, 0
	r.skip = r.skipAfterShort && r.short
	var calledNS int64
	if r.skip {
		calledNS = time.Now().UnixNano()
	}
	r.tries = 0
	err := r.raw.Read(r.recv)
	// The wait may have missed its data: try at once, and count it lost
	// if the first try finds data. A wait that had nothing to miss (a
	// slow server) waits again, up to lostWakeupWaits times.
	for range lostWakeupWaits {
		if !r.skipAfterShort || !errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err = r.tc.SetReadDeadline(time.Now().Add(lostWakeupWait)); err != nil {
			break
		}
		r.skip, r.tries = false, 0
		err = r.raw.Read(r.recv)
		if err == nil && r.tries == 1 && r.n > 0 {
			r.c.lost++
		}
	}
	r.iov.Base = nil
	n := r.n
	if err == nil && r.err != 0 {
		err = r.err
	}
	if err != nil {
		return max(n, 0), 0, err
	}
	if n == 0 {
		return 0, 0, io.EOF
	}
	r.c.reads++
	r.short = n < len(p)
	ts := timestampNS(r.oob[:r.msg.Controllen])
	if calledNS != 0 && ts != 0 && ts < calledNS {
		r.c.late++
		r.c.lateMaxNS = max(r.c.lateMaxNS, time.Now().UnixNano()-ts)
	}
	return n, ts, nil
}

func (r *recvReader) counts() counts { return r.c }

// timestampNS is the SO_TIMESTAMPNS control message's time, 0 if none.
func timestampNS(oob []byte) int64 {
	for len(oob) >= unix.CmsgLen(0) {
		h, data, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SO_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			return (*unix.Timespec)(unsafe.Pointer(&data[0])).Nano()
		}
		oob = rest
	}
	return 0
}
