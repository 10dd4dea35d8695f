package seam

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// wire owns the client side of a live seam's connections: it dials them
// (straight to the endpoint, or to the relay), counts every dial and every
// byte written and read, and knows which sockets are still open. Nothing
// here is bookkeeping of a simulation: a connection is open until its
// socket's Close has run.
type wire struct {
	// addr, when set, is dialled instead of the endpoint (the relay).
	addr    string
	timeout time.Duration

	dials   atomic.Int64
	written atomic.Int64
	read    atomic.Int64

	mu   sync.Mutex
	open map[*countedConn]struct{}
	// leak is how many of the first connections keep their socket open
	// when closed (faults.leak_connections); held are those connections.
	leak int
	held []*countedConn
}

func newWire(addr string, connectTimeout time.Duration, leak int) *wire {
	return &wire{addr: addr, timeout: connectTimeout, leak: leak, open: map[*countedConn]struct{}{}}
}

// dial is the http.Transport's DialContext: every call is a real dial.
func (w *wire) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n := w.dials.Add(1)
	if w.addr != "" {
		addr = w.addr
	}
	d := net.Dialer{Timeout: w.timeout}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("seam: dial %s: %w", addr, err)
	}
	cc := &countedConn{Conn: c, w: w, leaked: int(n) <= w.leak}
	w.mu.Lock()
	w.open[cc] = struct{}{}
	if cc.leaked {
		w.held = append(w.held, cc)
	}
	w.mu.Unlock()
	return cc, nil
}

// openConns is the number of sockets dialled and not yet closed.
func (w *wire) openConns() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.open)
}

// waitClosed waits until every socket not held open by a fault has
// closed, or ctx ends.
func (w *wire) waitClosed(ctx context.Context) {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		w.mu.Lock()
		n, held := len(w.open), len(w.held)
		w.mu.Unlock()
		if n <= held {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// release really closes the sockets a fault kept open, once the cleanup
// snapshot has counted them, so a leak drill leaks nothing past the run.
func (w *wire) release() {
	w.mu.Lock()
	held := w.held
	w.held = nil
	w.mu.Unlock()
	for _, c := range held {
		c.leaked = false
		_ = c.Close()
	}
}

// countedConn counts the bytes through a socket into its wire and takes
// itself out of the open set when the socket closes.
type countedConn struct {
	net.Conn
	w      *wire
	leaked bool
	once   sync.Once
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.w.read.Add(int64(n))
	return n, err
}

// Write counts the bytes before they leave, and takes back what was not
// sent: counted after, a write could be answered and its transfer measured
// before the writer's goroutine got to count it.
func (c *countedConn) Write(p []byte) (int, error) {
	c.w.written.Add(int64(len(p)))
	n, err := c.Conn.Write(p)
	if n < len(p) {
		c.w.written.Add(int64(n - len(p)))
	}
	return n, err
}

// Close closes the socket, unless a fault holds it open: then the caller
// believes it closed and the socket stays, which the cleanup snapshot sees.
func (c *countedConn) Close() error {
	c.w.mu.Lock()
	leaked := c.leaked
	c.w.mu.Unlock()
	if leaked {
		return nil
	}
	var err error
	c.once.Do(func() {
		err = c.Conn.Close()
		c.w.mu.Lock()
		delete(c.w.open, c)
		c.w.mu.Unlock()
	})
	return err
}
