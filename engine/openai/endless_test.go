package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/transport/sse"
)

// A stream far longer than max_tokens allows is a protocol error, found
// while it streams (the endless one here would otherwise never end); one
// within the slack still passes.
func TestTooManyTokenEvents(t *testing.T) {
	tests := []struct {
		name      string
		maxTokens int
		tokens    int // -1: until the client leaves
		want      int // token events at the error; 0: success
	}{
		{"endless, small max_tokens", 10, -1, 27},
		{"endless, large max_tokens", 1000, -1, 1101},
		{"within the slack", 10, 26, 0},
		{"just past the slack", 10, 27, 27},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(&paced{tokens: tt.tokens})
			defer srv.Close()
			c := newClient(t, srv.URL, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := c.Stream(ctx, chatReq(tt.maxTokens))
			if tt.want == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Class != ClassProtocol || !errors.Is(err, ErrTooManyTokens) {
				t.Fatalf("err = %v, want a protocol error for too many token events", err)
			}
			msg := fmt.Sprintf("the server sent %d token events for max_tokens %d", tt.want, tt.maxTokens)
			if !strings.Contains(e.Message, msg) {
				t.Fatalf("message %q lacks %q", e.Message, msg)
			}
			if res.SSETokenEvents != tt.want || len(res.ITLMS) != tt.want-1 {
				t.Fatalf("token events %d, itl %d", res.SSETokenEvents, len(res.ITLMS))
			}
		})
	}
}

// Without max_tokens nothing bounds the events, but the ITL list stays
// bounded: a sample of the whole stream, not its first maxITL gaps.
func TestITLBoundedOnAnEndlessStream(t *testing.T) {
	a := NewAccumulator()
	a.Reset(0)
	data := []byte(`{"choices":[{"index":0,"delta":{"content":"x"}}]}`)
	const n = 5*maxITL + 123
	for i := range n {
		// The gaps grow along the stream: a sample of it must see the late ones.
		if err := a.Event(&sse.Event{Data: data, At: time.Duration(i) * time.Duration(i) * time.Microsecond}); err != nil {
			t.Fatal(err)
		}
	}
	m := a.Metrics(time.Hour)
	if m.SSETokenEvents != n {
		t.Fatalf("token events %d, want %d", m.SSETokenEvents, n)
	}
	if len(m.ITLMS) > maxITL || len(m.ITLMS) < maxITL/2 || cap(m.ITLMS) > maxITL {
		t.Fatalf("itl len %d cap %d, want within [%d, %d]", len(m.ITLMS), cap(m.ITLMS), maxITL/2, maxITL)
	}
	last := m.ITLMS[len(m.ITLMS)-1]
	if wantMin := durMs(time.Duration(2*(n-100)) * time.Microsecond); last < wantMin {
		t.Fatalf("last kept gap %vms, want one from the end of the stream (≥ %vms)", last, wantMin)
	}
}

// The default total timeout ends a stream the idle clock never would.
func TestTotalTimeoutEndsAnEndlessStream(t *testing.T) {
	srv := httptest.NewServer(&paced{tokens: -1, gap: time.Millisecond})
	defer srv.Close()
	c := newClient(t, srv.URL, func(c *Config) { c.TotalTimeout = 200 * time.Millisecond; c.IdleTimeout = time.Second })
	_, err := c.Stream(context.Background(), chatReq(0))
	var e *Error
	if !errors.As(err, &e) || e.Class != ClassTimeoutTotal {
		t.Fatalf("err = %v, want timeout_total", err)
	}
}
