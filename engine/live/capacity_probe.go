package live

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/engine/load"
	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/fold"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// probeRun is one probe in progress: its requests as saturation sees
// them, the fold of its window, each objective's values for its interval,
// and whether saturation cut it short.
type probeRun struct {
	r                  *runner
	p                  *scenarios.Phase
	c                  *scenarios.Capacity
	prompts            func(int) measure.Request
	base               int
	v                  float64
	warm, win          time.Duration
	openLoop, shape    bool
	pt                 *fold.Point
	jobCtx             context.Context
	stopSending, abort context.CancelFunc

	mu         sync.Mutex
	recs       []record
	start      time.Time
	unfinished int
	cancelled  int         // warm-up included: what the server may still be working on
	vals       [][]float64 // per objective: the window's values
	cut        chan struct{}
	cutSignals []string
}

// probeOutcome is what the search needs of a probe beyond its report: the
// median e2e of its window in seconds (0 when none) and how many requests
// it cancelled, warm-up included.
type probeOutcome struct {
	e2eS      float64
	cancelled int
}

// probe holds the load at v for a warm-up and a window of win and judges
// it. Requests sent in the warm-up are discarded; those sent in
// the window are measured, and given until one more window (at least 2 s)
// after it to end, after which they are cancelled and counted unfinished.
// Saturation is watched as it runs and ends the probe at once.
func (r *runner) probe(ctx context.Context, p *scenarios.Phase, prompts func(int) measure.Request, v float64, base int, win time.Duration) (*report.CapacityProbe, probeOutcome) {
	c := &p.Capacity
	pr := &report.CapacityProbe{Value: v, Objectives: []report.ObjectiveValue{}, Reasons: []string{}, Saturation: []string{}}
	_, shape := r.send.(*shapeSender)
	pc := &probeRun{r: r, p: p, c: c, prompts: prompts, base: base, v: v, warm: c.Probe.Warmup.Duration, win: win,
		openLoop: c.By == "rate", shape: shape, cut: make(chan struct{}), vals: make([][]float64, len(c.Objectives)),
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
	pctx, stopSending := context.WithCancel(ctx)
	jobCtx, cancelJobs := context.WithCancel(r.hard)
	defer stopSending()
	defer cancelJobs()
	pc.jobCtx, pc.stopSending, pc.abort = jobCtx, stopSending, cancelJobs
	timer := time.AfterFunc(pc.warm+win+max(win, 2*time.Second), cancelJobs)
	defer timer.Stop()
	watchDone := make(chan struct{})
	go pc.watch(pctx, watchDone)
	res := r.send.execute(pctx, plan, pc.job)
	stopSending()
	<-watchDone
	return pc.judge(pr, res)
}

// watch cuts the probe short when it saturates, from half its window on.
func (pc *probeRun) watch(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	if pc.shape {
		return
	}
	tk := time.NewTicker(200 * time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tk.C:
			pc.mu.Lock()
			if pc.start.IsZero() || now.Sub(pc.start) < pc.warm+pc.win/2 {
				pc.mu.Unlock()
				continue
			}
			sig, sat := saturation(pc.recs, pc.start.Add(pc.warm), now, now, pc.openLoop)
			if sat {
				pc.cutSignals = sig
			}
			pc.mu.Unlock()
			if sat {
				close(pc.cut)
				pc.stopSending()
				pc.abort()
				return
			}
		}
	}
}

// job sends request i of the probe and records it.
func (pc *probeRun) job(_ context.Context, i int, scheduled, sent time.Time) {
	pc.mu.Lock()
	if pc.start.IsZero() {
		pc.start = scheduled
	}
	measured := !sent.Before(pc.start.Add(pc.warm))
	k := len(pc.recs)
	pc.recs = append(pc.recs, record{scheduled: scheduled, sent: sent})
	pc.mu.Unlock()
	out, _ := pc.r.stream(pc.jobCtx, pc.prompts(pc.base+i))
	end := time.Now()
	if pc.shape {
		end = sent.Add(time.Millisecond)
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	// Cancelled by the search (cut short, or the drain after the window
	// ran out): not the server's error, never an error of the probe.
	canceled := canceledByUs(out, pc.jobCtx.Err())
	if canceled {
		pc.cancelled++
	} else {
		pc.recs[k].end, pc.recs[k].ttftMS, pc.recs[k].ok = end, out.TTFTMS, out.Err == nil
	}
	if !measured {
		return
	}
	if canceled {
		pc.unfinished++
		return
	}
	smp := sampleOf(out, 0, pc.p.Name, "", i, 0)
	start, written := sendTimes(out, sent)
	pc.pt.Add(fold.Request{Sample: &smp, Name: requestName(pc.p.Name, fmt.Sprintf("probe %g", pc.v), i), Scheduled: scheduled, Start: start, Written: written, End: end})
	for j, o := range pc.c.Objectives {
		pc.vals[j] = append(pc.vals[j], objectiveSamples(o, &smp, scheduled, written)...)
	}
}

// judge closes the probe's window and gives its verdict.
func (pc *probeRun) judge(pr *report.CapacityProbe, res load.Result) (*report.CapacityProbe, probeOutcome) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	start := pc.start
	if start.IsZero() {
		start = res.Start
	}
	from, to := start.Add(pc.warm), start.Add(pc.warm+pc.win)
	end := res.End
	if pc.cutSignals != nil {
		pr.CutShort = true
		to = end
	}
	if pc.shape {
		from, to, end = start, start.Add(2*time.Millisecond), start.Add(2*time.Millisecond)
	}
	pr.DurationS = to.Sub(from).Seconds()
	lp := pc.pt.Close(false)
	m := lp.ServingMetrics
	pr.Requests, pr.Succeeded, pr.Unfinished = m.Requests+pc.unfinished, m.Succeeded, pc.unfinished
	if secs := to.Sub(from).Seconds(); secs > 0 {
		served := 0
		for _, rc := range pc.recs {
			if !rc.end.IsZero() && !rc.end.Before(from) && rc.end.Before(to) && rc.ok {
				served++
			}
		}
		pr.AchievedRatePerS = report.F(float64(pr.Requests) / secs)
		pr.ServedPerS = report.F(float64(served) / secs)
	}
	sig, sat := pc.cutSignals, pc.cutSignals != nil
	if !sat {
		sig, sat = saturation(pc.recs, from, to, end, pc.openLoop)
	}
	pr.Saturation = append(pr.Saturation, sig...)
	judgeProbe(pc.c, pr, probeFigures{m: m, queue: lp.QueueMS, good: pc.pt.Good(), unfinished: pc.unfinished, vals: pc.vals, minRequests: minRequests(pc.c, pc.p.Arrival)}, sat, sig, pc.shape)
	o := probeOutcome{cancelled: pc.cancelled}
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
