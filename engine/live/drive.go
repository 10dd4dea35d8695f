package live

import (
	"context"
	"slices"
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
	// warmup: requests sent this soon after the first was scheduled are
	// sent and watched but neither recorded nor passed to recorded (0:
	// none).
	warmup time.Duration
	// deadline: requests still in flight this long after the start are
	// cancelled, not recorded, and counted in driven (0: none).
	deadline time.Duration
	// watch, when set, keeps every request as saturation sees it from its
	// send on, warm-up included (driven.recs), and runs every 200 ms with a
	// copy of them and the first request's scheduled time (zero: none
	// yet); a non-nil error stops the point as recorded's does. A copy, so
	// requests do not wait on the judgment; a ticker, since completions
	// alone would miss a server that stops answering.
	watch func(now, first time.Time, recs []record) error
}

// done is one finished request of a point.
type done struct {
	i                    int
	out                  measure.Result
	sample               *report.RequestSample
	scheduled, sent, end time.Time
	// written is when its first byte was written (zero: never).
	written time.Time
}

// driven is what drive did.
type driven struct {
	res     load.Result
	stopErr error
	// ran is the jobs that returned having sent.
	ran int
	// first is the first request's scheduled time (zero: none sent);
	// recs are what watch saw (nil without one).
	first time.Time
	recs  []record
	// cancelled are the requests the run cancelled, warm-up included (what
	// the server may still be working on); unfinished those of them sent
	// after it.
	cancelled, unfinished int
}

// drive runs one point through the executor (open or closed loop) and does
// the bookkeeping every scheduled kind shares: the progress line, the count
// in flight and of connections held, requests cancelled by the run left
// out, each request recorded into the phase and the point (into the point
// alone without a recorder), a warm-up left out, the stop a recorded or
// watch callback asks for, and the point's sent count, window and peak.
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
	stop := func(err error) {
		stopOnce.Do(func() {
			out.stopErr = err
			cancel()
			cancelJobs()
		})
	}
	if s.deadline > 0 {
		t := time.AfterFunc(time.Until(started.Add(s.deadline)), cancelJobs)
		defer t.Stop()
	}
	var watch func(time.Time) error
	if s.watch != nil {
		watch = func(now time.Time) error {
			mu.Lock()
			first, recs := out.first, slices.Clone(out.recs)
			mu.Unlock()
			return s.watch(now, first, recs)
		}
	}
	watched := every(pctx, 200*time.Millisecond, watch, stop)
	tick := r.progressTicker(pctx, func() Progress {
		mu.Lock()
		defer mu.Unlock()
		return Progress{Phase: phase, Point: s.label, Done: out.ran, Total: s.total, InFlight: inflight, Errors: s.pt.Errors(),
			Elapsed: time.Since(started), TTFTP50MS: ttftP50(s.pt.Slice)}
	})
	// settle is a job's bookkeeping once its request ended, in a frame of
	// its own (too large to inline): its temporaries (an entry, a sample,
	// a done, each with a Result in it) would otherwise sit in the job's
	// frame, on the stack of every request in flight, and push each
	// stream's goroutine from an 8 KB stack to 16 KB.
	settle := func(i int, scheduled, sent, end time.Time, measured bool, k int, connected bool, resp *measure.Result, retries int) {
		res := *resp
		mu.Lock()
		defer mu.Unlock()
		inflight--
		if connected {
			held--
		}
		out.ran++
		if canceledByUs(res, jobCtx.Err()) {
			// Stopped by us or the user: not the server's error, and to
			// saturation still in flight.
			out.cancelled++
			if measured {
				out.unfinished++
			}
			return
		}
		if s.watch != nil {
			out.recs[k].end, out.recs[k].ttftMS, out.recs[k].ok = end, res.TTFTMS, res.Err == nil
		}
		if !measured {
			return
		}
		start, written := sendTimes(res, sent)
		e := entry{res: res, retries: retries, point: s.label, index: i, startMS: float64(sent.Sub(started).Microseconds()) / 1000}
		add := func(smp *report.RequestSample, name string) {
			s.pt.Add(fold.Request{Sample: smp, Name: name, Scheduled: scheduled, Start: start, Written: written, End: end})
		}
		var smp *report.RequestSample
		spent := false
		if s.rec != nil {
			smp, spent = s.rec.record(e, add)
		} else {
			// A point of its own (a capacity probe): not the phase's.
			v, name := e.sample(phase)
			smp = &v
			add(smp, name)
		}
		if s.recorded == nil {
			return
		}
		if err := s.recorded(done{i: i, out: res, sample: smp, scheduled: scheduled, sent: sent, end: end, written: written}, spent); err != nil {
			stop(err)
		}
	}
	out.res = r.send.execute(pctx, s.plan, func(_ context.Context, i int, scheduled, sent time.Time) {
		// On the heap, not in this frame (runner.streamInto).
		req, res := new(measure.Request), new(measure.Result)
		var ok bool
		if *req, ok = s.request(i); !ok {
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
		if out.first.IsZero() {
			out.first = scheduled
		}
		measured := s.warmup == 0 || !sent.Before(out.first.Add(s.warmup))
		k := len(out.recs)
		if s.watch != nil {
			out.recs = append(out.recs, record{scheduled: scheduled, sent: sent})
		}
		mu.Unlock()
		retries := r.streamInto(jobCtx, req, res)
		settle(i, scheduled, sent, time.Now(), measured, k, connected.Load(), res, retries)
	})
	cancel()
	cancelJobs()
	<-watched
	tick()
	s.pt.Lag(out.res.DispatchLag)
	// The executor's count stands only where no job ran (the shape).
	s.pt.Peak(out.res.PeakInFlight)
	if out.ran > 0 {
		s.pt.Peak(peakHeld)
	}
	return out
}

// every runs check every period until ctx ends or check asks for a stop;
// the channel closes when it is done (at once for a nil check).
func every(ctx context.Context, period time.Duration, check func(now time.Time) error, stop func(error)) <-chan struct{} {
	done := make(chan struct{})
	if check == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		tk := time.NewTicker(period)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tk.C:
				if err := check(now); err != nil {
					stop(err)
					return
				}
			}
		}
	}()
	return done
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
