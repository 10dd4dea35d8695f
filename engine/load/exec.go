package load

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/stats"
)

// Clock is the time source of the executor; tests use a fake one.
type Clock interface {
	Now() time.Time
	// SleepUntil blocks until t or until ctx ends (then it returns ctx's error).
	SleepUntil(ctx context.Context, t time.Time) error
}

// RealClock is the monotonic wall clock.
type RealClock struct{}

// Now returns time.Now (which carries a monotonic reading).
func (RealClock) Now() time.Time { return time.Now() }

// SleepUntil sleeps until t.
func (RealClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Job performs request i. scheduled is when it was meant to be sent, sent
// when it was; sent − scheduled is its queueing delay in the client.
type Job func(ctx context.Context, i int, scheduled, sent time.Time)

// Plan is one load point: closed loop when Concurrency > 0, else open loop
// on Schedule. At least one of MaxRequests and Duration bounds it.
type Plan struct {
	Concurrency int
	Schedule    Schedule
	MaxRequests int           // 0: no bound on count
	Duration    time.Duration // 0: no bound on time; sending stops, in-flight requests finish
	// RampUp starts closed-loop workers evenly over this time.
	RampUp time.Duration
	// MaxInFlight caps open-loop requests in flight; when reached, sends wait
	// and their queueing delay shows it (default 10000).
	MaxInFlight int
	Clock       Clock
	// Start, when set, is when the schedule begins (a sharded run's common
	// --start-at): the executor waits for it, and when it is already past
	// the open loop's first sends are late and their queueing delay says so.
	Start time.Time
}

// Result says what the executor did.
type Result struct {
	Sent  int
	Start time.Time
	// LastSend is when the last request was sent.
	LastSend time.Time
	End      time.Time
	// PeakInFlight is the most requests in flight at once.
	PeakInFlight int64
	// DispatchLag is, per open-loop send, how late the executor woke for
	// it (woke − scheduled, ms): the client's own lateness (a starved
	// CPU, a late timer), apart from waiting for max_in_flight, which is
	// the server's slowness showing. Nil for a closed loop.
	DispatchLag *stats.Histogram
}

// Execute runs a plan to completion or until ctx ends. It returns after every
// job it started has returned, so no goroutine outlives it.
func Execute(ctx context.Context, p Plan, job Job) Result {
	clock := p.Clock
	if clock == nil {
		clock = RealClock{}
	}
	var inflight, peak atomic.Int64
	track := func(d int64) {
		n := inflight.Add(d)
		for {
			old := peak.Load()
			if n <= old || peak.CompareAndSwap(old, n) {
				break
			}
		}
	}
	begun := clock.Now()
	res := Result{Start: begun}
	if !p.Start.IsZero() {
		res.Start = p.Start
	}
	var deadline time.Time
	if p.Duration > 0 {
		deadline = res.Start.Add(p.Duration)
	}
	var mu sync.Mutex
	noteSend := func(t time.Time) {
		mu.Lock()
		res.Sent++
		if t.After(res.LastSend) {
			res.LastSend = t
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	if p.Concurrency > 0 {
		var next atomic.Int64
		for w := 0; w < p.Concurrency; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				if p.RampUp > 0 || !p.Start.IsZero() {
					start := res.Start.Add(p.RampUp * time.Duration(w) / time.Duration(p.Concurrency))
					if clock.SleepUntil(ctx, start) != nil {
						return
					}
				}
				for ctx.Err() == nil {
					now := clock.Now()
					if !deadline.IsZero() && !now.Before(deadline) {
						return
					}
					i := int(next.Add(1) - 1)
					if p.MaxRequests > 0 && i >= p.MaxRequests {
						return
					}
					noteSend(now)
					track(1)
					// Closed loop: a worker sends as soon as it is free, so
					// scheduled and sent coincide.
					job(ctx, i, now, now)
					track(-1)
				}
			}(w)
		}
		wg.Wait()
		res.End = clock.Now()
		res.PeakInFlight = peak.Load()
		return res
	}

	maxIn := p.MaxInFlight
	if maxIn <= 0 {
		maxIn = 10000
	}
	sem := make(chan struct{}, maxIn)
	res.DispatchLag = stats.New()
	for i := 0; p.MaxRequests == 0 || i < p.MaxRequests; i++ {
		at := res.Start.Add(p.Schedule.Offset(i))
		if !deadline.IsZero() && !at.Before(deadline) {
			break
		}
		if clock.SleepUntil(ctx, at) != nil {
			break
		}
		// A Start already past (a late shard) is lateness the shard
		// reports apart (start_lateness_ms, judged by merge) and queue_ms
		// holds: the executor's own lag counts from when it began.
		due := at
		if due.Before(begun) {
			due = begun
		}
		_ = res.DispatchLag.Add(max(float64(clock.Now().Sub(due).Nanoseconds())/1e6, 0))
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		sent := clock.Now()
		noteSend(sent)
		track(1)
		wg.Add(1)
		go func(i int, at, sent time.Time) {
			defer wg.Done()
			defer func() { <-sem; track(-1) }()
			job(ctx, i, at, sent)
		}(i, at, sent)
	}
	wg.Wait()
	res.End = clock.Now()
	res.PeakInFlight = peak.Load()
	return res
}
