package live

import (
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/scenarios"
)

func TestDispatchLagBound(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name  string
		set   *scenarios.Duration
		ttft  *float64
		bound time.Duration
	}{
		{"no TTFT: the floor", nil, nil, MinDispatchLagBound},
		{"a fast server: the floor", nil, f(12), MinDispatchLagBound},
		{"a slow server: a quarter of its TTFT p50", nil, f(800), 200 * time.Millisecond},
		{"the scenario's own", &scenarios.Duration{Duration: 5 * time.Millisecond}, f(800), 5 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DispatchLagBound(&scenarios.Phase{MaxDispatchLag: tc.set}, tc.ttft); got != tc.bound {
				t.Errorf("bound %s, want %s", got, tc.bound)
			}
		})
	}
}
