package live

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/engine/load"
	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/fold"
)

// point is one scheduled point of a phase as a kind hands it to drive:
// the plan the executor runs, and what each request is and does.
type point struct {
	plan load.Plan
	// label names the point in progress lines and samples ("" for none);
	// total is the requests it plans (0: bounded by a duration).
	label string
	total int
	pt    *fold.Point
	rec   *recorder
	// request is job i's request; false sends nothing for i.
	request func(i int) (measure.Request, bool)
	// index is job i's index in the phase's samples (a shard's global
	// index); nil: i.
	index func(i int) int
	// recorded runs, under the point's lock, after each request the
	// recorder took (spent: the phase's error budget is certainly spent).
	// A non-nil error stops the point: no more sends, requests in flight
	// cancelled.
	recorded func(d done, spent bool) error
}

// done is one finished request of a point.
type done struct {
	i                    int
	out                  measure.Result
	scheduled, sent, end time.Time
}

// driven is what drive did.
type driven struct {
	res     load.Result
	stopErr error
	// ran is the jobs that returned having sent.
	ran int
}

// drive runs one point through the executor (open or closed loop) and does
// the bookkeeping every scheduled kind shares: the progress line, the count
// in flight and of connections held, requests cancelled by the run left
// out, each request recorded into the phase and the point, the stop a
// recorded callback asks for, and the point's sent count, window and peak.
func (r *runner) drive(ctx context.Context, phase string, s point) driven {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Jobs run on the grace context, so an interrupt stops sending at once
	// but lets requests in flight finish; a stop cancels both.
	jobCtx, cancelJobs := context.WithCancel(r.hard)
	defer cancelJobs()
	var mu sync.Mutex // guards what follows and s.pt
	var out driven
	var stopOnce sync.Once
	var inflight int64
	// Requests holding a connection, counted apart from those sent: a
	// request over the open-file limit fails to connect and was never in
	// flight at the server (24,000 were reported where ~20,000 sockets
	// could exist).
	var held, peakHeld int64
	started := time.Now()
	if !s.plan.Start.IsZero() {
		started = s.plan.Start
	}
	tick := r.progressTicker(pctx, func() Progress {
		mu.Lock()
		defer mu.Unlock()
		return Progress{Phase: phase, Point: s.label, Done: out.ran, Total: s.total, InFlight: inflight, Errors: s.pt.Errors(),
			Elapsed: time.Since(started), TTFTP50MS: ttftP50(s.pt.Slice)}
	})
	out.res = r.send.execute(pctx, s.plan, func(_ context.Context, i int, scheduled, sent time.Time) {
		req, ok := s.request(i)
		if !ok {
			return
		}
		if s.index != nil {
			i = s.index(i)
		}
		var connected atomic.Bool
		req.Connected = func() {
			if connected.Swap(true) {
				return
			}
			mu.Lock()
			held++
			peakHeld = max(peakHeld, held)
			mu.Unlock()
		}
		mu.Lock()
		inflight++
		mu.Unlock()
		res, retries := r.stream(jobCtx, req)
		end := time.Now()
		mu.Lock()
		defer mu.Unlock()
		inflight--
		if connected.Load() {
			held--
		}
		out.ran++
		if canceledByUs(res, jobCtx.Err()) {
			return // stopped by us or the user: not the server's error
		}
		start, written := sendTimes(res, sent)
		e := entry{res: res, retries: retries, point: s.label, index: i, startMS: float64(sent.Sub(started).Microseconds()) / 1000}
		_, spent := s.rec.record(e, func(smp *report.RequestSample, name string) {
			s.pt.Add(fold.Request{Sample: smp, Name: name, Scheduled: scheduled, Start: start, Written: written, End: end})
		})
		if s.recorded == nil {
			return
		}
		if err := s.recorded(done{i: i, out: res, scheduled: scheduled, sent: sent, end: end}, spent); err != nil {
			stopOnce.Do(func() {
				out.stopErr = err
				cancel()
				cancelJobs()
			})
		}
	})
	cancel()
	cancelJobs()
	tick()
	s.pt.Lag(out.res.DispatchLag)
	// The executor's count stands only where no job ran (the shape).
	s.pt.Peak(out.res.PeakInFlight)
	if out.ran > 0 {
		s.pt.Peak(peakHeld)
	}
	return out
}

// sendTimes are a request's send timestamp and first write; a client that
// writes no bytes (the shape) sends when the executor did.
func sendTimes(res measure.Result, sent time.Time) (start, written time.Time) {
	start, written = res.Start, res.Written
	if start.IsZero() {
		start = sent
	}
	if written.IsZero() && res.Err == nil {
		written = start
	}
	return start, written
}
