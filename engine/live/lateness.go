package live

import (
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// Dispatch lag: how late the client woke for a scheduled send. Past the
// bound the point did not offer the load the schedule says, and every
// latency it measured is the client's as much as the server's.
const (
	// MinDispatchLagBound is the least the default bound is: a Go timer on
	// a shared machine wakes within a few ms (p99 8 ms measured beside
	// stress-ng --cpu 4 on 2 cores), which is noise, not a client that
	// cannot keep up.
	MinDispatchLagBound = 20 * time.Millisecond
	// DispatchLagShare of the point's TTFT p50 is the default bound above
	// that: lateness is judged against the latencies it would distort.
	DispatchLagShare = 0.25
)

// DispatchLagBound is the p99 dispatch lag phase p accepts at a point
// whose TTFT p50 is ttftP50MS (nil: none measured).
func DispatchLagBound(p *scenarios.Phase, ttftP50MS *float64) time.Duration {
	if p.MaxDispatchLag != nil {
		return p.MaxDispatchLag.Duration
	}
	b := MinDispatchLagBound
	if ttftP50MS != nil {
		b = max(b, time.Duration(*ttftP50MS*DispatchLagShare*float64(time.Millisecond)))
	}
	return b
}

// lagPast reports whether a point's dispatch lag p99 (got) is past the
// bound phase p accepts, and names the bound (why): the one rule for load
// points, trace replays and capacity probes.
func lagPast(p *scenarios.Phase, lag report.Stat, ttft *float64) (got, bound time.Duration, why string, over bool) {
	if lag.P99 == nil {
		return 0, 0, "", false
	}
	bound = DispatchLagBound(p, ttft)
	got = time.Duration(*lag.P99 * float64(time.Millisecond))
	why = fmt.Sprintf("the default, the larger of %s and %g of TTFT p50", MinDispatchLagBound, DispatchLagShare)
	if p.MaxDispatchLag != nil {
		why = "its max_dispatch_lag"
	}
	return got, bound, why, got > bound
}

// checkLag marks the run's measurement invalid when the point at path
// (JSON pointer of the point, e.g. /runs/sim/phases/load/points/0) lagged
// its schedule past the phase's bound; label names it in the message.
func (r *runner) checkLag(p *scenarios.Phase, path, label string, lag report.Stat, ttft *float64) {
	got, bound, why, over := lagPast(p, lag, ttft)
	if !over {
		return
	}
	msg := fmt.Sprintf("phase %s%s: the client sent %s late at p99 (dispatch_lag_ms), past the %s it accepts (%s): "+
		"the load offered was not the schedule's; give the client more CPU, lower the rate, or raise max_dispatch_lag to accept it",
		p.Name, label, got.Round(10*time.Microsecond), bound.Round(10*time.Microsecond), why)
	r.out.Invalid = append(r.out.Invalid, report.Invalidity{Reason: report.InvalidDispatchLag, Path: path + "/dispatch_lag_ms/p99", Message: msg})
}
