package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/sim"
)

// TestBareReaderReadsWholeResponsesOnKeptAliveConnections runs the bare
// reader against the embedded simulator: every request is answered in
// full (its bytes) and each stream sends all its requests on one
// connection, so the reader found each body's end — neither too soon nor
// never (that would hang until the server's idle timeout).
func TestBareReaderReadsWholeResponsesOnKeptAliveConnections(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		conc, requests, tokens int
	}{
		{"one stream", 1, 3, 8},
		{"streams sharing requests", 3, 10, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := sim.New(sim.Config{DecodeStep: 200 * time.Microsecond, TTFTBase: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			srv := httptest.NewUnstartedServer(s.Handler())
			var conns atomic.Int64
			srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)

			br, err := readBare(srv.URL, tc.conc, tc.requests, tc.tokens)
			if err != nil {
				t.Fatal(err)
			}
			if br.Requests != tc.requests {
				t.Errorf("requests %d, want %d", br.Requests, tc.requests)
			}
			if got := conns.Load(); got != int64(tc.conc) {
				t.Errorf("%d connections for %d streams: a response's end was missed or a connection dropped", got, tc.conc)
			}
		})
	}
}
