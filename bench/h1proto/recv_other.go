//go:build !linux

package main

import (
	"errors"
	"net"
)

// recvReader has no kernel receive timestamps off Linux; only the
// variants without them run.
type recvReader struct{ plainReader }

func newRecvReader(*net.TCPConn, bool) (*recvReader, error) {
	return nil, errors.New("kernel receive timestamps (SO_TIMESTAMPNS) are Linux only")
}
