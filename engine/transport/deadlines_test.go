package transport

import (
	"errors"
	"testing"
	"time"
)

// One timer carries a request's three timeouts: due says which one has
// come, or how long the timer may wait before looking again.
func TestDeadlinesDue(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name               string
		first, idle, total time.Duration
		last               time.Duration // arrival of the last token event; 0: none yet
		now                time.Duration
		wait               time.Duration
		cause              error
	}{
		{name: "none set", now: 5 * s, wait: -1},
		{name: "total only", total: 10 * s, now: 4 * s, wait: 6 * s},
		{name: "total passed", total: 10 * s, now: 10 * s, cause: errTotal},
		{name: "before the first token: the first-token clock", first: 10 * s, now: 3 * s, wait: 7 * s},
		{name: "first token late", first: 10 * s, idle: 60 * s, now: 10 * s, cause: errFirstToken},
		{name: "before the first token the wait is at most the idle timeout", first: 60 * s, idle: 2 * s, now: 1 * s, wait: 2 * s},
		{name: "no idle clock before the first token", idle: 2 * s, now: 30 * s, wait: 2 * s},
		{name: "after the first token the first-token clock is off", first: 1 * s, idle: 5 * s, last: 2 * s, now: 4 * s, wait: 3 * s},
		{name: "idle passed", first: 1 * s, idle: 5 * s, last: 2 * s, now: 7 * s, cause: errIdle},
		{name: "total nearer than idle", idle: 5 * s, total: 8 * s, last: 6 * s, now: 7 * s, wait: 1 * s},
		{name: "total before idle when both passed", idle: 1 * s, total: 8 * s, last: 2 * s, now: 9 * s, cause: errTotal},
		{name: "tokens but no idle timeout", first: 1 * s, last: 2 * s, now: 50 * s, wait: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deadlines{first: tt.first, idle: tt.idle, total: tt.total}
			if tt.last > 0 {
				d.token(tt.last)
			}
			wait, cause := d.due(tt.now)
			if !errors.Is(cause, tt.cause) || (cause == nil) != (tt.cause == nil) {
				t.Fatalf("cause %v, want %v", cause, tt.cause)
			}
			if cause == nil && wait != tt.wait {
				t.Errorf("wait %v, want %v", wait, tt.wait)
			}
		})
	}
}
