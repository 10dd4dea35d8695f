//go:build !linux

package transport

import (
	"context"
	"net"
	"time"
)

// Kernel receive timestamps are Linux-only; elsewhere reads are timed when
// they return.
func kernelTimestampDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return dial
}

type tsConn struct{ net.Conn }

func (c *tsConn) lastReceive() (time.Time, bool) { return time.Time{}, false }
