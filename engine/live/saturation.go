package live

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/engine/load"
	"github.com/tollgate-dev/tollgate/report"
)

// record is one request of a load point, as saturation sees it: when it
// was scheduled and sent, when it ended (zero while in flight), its TTFT
// (nil when it had none) and whether it succeeded.
type record struct {
	scheduled, sent, end time.Time
	ttftMS               *float64
	ok                   bool
}

// Saturation thresholds: generous, so a server that keeps up is never
// called saturated on a loaded machine.
const (
	// servedRatio: completions per second below this share of arrivals.
	servedRatio = 0.8
	// growth: a later third above growth × the first third plus a floor.
	growth = 1.5
	// minSaturationRecords are the requests a judgment needs.
	minSaturationRecords = 12
	// sustainedRatio: served ÷ offered below this, falling third after
	// third, is saturation on its own (backlogSignal).
	sustainedRatio = 0.95
	// minBacklogGrowth is the growth of the mean in flight, first third to
	// last, below which a backlog is noise (a batch's worth of requests).
	minBacklogGrowth = 3
)

// saturation returns the saturation signals of the requests sent in
// [from, to), judged at now (requests not ended by now are in flight):
//
//   - completions per second in the window's second half below 80 % of
//     arrivals per second in it, over at least 12 arrivals (the offered
//     load is not being served);
//   - requests in flight over the last 1/16 of the window (a mean of 4
//     instants) above 1.5 × their mean over its first third + 2 (in
//     flight grows);
//   - queue_ms (scheduled → sent) of the last third above 1.5 × the first
//     third's + 5 ms (the client cannot send on schedule);
//   - median TTFT of the last third above 1.5 × the first third's + 20 ms
//     (TTFT trends upward);
//   - served ÷ offered below 95 % and still falling (backlogSignal): the
//     mean in flight rose from third to third of the window, by more than
//     5 % of the arrivals between the first third and the last and by at
//     least 3 requests.
//
// A point is saturated when two signals agree, or on the last alone (a
// backlog that keeps growing is an offered load not served, however
// slowly it grows); a closed loop (openLoop false) is judged by TTFT
// alone, since its arrivals are its completions.
func saturation(recs []record, from, to, now time.Time, openLoop bool) (signals []string, saturated bool) {
	var in []record
	for _, r := range recs {
		if !r.sent.Before(from) && r.sent.Before(to) {
			in = append(in, r)
		}
	}
	if len(in) < minSaturationRecords || !to.After(from) {
		return []string{}, false
	}
	slices.SortFunc(in, func(a, b record) int { return a.sent.Compare(b.sent) })
	span := to.Sub(from)
	third := func(k int) []record {
		lo, hi := from.Add(span*time.Duration(k)/3), from.Add(span*time.Duration(k+1)/3)
		var out []record
		for _, r := range in {
			if !r.sent.Before(lo) && r.sent.Before(hi) {
				out = append(out, r)
			}
		}
		return out
	}
	first, last := third(0), third(2)
	signals = []string{}
	backlog := ""
	if openLoop {
		signals = openLoopSignals(recs, first, last, from, to, now)
		backlog = backlogSignal(recs, from, to, now)
	}
	med := func(rs []record) (float64, bool) {
		var v []float64
		for _, r := range rs {
			if r.ttftMS != nil {
				v = append(v, *r.ttftMS)
			}
		}
		if len(v) < 3 {
			return 0, false
		}
		sort.Float64s(v)
		return v[len(v)/2], true
	}
	t0, ok0 := med(first)
	t2, ok2 := med(last)
	if ok0 && ok2 && t2 > growth*t0+20 {
		signals = append(signals, fmt.Sprintf("ttft trends up: median %.4g ms in the first third, %.4g ms in the last", t0, t2))
	}
	if !openLoop {
		return signals, len(signals) > 0
	}
	if backlog != "" {
		return append([]string{backlog}, signals...), true
	}
	return signals, len(signals) >= 2
}

// regular reports whether the schedule's gaps are even (constant
// arrivals: their coefficient of variation under 0.1), so the arrivals
// themselves add no noise to the backlog.
func regular(sched []time.Time) bool {
	if len(sched) < 3 {
		return true
	}
	slices.SortFunc(sched, time.Time.Compare)
	var sum, sq float64
	n := float64(len(sched) - 1)
	for i := 1; i < len(sched); i++ {
		sum += sched[i].Sub(sched[i-1]).Seconds()
	}
	mean := sum / n
	for i := 1; i < len(sched); i++ {
		d := sched[i].Sub(sched[i-1]).Seconds() - mean
		sq += d * d
	}
	return mean > 0 && math.Sqrt(sq/n) < 0.1*mean
}

// backlogSignal is the slow build-up a short window hides: offered load
// served at, say, 90 % leaves a backlog that grows by a tenth of the
// arrivals, whatever the latency objectives say so far. The window
// [from, min(to, now)) is cut in thirds; the backlog of each is the mean
// number in flight over it (sampled 20 times, so one batch finishing
// together does not decide it). The signal is a backlog that rose from
// third to third, by at least minBacklogGrowth requests and by more than
// 1 − sustainedRatio of the requests that arrived from the middle of the
// first third to the middle of the last (served ÷ offered over that span
// below 95 %); with random arrivals also by 2 × the square root of those
// arrivals, their own noise. Empty when there is no such signal.
func backlogSignal(recs []record, from, to, now time.Time) string {
	end := to
	if now.Before(end) {
		end = now
	}
	span := end.Sub(from)
	if span <= 0 {
		return ""
	}
	var sends, ends, sched []time.Time
	for _, r := range recs {
		sends = append(sends, r.sent)
		if !r.scheduled.Before(from) && r.scheduled.Before(end) {
			sched = append(sched, r.scheduled)
		}
		if !r.end.IsZero() && !r.end.After(now) {
			ends = append(ends, r.end)
		}
	}
	slices.SortFunc(sends, time.Time.Compare)
	slices.SortFunc(ends, time.Time.Compare)
	count := func(ts []time.Time, t time.Time) int {
		n, _ := slices.BinarySearchFunc(ts, t, func(a, b time.Time) int {
			if a.After(b) {
				return 1
			}
			return -1
		})
		return n // ts at or before t
	}
	const samples = 20
	var b [3]float64
	for k := range b {
		for i := 0; i < samples; i++ {
			t := from.Add(span * time.Duration(k*samples+i) / (3 * samples))
			b[k] += float64(count(sends, t) - count(ends, t))
		}
		b[k] /= samples
	}
	lo, hi := from.Add(span/6), from.Add(span*5/6)
	arrived := count(sends, hi) - count(sends, lo)
	grew := b[2] - b[0]
	floor := float64(minBacklogGrowth)
	if !regular(sched) {
		// Random arrivals bunch: the count between two instants varies by
		// about its square root, and so does the backlog over it.
		floor = max(floor, 2*math.Sqrt(float64(arrived)))
	}
	if !(b[0] < b[1] && b[1] < b[2]) || grew < floor || arrived == 0 || grew <= (1-sustainedRatio)*float64(arrived) {
		return ""
	}
	return fmt.Sprintf("served/offered falls: %.2g of the %d arrivals served, in flight %.3g → %.3g → %.3g over the window's thirds",
		1-grew/float64(arrived), arrived, b[0], b[1], b[2])
}

// openLoopSignals are the signals only an open loop shows: completions
// behind arrivals, a growing number in flight, growing lateness.
func openLoopSignals(recs, first, last []record, from, to, now time.Time) []string {
	signals := []string{}
	span := to.Sub(from)
	half := from.Add(span / 2)
	arrived, served := 0, 0
	for _, r := range recs {
		if !r.sent.Before(half) && r.sent.Before(to) {
			arrived++
		}
		if !r.end.IsZero() && !r.end.Before(half) && r.end.Before(to) {
			served++
		}
	}
	secs := to.Sub(half).Seconds()
	if arrived >= minSaturationRecords && float64(served) < servedRatio*float64(arrived) {
		signals = append(signals, fmt.Sprintf("not served: %.3g completions/s behind %.3g arrivals/s", float64(served)/secs, float64(arrived)/secs))
	}
	inflight := func(t time.Time) int {
		n := 0
		for _, r := range recs {
			if !r.sent.After(t) && (r.end.IsZero() || r.end.After(t)) {
				n++
			}
		}
		return n
	}
	var early float64
	for k := 0; k < 4; k++ {
		early += float64(inflight(from.Add(span * time.Duration(k) / 12)))
	}
	early /= 4
	endAt := to
	if now.Before(to) {
		endAt = now
	}
	// The end is a mean too: one instant of a random arrival process is
	// a burst as often as not, and a probe is watched many times.
	var late float64
	for k := 0; k < 4; k++ {
		late += float64(inflight(endAt.Add(-span * time.Duration(k) / 48)))
	}
	late /= 4
	if late > growth*early+2 {
		signals = append(signals, fmt.Sprintf("in flight grows: %.3g early in the window, %.3g at its end", early, late))
	}
	q := func(rs []record) float64 {
		if len(rs) == 0 {
			return 0
		}
		var s float64
		for _, r := range rs {
			s += float64(r.sent.Sub(r.scheduled).Microseconds()) / 1000
		}
		return s / float64(len(rs))
	}
	if q0, q2 := q(first), q(last); len(last) > 0 && q2 > growth*q0+5 {
		signals = append(signals, fmt.Sprintf("queue_ms grows: mean %.3g ms in the first third, %.3g ms in the last", q0, q2))
	}
	return signals
}

// saturatedPoint judges a finished sweep point for stop_when_saturated: it
// sets the point's saturation signals and returns why the sweep stops
// ("" to go on). The window is the point's sends.
func saturatedPoint(lp *report.LoadPoint, recs []record, res load.Result, openLoop bool) string {
	sig, sat := saturation(recs, res.Start, res.LastSend.Add(time.Nanosecond), res.End, openLoop)
	lp.Saturation = &sig
	if !sat {
		return ""
	}
	return "saturated (" + strings.Join(sig, "; ") + ")"
}
