// Package bare is the bare Go reader the benches compare tollgate's client
// against: one goroutine per connection reading into one reused buffer,
// no HTTP parsing, no SSE parsing, nothing kept. bench/tcpfloor runs it
// on raw TCP, bench/regress on tollgate serve's HTTP streams; both read
// through Drain, so the floor is defined once.
package bare

import (
	"errors"
	"io"
	"net"
)

// ReadBytes is the buffer each stream reads into, net/http's old default
// read size: the floor reads as much as one read can return.
const ReadBytes = 64 << 10

// Drain reads c into buf until EOF, or until each (when set), called with
// what one read returned, says the stream is done (a response on a kept-alive
// connection), and returns the bytes read.
func Drain(c net.Conn, buf []byte, each func([]byte) (done bool)) (int64, error) {
	var total int64
	for {
		n, err := c.Read(buf)
		total += int64(n)
		if n > 0 && each != nil && each(buf[:n]) {
			return total, nil
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}
