package seam

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/report"
)

// Relay is a forwarding TCP relay on loopback: each connection it accepts
// is paired with one it dials to the upstream, and bytes are copied both
// ways until either side closes. It adds a hop and nothing else (no
// buffering beyond a copy, no delay), and counts what it carried.
type Relay struct {
	ln       net.Listener
	upstream string
	timeout  time.Duration

	accepted, dialled atomic.Int64
	up, down          atomic.Int64
	open              atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// StartRelay listens on 127.0.0.1 with a random port and forwards to
// upstream (host:port). Close stops it.
func StartRelay(ctx context.Context, upstream string, dialTimeout time.Duration) (*Relay, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("relay: listen: %w", err)
	}
	r := &Relay{ln: ln, upstream: upstream, timeout: dialTimeout, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// Addr is the relay's listening address, host:port.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		r.accepted.Add(1)
		if !r.track(c) {
			_ = c.Close()
			return
		}
		r.open.Add(1)
		r.wg.Add(1)
		go r.serve(c)
	}
}

// track remembers a connection so Close can end it; false once closed.
func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	_ = c.Close()
}

// serve pairs one client connection with an upstream one.
func (r *Relay) serve(client net.Conn) {
	defer r.wg.Done()
	defer r.open.Add(-1)
	defer r.untrack(client)
	d := net.Dialer{Timeout: r.timeout}
	up, err := d.Dial("tcp", r.upstream)
	if err != nil {
		return // the client sees its connection closed before any response
	}
	r.dialled.Add(1)
	if !r.track(up) {
		_ = up.Close()
		return
	}
	defer r.untrack(up)
	var wg sync.WaitGroup
	wg.Add(2)
	// A client that closes is gone: both sides end. An upstream that closes
	// (after a Connection: close response) is passed on as a half close, so
	// the client reads what was sent and then EOF, and closes.
	go func() { defer wg.Done(); pipe(up, client, &r.up, false) }()
	go func() { defer wg.Done(); pipe(client, up, &r.down, true) }()
	wg.Wait()
}

// pipe copies src to dst, counting. At EOF it half-closes dst when half is
// set, else closes both; an error on either side closes both.
func pipe(dst, src net.Conn, n *atomic.Int64, half bool) {
	buf := make([]byte, 32<<10)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			w, werr := dst.Write(buf[:k])
			n.Add(int64(w))
			if werr != nil {
				_ = src.Close()
				_ = dst.Close()
				return
			}
		}
		if err != nil {
			if half && errors.Is(err, io.EOF) {
				if cw, ok := dst.(interface{ CloseWrite() error }); ok {
					_ = cw.CloseWrite()
					return
				}
			}
			_ = dst.Close()
			_ = src.Close()
			return
		}
	}
}

// waitIdle waits until at most keep connection pairs are open (those of
// client sockets still open), or until ctx ends: the relay sees a client's
// close a moment after it happens.
func (r *Relay) waitIdle(ctx context.Context, keep int) {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for r.open.Load() > int64(keep) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Counters are what the relay carried so far.
func (r *Relay) Counters() report.RelayCounters {
	return report.RelayCounters{
		Connections:         int(r.accepted.Load()),
		UpstreamConnections: int(r.dialled.Load()),
		BytesToUpstream:     r.up.Load(),
		BytesFromUpstream:   r.down.Load(),
		OpenConnections:     int(r.open.Load()),
	}
}

// Close stops accepting, ends every connection and waits for them.
func (r *Relay) Close() {
	r.mu.Lock()
	r.closed = true
	conns := make([]net.Conn, 0, len(r.conns))
	for c := range r.conns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	_ = r.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	r.wg.Wait()
}
