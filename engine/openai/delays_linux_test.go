//go:build linux

package openai

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tollgate-dev/tollgate/engine/measure"
)

// lockstep streams like paced, but sends an event only once the client has
// read every byte before it (the server's socket has nothing unacked, the
// client's nothing unread), and notes when it wrote each token. Each read
// of the client then returns one event, so each kernel receive timestamp
// lies within its token's write, however late anything was scheduled.
type lockstep struct {
	firstDelay, gap time.Duration
	tokens          int

	mu      sync.Mutex
	recv    time.Time   // the handler began (after the client's start)
	written [][2]int64  // per token: unix ns before and after its write
	headers http.Header // of the request
	path    string      // of the request
	err     error       // the sockets could not be found or read
}

func (h *lockstep) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	recv := time.Now()
	h.mu.Lock()
	h.recv, h.headers, h.path = recv, r.Header.Clone(), r.URL.Path
	h.mu.Unlock()
	drained, err := drainWait(r)
	if err != nil {
		h.fail(err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sseHeaders(w)
	fmt.Fprint(w, ": keep-alive\n\n")
	sendEvent(w, `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
	for i := 0; i < h.tokens; i++ {
		wait := h.gap
		if i == 0 {
			wait = h.firstDelay
		}
		if err := drained(); err != nil {
			h.fail(err)
			return
		}
		if !sleepCtx(r, wait) {
			return
		}
		before := time.Now().UnixNano()
		sendEvent(w, contentChunk(fmt.Sprintf(" t%d", i)))
		after := time.Now().UnixNano()
		h.mu.Lock()
		h.written = append(h.written, [2]int64{before, after})
		h.mu.Unlock()
	}
	sendEvent(w, `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`)
	sendEvent(w, fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":%d,"prompt_tokens_details":{"cached_tokens":2}}}`, h.tokens))
	sendEvent(w, "[DONE]")
}

func (h *lockstep) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = err
	}
}

// drainWait finds both ends of r's connection among this process's file
// descriptors (client and server share the process) and returns a wait,
// bounded by r's context, until everything sent has been read by the
// client: the server's socket holds nothing unacknowledged (it is in the
// client's queue) and the client's queue holds nothing unread.
func drainWait(r *http.Request) (func() error, error) {
	client, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return nil, err
	}
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return nil, fmt.Errorf("no local address for %s", r.RemoteAddr)
	}
	server, err := netip.ParseAddrPort(la.String())
	if err != nil {
		return nil, err
	}
	sfd, err := socketFD(server, client)
	if err != nil {
		return nil, err
	}
	cfd, err := socketFD(client, server)
	if err != nil {
		return nil, err
	}
	return func() error {
		for {
			out, err := unix.IoctlGetInt(sfd, unix.SIOCOUTQ)
			if err != nil {
				return fmt.Errorf("SIOCOUTQ: %w", err)
			}
			in, err := unix.IoctlGetInt(cfd, unix.SIOCINQ)
			if err != nil {
				return fmt.Errorf("SIOCINQ: %w", err)
			}
			if out == 0 && in == 0 {
				return nil
			}
			select {
			case <-r.Context().Done():
				return r.Context().Err()
			case <-time.After(100 * time.Microsecond):
			}
		}
	}, nil
}

// socketFD is the descriptor of this process's TCP socket from local to peer.
func socketFD(local, peer netip.AddrPort) (int, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ln, err := unix.Getsockname(fd); err != nil || addrPort(ln) != local {
			continue
		}
		if pn, err := unix.Getpeername(fd); err == nil && addrPort(pn) == peer {
			return fd, nil
		}
	}
	return 0, fmt.Errorf("no socket %s → %s among /proc/self/fd", local, peer)
}

func addrPort(sa unix.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr).Unmap(), uint16(a.Port))
	}
	return netip.AddrPort{}
}

// The client's figures against what the server did, not against the
// delays it was asked to inject: on a busy machine sleeps run long and
// goroutines wait to run, so every bound here is a causal one, from the
// server's own record of when it wrote each token and the kernel's
// receive timestamps (lockstep keeps one event a read). TTFT lies between
// the server's wait for the first token and that token's write; each
// inter-token gap between the server's gap and its two writes, and at
// least the injected 10 ms, which sleeps cannot shorten.
func TestStreamMeasuresInjectedDelays(t *testing.T) {
	// Wall clocks, not monotonic ones, time kernel stamps (transport's
	// arrival); 1 ms covers their slew over a second.
	const slackMS = 1.0
	h := &lockstep{firstDelay: 50 * time.Millisecond, gap: 10 * time.Millisecond, tokens: 20}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := newClient(t, srv.URL+"/v1/", func(c *Config) {
		c.Headers = map[string]string{"X-Meshnet-Session": "sess-1"}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t0 := time.Now().UnixNano()
	res, err := c.Stream(ctx, chatReq(20))
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		t.Fatal(h.err)
	}
	if len(h.written) != 20 || res.ArrivalClock != measure.ArrivalKernel {
		t.Fatalf("%d tokens written, arrival clock %q: want 20 and kernel timestamps", len(h.written), res.ArrivalClock)
	}
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	recv := h.recv.UnixNano()
	// The client started before the server saw the request, and after t0.
	lo, hi := ms(h.written[0][0]-recv), ms(h.written[0][1]-t0)
	if res.TTFTMS == nil || *res.TTFTMS < 50 || *res.TTFTMS < lo-slackMS || *res.TTFTMS > hi+slackMS {
		t.Errorf("ttft_ms = %v, want within the server's [%.3f, %.3f] and ≥ 50", deref64(res.TTFTMS), lo, hi)
	}
	if len(res.ITLMS) != 19 {
		t.Fatalf("%d inter-token gaps, want 19", len(res.ITLMS))
	}
	var sum, sumLo, sumHi float64
	for i, itl := range res.ITLMS {
		lo, hi := ms(h.written[i+1][0]-h.written[i][1]), ms(h.written[i+1][1]-h.written[i][0])
		if itl < 10 || itl < lo-slackMS || itl > hi+slackMS {
			t.Errorf("itl_ms[%d] = %.3f, want within the server's [%.3f, %.3f] and ≥ 10", i, itl, lo, hi)
		}
		sum, sumLo, sumHi = sum+itl, sumLo+lo, sumHi+hi
	}
	if res.TPOTMS == nil || *res.TPOTMS < 10 || *res.TPOTMS < (sumLo-slackMS)/19 || *res.TPOTMS > (sumHi+slackMS)/19 {
		t.Errorf("tpot_ms = %v, want the mean gap, within [%.3f, %.3f]", deref64(res.TPOTMS), sumLo/19, sumHi/19)
	}
	// The stream ends after the last token's write; TTFB comes no later
	// than the first token.
	if res.TTFBMS == nil || *res.TTFBMS > *res.TTFTMS || res.E2EMS < ms(h.written[19][1]-recv)-slackMS || res.E2EMS < *res.TTFTMS+sum-slackMS {
		t.Errorf("ttfb/e2e inconsistent: ttfb=%v ttft=%v e2e=%v, last token written %.3f ms after the request arrived",
			deref64(res.TTFBMS), deref64(res.TTFTMS), res.E2EMS, ms(h.written[19][1]-recv))
	}
	if *res.CompletionTokens != 20 || *res.PromptTokens != 7 || *res.CachedTokens != 2 ||
		res.TokenCountSource != SourceUsage || !res.DoneSeen || res.HTTPStatus != 200 || res.BytesReceived == 0 ||
		res.FinishReason != "length" || res.KeepAliveComments != 1 || res.DecodeTokensPerS == nil || res.PrefillTokensPerS == nil {
		t.Errorf("result wrong: %+v", res)
	}
	if h.path != "/v1/chat/completions" || h.headers.Get("Authorization") != "Bearer "+testSecret ||
		h.headers.Get("X-Meshnet-Session") != "sess-1" {
		t.Errorf("request wrong: path %s headers %v", h.path, h.headers)
	}
}
