//go:build !linux

package transport

import (
	"context"
	"errors"
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

// Without recvmsg there is no socket read of its own to hand over:
// bodies are read with Read (h1Body.readEach checks canReadEach).
func (p *poolConn) canReadEach() bool { return false }

func (p *poolConn) readEach(*sync.Pool, func([]byte) bool) error { return errors.ErrUnsupported }
