package sim

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// A fresh connection whose client is slow to send its first request
// outlives the idle timeout; once it has carried a request, the idle
// timeout closes it. Both waits are bounded by deadlines, not asserted.
func TestFreshConnectionOutlivesTheIdleTimeout(t *testing.T) {
	const idle = 200 * time.Millisecond
	s, err := New(Config{IdleTimeout: idle})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base, err := s.Start(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(3 * idle) // a client busy connecting others
	if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: sim\r\n\r\n"); err != nil {
		t.Fatalf("first request: %v", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("a fresh connection idle %v past the idle timeout was closed: %v", 3*idle, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// Between requests the idle timeout applies: the server closes.
	_, err = br.ReadByte()
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal("the server did not close the idle connection within 10 s")
		}
		t.Fatalf("read after the response: %v, want EOF", err)
	}
}

func TestIdleTimeoutSettings(t *testing.T) {
	for _, tt := range []struct {
		idle time.Duration
		want string
	}{{5 * time.Second, "timeout=5"}, {1500 * time.Millisecond, "timeout=1"}, {200 * time.Millisecond, ""}} {
		if got := keepAliveHeader(tt.idle); got != tt.want {
			t.Errorf("keepAliveHeader(%v) = %q, want %q", tt.idle, got, tt.want)
		}
	}
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hs := s.HTTPServer()
	if hs.IdleTimeout != DefaultConfig().IdleTimeout || hs.ReadHeaderTimeout <= hs.IdleTimeout {
		t.Errorf("idle %v, first request %v: the first request must wait longer", hs.IdleTimeout, hs.ReadHeaderTimeout)
	}
	if _, err := New(Config{IdleTimeout: -time.Second}); err == nil {
		t.Error("a negative idle timeout was accepted")
	}
}
