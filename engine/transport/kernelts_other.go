//go:build !linux

package transport

import (
	"context"
	"net"
	"sync"
	"time"
)

// Kernel receive timestamps are Linux-only; elsewhere reads are timed when
// they return.
func kernelTimestampDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return dial
}

type tsConn struct{ net.Conn }

func (c *tsConn) lastReceive() (time.Time, bool) { return time.Time{}, false }

// readEach is Read in a loop here: without recvmsg there is nothing to
// save (see the Linux one).
func (c *tsConn) readEach(bufs *sync.Pool, fn func(p []byte) (more bool)) error {
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	for {
		n, err := c.Read(*bp)
		if n > 0 && !fn((*bp)[:n]) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
