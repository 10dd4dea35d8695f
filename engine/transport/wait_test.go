package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// getWire is enough of a wire for the calls around a run.
type getWire struct{ nameWire }

func (getWire) Header(http.Header, string) {}

// The deadlines the docs state (scenarios.md, timeouts): each call around a
// run has its own, and a shorter total timeout bounds it more.
func TestCallsAroundTheRunHaveTheirDeadlines(t *testing.T) {
	if defaultWaits != (waits{metadata: 5 * time.Second, models: 10 * time.Second, metrics: 10 * time.Second, aux: 30 * time.Second}) {
		t.Errorf("deadlines %+v, not those the docs state", defaultWaits)
	}
	c, err := New(Config{BaseURL: "http://127.0.0.1:1"}, getWire{})
	if err != nil {
		t.Fatal(err)
	}
	if c.waits != defaultWaits || c.wait(c.waits.metadata) != MetadataTimeout {
		t.Errorf("a new client waits %+v", c.waits)
	}
	c, err = New(Config{BaseURL: "http://127.0.0.1:1", TotalTimeout: time.Second}, getWire{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.wait(c.waits.metrics); got != time.Second {
		t.Errorf("under a 1s total, /metrics waits %v", got)
	}
}

// silentServer accepts every request and never answers one, until the
// request is given up; hits counts them by path.
func silentServer(t *testing.T) (*httptest.Server, *sync.Map) {
	t.Helper()
	var hits sync.Map
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := hits.LoadOrStore(r.URL.Path, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		_, _ = io.Copy(io.Discard, r.Body) // then the server sees the client leave
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // runs first
	return srv, &hits
}

func hitsOf(hits *sync.Map, path string) int64 {
	if n, ok := hits.Load(path); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// A server that never answers a call around the run holds it for that
// call's deadline, here a configured 20ms; the error says so (ErrNoAnswer,
// context.DeadlineExceeded) and names it. A /metrics that went unanswered
// is not asked again. Nothing here measures time: a missing deadline
// would hang the test.
func TestUnansweredCallsEndAtTheirDeadline(t *testing.T) {
	const d = 20 * time.Millisecond
	srv, hits := silentServer(t)
	c, err := New(Config{BaseURL: srv.URL}, getWire{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.waits = waits{metadata: d, models: d, metrics: d, aux: d}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrNoAnswer) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 20ms") {
			t.Errorf("%s: %v, want no answer within 20ms", what, err)
		}
	}
	t.Run("metadata", func(t *testing.T) {
		for path, e := range c.Metadata(t.Context()) {
			if !strings.Contains(e.Note, "no answer within 20ms") {
				t.Errorf("%s: note %q", path, e.Note)
			}
		}
	})
	t.Run("model list", func(t *testing.T) {
		_, err := c.Models(t.Context())
		check("models", err)
	})
	t.Run("metrics, asked once", func(t *testing.T) {
		_, err := c.ScrapeMetrics(t.Context())
		check("first scrape", err)
		_, err = c.ScrapeMetrics(t.Context())
		if !errors.Is(err, ErrNoAnswer) || !strings.Contains(err.Error(), "no answer within 20ms earlier in this run; not asked again") || hitsOf(hits, "/metrics") != 1 {
			t.Errorf("second scrape: %v; /metrics asked %d times", err, hitsOf(hits, "/metrics"))
		}
	})
	t.Run("token count", func(t *testing.T) {
		var out struct{}
		check("count", c.postJSON(t.Context(), "/tokenize", map[string]string{"content": "x"}, &out))
	})
	t.Run("the caller's end is not the deadline", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := c.Models(ctx)
		if err == nil || errors.Is(err, ErrNoAnswer) {
			t.Errorf("canceled by the caller: %v", err)
		}
	})
}

// The five metadata endpoints are asked at once: a server that answers
// only once all five are waiting answers them all within the deadline.
func TestMetadataEndpointsAskedAtOnce(t *testing.T) {
	paths := MetadataPaths()
	var waiting atomic.Int64
	all := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if waiting.Add(1) == int64(len(paths)) {
			close(all)
		}
		select {
		case <-all:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL}, getWire{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := c.Metadata(t.Context())
	for _, p := range paths {
		if e := got[p]; e.Status != http.StatusOK || string(e.JSON) != `{"ok":true}` {
			t.Errorf("%s: %+v", p, e)
		}
	}
}
