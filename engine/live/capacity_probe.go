package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/tollgate-dev/tollgate/engine/load"
	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/fold"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// probeRun is one probe in progress: what it is judged by, the fold of
// its window, each objective's values for its interval, and the signals
// that cut it short (nil: none).
type probeRun struct {
	c               *scenarios.Capacity
	p               *scenarios.Phase
	warm, win       time.Duration
	openLoop, shape bool
	pt              *fold.Point
	vals            [][]float64 // per objective: the window's values
	cut             []string
}

// probeOutcome is what the search needs of a probe beyond its report: the
// median e2e of its window in seconds (0 when none) and how many requests
// it cancelled, warm-up included.
type probeOutcome struct {
	e2eS      float64
	cancelled int
}

// errCut stops a probe that saturated.
var errCut = errors.New("saturated")

// probe holds the load at v for a warm-up and a window of win and judges
// it. Requests sent in the warm-up are discarded; those sent in
// the window are measured, and given until one more window (at least 2 s)
// after it to end, after which they are cancelled and counted unfinished.
// Saturation is watched as it runs and ends the probe at once.
func (r *runner) probe(ctx context.Context, p *scenarios.Phase, prompts func(int) measure.Request, v float64, base int, win time.Duration) (*report.CapacityProbe, probeOutcome) {
	c := &p.Capacity
	pr := &report.CapacityProbe{Value: v, Objectives: []report.ObjectiveValue{}, Reasons: []string{}, Saturation: []string{}}
	_, shape := r.send.(*shapeSender)
	pc := &probeRun{c: c, p: p, warm: c.Probe.Warmup.Duration, win: win, openLoop: c.By == "rate", shape: shape,
		vals: make([][]float64, len(c.Objectives)),
		// Probes are not shards' figures: no histograms kept.
		pt: fold.NewPoint(fold.Options{PromptTolerance: transport.CalibrationTolerance}, p.SLO.Limits)}
	if shape {
		pc.warm = 0
	}
	plan := load.Plan{Duration: pc.warm + win, MaxInFlight: p.MaxInFlight}
	if pc.openLoop {
		var err error
		plan.Schedule, err = load.NewSchedule(v, p.Arrival, p.Burstiness, 0, r.seed(p)+int64(base))
		if err != nil {
			pr.Verdict, pr.Reasons = report.ProbeFail, []string{err.Error()}
			return pr, probeOutcome{}
		}
	} else {
		plan.Concurrency = int(v)
	}
	d := r.drive(ctx, p.Name, point{plan: plan, label: fmt.Sprintf("probe %g", v), pt: pc.pt,
		request:  func(i int) (measure.Request, bool) { return prompts(base + i), true },
		recorded: pc.recorded, warmup: pc.warm, deadline: pc.warm + win + max(win, 2*time.Second), watch: pc.watch})
	return pc.judge(pr, d)
}

// watch cuts the probe short when it saturates, from half its window on.
func (pc *probeRun) watch(now, first time.Time, recs []record) error {
	if pc.shape || first.IsZero() || now.Sub(first) < pc.warm+pc.win/2 {
		return nil
	}
	sig, sat := saturation(recs, first.Add(pc.warm), now, now, pc.openLoop)
	if !sat {
		return nil
	}
	pc.cut = sig
	return errCut
}

// recorded keeps a measured request's values of each objective.
func (pc *probeRun) recorded(d done, _ bool) error {
	for j, o := range pc.c.Objectives {
		pc.vals[j] = append(pc.vals[j], objectiveSamples(o, d.sample, d.scheduled, d.written)...)
	}
	return nil
}

// judge closes the probe's window and gives its verdict.
func (pc *probeRun) judge(pr *report.CapacityProbe, d driven) (*report.CapacityProbe, probeOutcome) {
	start := d.first
	if start.IsZero() {
		start = d.res.Start
	}
	from, to := start.Add(pc.warm), start.Add(pc.warm+pc.win)
	end := d.res.End
	if pc.cut != nil {
		pr.CutShort = true
		to = end
	}
	if pc.shape {
		from, to, end = start, start.Add(2*time.Millisecond), start.Add(2*time.Millisecond)
	}
	pr.DurationS = to.Sub(from).Seconds()
	lp := pc.pt.Close(false)
	m := lp.ServingMetrics
	pr.Requests, pr.Succeeded, pr.Unfinished = m.Requests+d.unfinished, m.Succeeded, d.unfinished
	if secs := to.Sub(from).Seconds(); secs > 0 {
		served := 0
		for _, rc := range d.recs {
			if !rc.end.IsZero() && !rc.end.Before(from) && rc.end.Before(to) && rc.ok {
				served++
			}
		}
		pr.AchievedRatePerS = report.F(float64(pr.Requests) / secs)
		pr.ServedPerS = report.F(float64(served) / secs)
	}
	sig, sat := pc.cut, pc.cut != nil
	if !sat {
		sig, sat = saturation(d.recs, from, to, end, pc.openLoop)
	}
	pr.Saturation = append(pr.Saturation, sig...)
	late := ""
	if pc.openLoop {
		pr.DispatchLagP99MS = lp.DispatchLagMS.P99
		if pc.shape && pr.DispatchLagP99MS == nil {
			pr.DispatchLagP99MS = report.F(0)
		}
		if got, bound, why, over := lagPast(pc.p, lp.DispatchLagMS, m.TTFTMS.P50); over && !pc.shape {
			pr.ClientLate = true
			late = fmt.Sprintf("the client sent %s late at p99 (dispatch_lag_ms), past the %s it accepts (%s): the rate offered was not %g/s",
				got.Round(10*time.Microsecond), bound.Round(10*time.Microsecond), why, pr.Value)
		}
	}
	judgeProbe(pc.c, pr, probeFigures{m: m, queue: lp.QueueMS, good: pc.pt.Good(), unfinished: d.unfinished, vals: pc.vals, minRequests: minRequests(pc.c, pc.p.Arrival), late: late}, sat, sig, pc.shape)
	o := probeOutcome{cancelled: d.cancelled}
	if m.E2EMS.P50 != nil {
		o.e2eS = *m.E2EMS.P50 / 1000
	}
	return pr, o
}

// objectiveSamples are one request's values of an objective's metric, for
// its interval (none for error_rate and goodput_pct, which are counts).
func objectiveSamples(o scenarios.Objective, smp *report.RequestSample, scheduled, written time.Time) []float64 {
	if o.Metric == "queue_ms" {
		// As the fold counts it: scheduled → first byte written.
		if written.IsZero() {
			return nil
		}
		return []float64{float64(written.Sub(scheduled).Microseconds()) / 1000}
	}
	if !smp.OK {
		return nil
	}
	for _, mt := range report.Metrics {
		if mt.Key != o.Metric {
			continue
		}
		if mt.Values != nil {
			return mt.Values(smp)
		}
		if v, ok := mt.Value(smp); ok {
			return []float64{v}
		}
	}
	return nil
}

// probeFigures are what a probe's window measured, for its objectives.
type probeFigures struct {
	m          *report.ServingMetrics
	queue      report.Stat
	good       int
	unfinished int
	vals       [][]float64 // per objective: the values its interval is drawn from
	// minRequests are the requests the window must hold (minRequests).
	minRequests int
	// late says how the client fell behind the probe's schedule past the
	// bound it accepts ("" when it kept it): checkLag's rule for load points.
	late string
}

// judgeProbe holds a probe's figures against the objectives and gives its
// verdict (saturated, pass, or fail with the reasons) and whether it is
// clear, beyond the noise of each objective's interval.
func judgeProbe(c *scenarios.Capacity, pr *report.CapacityProbe, f probeFigures, sat bool, sig []string, shape bool) {
	// Objectives read the window's aggregate; a statistic with no samples
	// fails its objective (it cannot be shown to pass).
	var doc map[string]map[string]any
	if data, err := json.Marshal(f.m); err == nil {
		_ = json.Unmarshal(data, &doc)
	}
	pass, clearPass, clearFail := true, true, false
	for j, o := range c.Objectives {
		val := objectiveValue(o, pr, f, doc)
		ok := val != nil && meets(o, *val)
		ov := report.ObjectiveValue{Objective: o.Text, Value: val, Pass: ok}
		if val != nil {
			ov.Low, ov.High = objectiveBand(o, *val, f.vals[j], f)
		}
		inside := ov.Low != nil && ov.High != nil && meets(o, *ov.Low) && meets(o, *ov.High)
		outside := ov.Low != nil && ov.High != nil && !meets(o, *ov.Low) && !meets(o, *ov.High)
		clearPass = clearPass && inside
		clearFail = clearFail || outside
		pr.Objectives = append(pr.Objectives, ov)
		if !ok {
			pass = false
			if val == nil {
				pr.Reasons = append(pr.Reasons, fmt.Sprintf("%s: no value (no request in the window produced it)", o.Text))
			} else {
				pr.Reasons = append(pr.Reasons, fmt.Sprintf("%s: was %.4g", o.Text, *val))
			}
		}
	}
	if f.unfinished > 0 && !pr.CutShort {
		pass, clearFail = false, true
		pr.Reasons = append(pr.Reasons, fmt.Sprintf("%d requests still unanswered a drain after the window (cancelled, not counted as errors)", f.unfinished))
	}
	if f.m.Requests+f.unfinished < f.minRequests && !pr.CutShort && !shape {
		pass = false
		pr.Reasons = append(pr.Reasons, fmt.Sprintf("only %d requests in the window, under %d (probe.min_requests %d)", pr.Requests, f.minRequests, c.Probe.MinRequests))
	}
	switch {
	case f.late != "":
		// What the window measured is the client's lateness as much as the
		// server's latency, saturation signals included: not a pass, and
		// not the server's verdict either.
		pr.Verdict, pr.Clear = report.ProbeFail, true
		pr.Reasons = append([]string{f.late}, pr.Reasons...)
	case sat:
		pr.Verdict, pr.Clear = report.ProbeSaturated, true
		pr.Reasons = append(pr.Reasons, "saturated: "+sig[0])
	case pass:
		pr.Verdict, pr.Clear = report.ProbePass, clearPass
	default:
		pr.Verdict, pr.Clear = report.ProbeFail, clearFail
	}
}

// minRequests are the requests a probe's window must hold: probe.min_requests
// in a closed loop or with constant arrivals; half of it with random
// arrivals, whose window is sized to hold min_requests on average (a
// Poisson window of 20 holds fewer half the time, under 10 once in 200).
func minRequests(c *scenarios.Capacity, arrival string) int {
	if c.By == "rate" && c.Probe.MinRequests > 1 && arrival != "constant" {
		return (c.Probe.MinRequests + 1) / 2
	}
	return c.Probe.MinRequests
}

// meets reports whether v meets the objective o.
func meets(o scenarios.Objective, v float64) bool {
	return o.Op == "<=" && v <= o.Limit || o.Op == ">=" && v >= o.Limit
}

// objectiveValue is an objective's metric over the probe's window (nil when
// the window has none). error_rate is over the requests that ended:
// requests the search cancelled are not errors.
func objectiveValue(o scenarios.Objective, pr *report.CapacityProbe, f probeFigures, doc map[string]map[string]any) *float64 {
	switch o.Metric {
	case "error_rate":
		if f.m.Requests > 0 {
			return report.F(float64(f.m.Errors.Count) / float64(f.m.Requests))
		}
	case "goodput_pct":
		if pr.Requests > 0 {
			return report.F(100 * float64(f.good) / float64(pr.Requests))
		}
	case "queue_ms":
		return f.queue.Field(o.Stat)
	default:
		if v, ok := doc[o.Metric][o.Stat].(float64); ok {
			return &v
		}
	}
	return nil
}

// sortedCopy is vals sorted, leaving vals as they are.
func sortedCopy(vals []float64) []float64 {
	s := append([]float64(nil), vals...)
	sort.Float64s(s)
	return s
}
