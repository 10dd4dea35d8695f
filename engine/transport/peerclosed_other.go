//go:build !linux

package transport

import "net"

// peerClosed cannot read the TCP state here: a close is then seen only by
// the transport's read loop or by the send itself.
func peerClosed(net.Conn) bool { return false }

// unreadBytes cannot read the socket's queue here: bytes sent on an idle
// connection are then seen only by the next request that reads it.
func unreadBytes(net.Conn) int { return 0 }
