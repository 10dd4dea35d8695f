//go:build !linux

package transport

import (
	"context"
	"net"
)

// dialsInline: elsewhere every dial is DialContext, which runs on a
// goroutine of its own (h1Transport.dialFitting).
const dialsInline = false

func literalDialer(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return d.DialContext
}
