package main

import (
	"errors"
	"testing"
	"time"
)

// A --start-at is accepted from maxStartBehind before now to maxStartAhead
// after it, the bounds themselves included; outside, errStartAt.
func TestStartAtWindow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		at   time.Time
		ok   bool
	}{
		{"now", now, true},
		{"a minute ahead", now.Add(time.Minute), true},
		{"a day ahead", now.Add(maxStartAhead), true},
		{"past a day ahead", now.Add(maxStartAhead + time.Second), false},
		{"in year 2999", time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{"two seconds behind", now.Add(-2 * time.Second), true},
		{"ten minutes behind", now.Add(-maxStartBehind), true},
		{"past ten minutes behind", now.Add(-maxStartBehind - time.Second), false},
		{"in year 1", time.Time{}.Add(time.Second), false},
		{"in another zone, on time", now.In(time.FixedZone("UTC+14", 14*3600)), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkStartAt(c.at, now)
			if c.ok != (err == nil) || (err != nil && !errors.Is(err, errStartAt)) {
				t.Errorf("checkStartAt(%s): %v, want ok %v", c.at.Format(time.RFC3339), err, c.ok)
			}
		})
	}
}
