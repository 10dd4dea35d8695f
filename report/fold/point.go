package fold

import (
	"fmt"
	"time"

	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/stats"
)

// Point folds the requests of one load point: a Slice plus the point's
// window (first send → last completion), its lateness (queue_ms) and its
// goodput. Every rate and throughput of a load point is computed here, in
// Close, from the window, for a run and for a merge of shards alike.
type Point struct {
	*Slice
	queue *stats.Histogram
	win   report.Window
	have  bool // win holds at least one request
	good  int
	slo   map[string]float64
	// peak is the most requests holding a connection at once (a merge adds
	// the shards' peaks: an upper bound of the union's).
	peak int64
}

// NewPoint returns an empty load point whose goodput counts requests
// within every limit of slo (none: no goodput).
func NewPoint(opt Options, slo map[string]float64) *Point {
	return &Point{Slice: New(opt), queue: stats.New(), slo: slo}
}

// Request is one recorded request of a load point: its sample and times.
type Request struct {
	Sample *report.RequestSample
	Name   string
	// Scheduled, Sent and End: when the schedule meant it to go, when it
	// went, and when it completed or failed.
	Scheduled, Sent, End time.Time
}

// Add records one request.
func (p *Point) Add(r Request) {
	p.Slice.Add(r.Sample, r.Name)
	_ = p.queue.Add(float64(r.Sent.Sub(r.Scheduled).Nanoseconds()) / 1e6)
	if !p.have || r.Sent.Before(p.win.FirstSend) {
		p.win.FirstSend = r.Sent
	}
	if !p.have || r.End.After(p.win.LastEnd) {
		p.win.LastEnd = r.End
	}
	p.have = true
	// Time in flight counts for every request, failed ones included.
	p.win.E2ESumMS += r.Sample.E2EMS
	if r.Sample.Error == nil && Good(r.Sample, p.slo) {
		p.good++
	}
}

// Sent records what the executor sent: how many requests and when the
// last went (requests stopped by the run itself are sent but not added).
func (p *Point) Sent(n int, last time.Time) {
	p.win.Sent, p.win.LastSend = n, last
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
	if err := mergeInto(p.queue, lp.QueueMS); err != nil {
		return fmt.Errorf("queue_ms: %w", err)
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
	p.have = true
	p.win.Sent += w.Sent
	p.win.E2ESumMS += w.E2ESumMS
	return nil
}

// Close is the point's figures; window keeps the window in it (shard
// reports, merges). Concurrency and Rate are the caller's.
func (p *Point) Close(window bool) *report.LoadPoint {
	lp := &report.LoadPoint{ServingMetrics: p.Slice.Close(), QueueMS: p.stat(p.queue), PeakInFlight: p.peak}
	if !p.have {
		return lp
	}
	w := p.win
	w.FirstSend, w.LastSend, w.LastEnd = w.FirstSend.UTC(), w.LastSend.UTC(), w.LastEnd.UTC()
	if window {
		lp.Window = &w
	}
	dur := w.LastEnd.Sub(w.FirstSend).Seconds()
	lp.DurationS = dur
	// n sends span n − 1 gaps, from the first send to the last: the
	// window they were written in, not the schedule's start.
	if span := w.LastSend.Sub(w.FirstSend).Seconds(); span > 0 && w.Sent > 1 {
		lp.AchievedRatePerS = report.F(float64(w.Sent-1) / span)
	}
	if dur > 0 {
		prompt, output := p.Histogram("prompt_tokens").Sum(), p.Histogram("completion_tokens").Sum()
		lp.RequestThroughputPerS = report.F(float64(lp.Succeeded) / dur)
		lp.OutputTokensPerS = report.F(output / dur)
		lp.TotalTokensPerS = report.F((prompt + output) / dur)
		lp.AchievedConcurrency = report.F(w.E2ESumMS / 1000 / dur)
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
