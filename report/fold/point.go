package fold

import (
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/stats"
)

// Point folds the requests of one load point: a Slice plus the point's
// window (first write → last completion), its lateness (queue_ms, and the
// client's own dispatch lag), its latencies from the schedule and its
// goodput. Every rate and throughput of a load point is computed here, in
// Close, from the window, for a run and for a merge of shards alike.
type Point struct {
	*Slice
	// queue is scheduled → first byte written; lag the executor's own
	// lateness; fromSched TTFT and e2e counted from the scheduled time.
	queue, lag, ttftSched, e2eSched *stats.Histogram
	win                             report.Window
	have                            bool // win holds at least one request
	good                            int
	slo                             map[string]float64
	// peak is the most requests holding a connection at once (a merge adds
	// the shards' peaks: an upper bound of the union's).
	peak int64
}

// NewPoint returns an empty load point whose goodput counts requests
// within every limit of slo (none: no goodput).
func NewPoint(opt Options, slo map[string]float64) *Point {
	return &Point{Slice: New(opt), queue: stats.New(), lag: stats.New(), ttftSched: stats.New(), e2eSched: stats.New(), slo: slo}
}

// Request is one recorded request of a load point: its sample and times.
type Request struct {
	Sample *report.RequestSample
	Name   string
	// Scheduled: when the schedule meant it to go. Start: the send
	// timestamp its latencies are from. Written: when its first byte was
	// written, connection set-up done (zero: never written, e.g. the
	// connection was refused). End: when it completed or failed.
	Scheduled, Start, Written, End time.Time
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// Add records one request.
func (p *Point) Add(r Request) {
	p.Slice.Add(r.Sample, r.Name)
	if !r.Written.IsZero() {
		_ = p.queue.Add(ms(r.Written.Sub(r.Scheduled)))
		if p.win.Sent == 0 || r.Written.Before(p.win.FirstSend) {
			p.win.FirstSend = r.Written
		}
		if r.Written.After(p.win.LastSend) {
			p.win.LastSend = r.Written
		}
		p.win.Sent++
	}
	// Latency as the schedule's user saw it: late sends add their
	// lateness (coordinated omission shows), as wrk2 and k6 count it.
	if late := ms(r.Start.Sub(r.Scheduled)); r.Sample.Error == nil {
		if r.Sample.TTFTMS != nil {
			_ = p.ttftSched.Add(*r.Sample.TTFTMS + late)
		}
		_ = p.e2eSched.Add(r.Sample.E2EMS + late)
	}
	if !p.have || r.End.After(p.win.LastEnd) {
		p.win.LastEnd = r.End
	}
	if !p.have && p.win.Sent == 0 {
		p.win.FirstSend = r.Start
	}
	if !r.Start.IsZero() && (p.win.FirstStart.IsZero() || r.Start.Before(p.win.FirstStart)) {
		p.win.FirstStart = r.Start
	}
	p.have = true
	// Time in flight counts for every request, failed ones included.
	p.win.E2ESumMS += r.Sample.E2EMS
	if r.Sample.Error == nil && Good(r.Sample, p.slo) {
		p.good++
	}
}

// Lag records the executor's dispatch lag (load.Result.DispatchLag; nil
// for a closed loop).
func (p *Point) Lag(h *stats.Histogram) {
	if h != nil {
		p.lag.Merge(h)
	}
}

// Good is the successful requests within every SLO limit so far (every
// successful request when there is no SLO).
func (p *Point) Good() int { return p.good }

// Peak records the most requests in flight at once.
func (p *Point) Peak(n int64) { p.peak = n }

// Good reports whether a successful request met every SLO limit, each
// named by its metric (report.Metrics) or itl_max_ms, the request's
// largest inter-token gap. A metric the request does not have (a 1-token
// answer has no TPOT) cannot be held against it.
func Good(s *report.RequestSample, slo map[string]float64) bool {
	for k, limit := range slo {
		var v float64
		ok := false
		if k == "itl_max_ms" {
			for _, x := range s.ITLMS {
				v, ok = max(v, x), true
			}
		} else if m, found := report.MetricByKey(k); found && m.Value != nil {
			v, ok = m.Value(s)
		}
		if ok && v > limit {
			return false
		}
	}
	return true
}

// Merge adds a shard's saved load point: its histograms and its window.
func (p *Point) Merge(lp *report.LoadPoint, label string) error {
	if err := p.Slice.Merge(lp.ServingMetrics, label); err != nil {
		return err
	}
	for _, m := range []struct {
		name string
		h    *stats.Histogram
		st   report.Stat
	}{{"queue_ms", p.queue, lp.QueueMS}, {"dispatch_lag_ms", p.lag, lp.DispatchLagMS},
		{"ttft_from_schedule_ms", p.ttftSched, lp.TTFTFromScheduleMS}, {"e2e_from_schedule_ms", p.e2eSched, lp.E2EFromScheduleMS}} {
		if err := mergeInto(m.h, m.st); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
	}
	p.peak += lp.PeakInFlight
	if lp.Goodput != nil {
		p.good += lp.Goodput.GoodRequests
		p.slo = lp.Goodput.SLO
	}
	w := lp.Window
	if w == nil {
		if lp.Requests > 0 {
			return fmt.Errorf("%s's point has requests but no window (not a shard report?)", label)
		}
		return nil
	}
	if !p.have || w.FirstSend.Before(p.win.FirstSend) {
		p.win.FirstSend = w.FirstSend
	}
	if !p.have || w.LastEnd.After(p.win.LastEnd) {
		p.win.LastEnd = w.LastEnd
	}
	if w.LastSend.After(p.win.LastSend) {
		p.win.LastSend = w.LastSend
	}
	// A shard report from before first_start was kept: its first write is
	// the earliest start it can vouch for.
	start := w.FirstStart
	if start.IsZero() {
		start = w.FirstSend
	}
	if p.win.FirstStart.IsZero() || start.Before(p.win.FirstStart) {
		p.win.FirstStart = start
	}
	p.have = true
	p.win.Sent += w.Sent
	p.win.E2ESumMS += w.E2ESumMS
	return nil
}

// Close is the point's figures; window keeps the window in it (shard
// reports, merges). Concurrency and Rate are the caller's.
func (p *Point) Close(window bool) *report.LoadPoint {
	lp := &report.LoadPoint{ServingMetrics: p.Slice.Close(), QueueMS: p.stat(p.queue), DispatchLagMS: p.stat(p.lag),
		TTFTFromScheduleMS: p.stat(p.ttftSched), E2EFromScheduleMS: p.stat(p.e2eSched), PeakInFlight: p.peak}
	if !p.have {
		return lp
	}
	w := p.win
	w.FirstSend, w.LastSend, w.LastEnd, w.FirstStart = w.FirstSend.UTC(), w.LastSend.UTC(), w.LastEnd.UTC(), w.FirstStart.UTC()
	if window {
		lp.Window = &w
	}
	dur := w.LastEnd.Sub(w.FirstSend).Seconds()
	lp.DurationS = dur
	// n requests written span n − 1 gaps, from the first write to the
	// last: the window they were written in, not the schedule's start.
	if span := w.LastSend.Sub(w.FirstSend).Seconds(); span > 0 && w.Sent > 1 {
		lp.AchievedRatePerS = report.F(float64(w.Sent-1) / span)
	}
	if dur > 0 {
		prompt, output := p.Histogram("prompt_tokens").Sum(), p.Histogram("completion_tokens").Sum()
		lp.RequestThroughputPerS = report.F(float64(lp.Succeeded) / dur)
		lp.OutputTokensPerS = report.F(output / dur)
		lp.TotalTokensPerS = report.F((prompt + output) / dur)
	}
	// Σ e2e over the span the e2e times lie in: from the first send
	// timestamp, not the first write (a connection's set-up is in its
	// request's e2e), so the mean in flight never exceeds the most in
	// flight (at 6 workers, six dials beside a busy machine had made it
	// 6.9 over duration_s).
	from := w.FirstStart
	if from.IsZero() || from.After(w.FirstSend) {
		from = w.FirstSend
	}
	if span := w.LastEnd.Sub(from).Seconds(); span > 0 {
		lp.AchievedConcurrency = report.F(w.E2ESumMS / 1000 / span)
	}
	if len(p.slo) > 0 {
		g := &report.Goodput{SLO: p.slo, GoodRequests: p.good}
		if dur > 0 {
			g.GoodRequestsPerS = report.F(float64(p.good) / dur)
		}
		if lp.Requests > 0 {
			g.AttainedPct = report.F(100 * float64(p.good) / float64(lp.Requests))
		}
		lp.Goodput = g
	}
	return lp
}
