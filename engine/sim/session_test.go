package sim

import (
	"net/http"
	"strings"
	"testing"
)

// The simulator echoes the route session header, as a route node does, on
// every answer that was sent one, and adds none otherwise.
func TestEchoesSessionHeader(t *testing.T) {
	ts := startServer(t, fastConfig())
	for _, tc := range []struct {
		name, path, session string
	}{
		{name: "completion with a session", path: "/v1/completions", session: "route-7"},
		{name: "health with a session", path: "/health", session: "route-8"},
		{name: "completion without one", path: "/v1/completions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method, body := http.MethodPost, strings.NewReader(`{"model":"tollgate-sim","prompt":"hi","max_tokens":1}`)
			if tc.path == "/health" {
				method, body = http.MethodGet, strings.NewReader("")
			}
			req, err := http.NewRequestWithContext(t.Context(), method, ts.url+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.session != "" {
				req.Header.Set(SessionHeader, tc.session)
			}
			resp, err := ts.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.Header.Get(SessionHeader); resp.StatusCode != 200 || got != tc.session {
				t.Errorf("HTTP %d, %s: %q, want %q", resp.StatusCode, SessionHeader, got, tc.session)
			}
		})
	}
}
