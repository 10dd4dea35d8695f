package live

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/engine/load"
	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/fold"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// capacityKind searches the load (rate or concurrency) for the highest
// value whose probes meet every objective: it grows ×2 from start until a
// probe fails (or shrinks ÷2 when start fails), then bisects (geometric
// midpoints; whole numbers by concurrency) until fail ÷ pass ≤ 1 +
// precision, and probes the found value probe.repeat times in all. A
// repeat that fails makes that value the new fail and the search goes on
// below it.
type capacityKind struct{}

// MaxInFlight is the search's upper bound (a concurrency, or what a rate
// may hold in flight), at most maxPoolConns.
func (capacityKind) MaxInFlight(p *scenarios.Phase) int {
	return min(int(p.Capacity.Max), maxPoolConns)
}

// search is the capacity search's state, apart from the network so it can
// be tested alone.
type search struct {
	min, max, start, precision float64
	integer                    bool
	repeat                     int
	pass, fail                 float64 // 0: none yet
	passes                     map[float64]int
	passed                     []float64 // every value that passed, for a failed repeat
	stop                       string
}

func newSearch(c *scenarios.Capacity) *search {
	return &search{min: c.Min, max: c.Max, start: c.Start, precision: c.Precision.Fraction,
		integer: c.By == "concurrency", repeat: c.Probe.Repeat, passes: map[float64]int{}}
}

// next is the value to probe and its step; ok is false when the search is done.
func (s *search) next() (v float64, step string, ok bool) {
	switch {
	case s.stop != "":
		return 0, "", false
	case s.pass == 0 && s.fail == 0:
		return s.start, "bracket", true
	case s.fail == 0:
		if s.pass >= s.max {
			if s.passes[s.pass] < s.repeat {
				return s.pass, "confirm", true
			}
			s.stop = report.CapacityAtMax
			return 0, "", false
		}
		return s.round(math.Min(s.pass*2, s.max)), "bracket", true
	case s.pass == 0:
		if s.fail <= s.min {
			s.stop = report.CapacityBelowMin
			return 0, "", false
		}
		return s.round(math.Max(s.fail/2, s.min)), "bracket", true
	}
	narrow := s.fail/s.pass <= 1+s.precision
	mid := s.round(math.Sqrt(s.pass * s.fail))
	if s.integer && (s.fail-s.pass <= 1 || mid <= s.pass || mid >= s.fail) {
		narrow = true
	}
	if narrow {
		if s.passes[s.pass] < s.repeat {
			return s.pass, "confirm", true
		}
		s.stop = report.CapacityConverged
		return 0, "", false
	}
	return mid, "bisect", true
}

func (s *search) round(v float64) float64 {
	if s.integer {
		return math.Max(1, math.Round(v))
	}
	return v
}

// record notes a probe's outcome.
func (s *search) record(v float64, pass bool) {
	if pass {
		s.passes[v]++
		s.passed = append(s.passed, v)
		if v > s.pass && (s.fail == 0 || v < s.fail) {
			s.pass = v
		}
		return
	}
	if s.fail == 0 || v < s.fail {
		s.fail = v
	}
	if v <= s.pass {
		// A repeat (or a lower value) failed: the highest pass below it stands.
		s.pass = 0
		for _, p := range s.passed {
			if p < v && p > s.pass {
				s.pass = p
			}
		}
	}
}

func (capacityKind) Run(ctx context.Context, r *runner, p *scenarios.Phase, ph *report.Phase) error {
	c := &p.Capacity
	prompts, err := r.loadPrompts(ctx, p, ph, 0)
	if err != nil {
		return err
	}
	_, shape := r.send.(*shapeSender)
	out := &report.Capacity{By: c.By, PrecisionPct: c.Precision.Fraction * 100, Min: c.Min, Max: c.Max, Objectives: []string{}, Probes: []*report.CapacityProbe{}}
	for _, o := range c.Objectives {
		out.Objectives = append(out.Objectives, o.Text)
	}
	ph.Capacity = out
	s := newSearch(c)
	started := time.Now()
	next := 0
	defer func() {
		out.WallS = time.Since(started).Seconds()
		out.ProbeCount = len(out.Probes)
		if s.stop == "" {
			s.stop = report.CapacityBudget
		}
		out.Stop = s.stop
		if s.pass > 0 {
			out.Bracket.Pass = report.F(s.pass)
			if c.By == "concurrency" {
				n := int(s.pass)
				out.MaxConcurrency = &n
			} else {
				out.MaxRatePerS = report.F(s.pass)
			}
		}
		out.BoundBy = report.CapacityAtMax
		if s.fail > 0 {
			out.Bracket.Fail = report.F(s.fail)
			out.BoundBy = ""
			for _, pr := range out.Probes {
				if pr.Value == s.fail && pr.Verdict != report.ProbePass {
					out.BoundBy = boundBy(pr)
				}
			}
		}
	}()
	for {
		v, step, ok := s.next()
		if shape {
			// The shape probes min (a pass) and max (saturated), so every
			// key a search can fill is in it.
			switch len(out.Probes) {
			case 0:
				v, step, ok = c.Min, "bracket", true
			case 1:
				v, step, ok = c.Max, "bracket", true
			default:
				s.stop = report.CapacityConverged
				return nil
			}
		}
		if !ok {
			return nil
		}
		if est := probeLength(c, v); time.Since(started)+est > c.Budget.Duration {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		pr := r.probe(ctx, p, prompts, v, next)
		pr.Step = step
		next += pr.Requests + pr.Unfinished + 1_000_000
		if shape && len(out.Probes) == 1 {
			pr.Verdict, pr.CutShort = report.ProbeSaturated, true
			pr.Reasons = append(pr.Reasons, "saturated: shape")
			pr.Saturation = append(pr.Saturation, "shape")
		}
		out.Probes = append(out.Probes, pr)
		if err := ctx.Err(); err != nil {
			return err
		}
		s.record(v, pr.Verdict == report.ProbePass)
	}
}

// boundBy names what failed a probe: its first failed objective, else
// saturation.
func boundBy(pr *report.CapacityProbe) string {
	for _, o := range pr.Objectives {
		if !o.Pass {
			return o.Objective
		}
	}
	if pr.Verdict == report.ProbeSaturated {
		return report.ProbeSaturated
	}
	if len(pr.Reasons) > 0 {
		return pr.Reasons[0]
	}
	return ""
}

// window is a probe's measured window at value v: probe.duration, stretched
// in an open loop until it holds probe.min_requests.
func window(c *scenarios.Capacity, v float64) time.Duration {
	w := c.Probe.Duration.Duration
	if c.By == "rate" {
		need := time.Duration(float64(c.Probe.MinRequests) / v * float64(time.Second))
		w = max(w, need)
	}
	return w
}

// probeLength estimates a probe's wall time for the budget: warm-up,
// window and the drain after it (at most a window).
func probeLength(c *scenarios.Capacity, v float64) time.Duration {
	return c.Probe.Warmup.Duration + 2*window(c, v)
}

// probe holds the load at v for a warm-up and a window and judges it.
// Requests sent in the warm-up are discarded; those sent in the window are
// measured, and given until one more window (at least 2 s) after it to end,
// after which they are cancelled and counted unfinished. Saturation is
// watched as it runs: two signals agreeing end the probe at once.
func (r *runner) probe(ctx context.Context, p *scenarios.Phase, prompts func(int) measure.Request, v float64, base int) *report.CapacityProbe {
	c := &p.Capacity
	pr := &report.CapacityProbe{Value: v, Objectives: []report.ObjectiveValue{}, Reasons: []string{}, Saturation: []string{}}
	openLoop := c.By == "rate"
	win := window(c, v)
	warm := c.Probe.Warmup.Duration
	_, shape := r.send.(*shapeSender)
	if shape {
		warm = 0
	}
	plan := load.Plan{Duration: warm + win, MaxInFlight: p.MaxInFlight}
	var err error
	if openLoop {
		plan.Schedule, err = load.NewSchedule(v, p.Arrival, p.Burstiness, 0, r.seed(p)+int64(base))
		if err != nil {
			pr.Verdict, pr.Reasons = report.ProbeFail, []string{err.Error()}
			return pr
		}
	} else {
		plan.Concurrency = int(v)
	}
	// Probes are not shards' figures: no histograms kept.
	pt := fold.NewPoint(fold.Options{PromptTolerance: transport.CalibrationTolerance}, p.SLO.Limits)
	var mu sync.Mutex
	var recs []record
	unfinished := 0
	var start time.Time
	var startOnce sync.Once
	pctx, stopSending := context.WithCancel(ctx)
	jobCtx, cancelJobs := context.WithCancel(r.hard)
	defer stopSending()
	defer cancelJobs()
	drain := max(win, 2*time.Second)
	timer := time.AfterFunc(warm+win+drain, cancelJobs)
	defer timer.Stop()
	cut := make(chan struct{})
	var cutSignals []string
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		if shape {
			return
		}
		tk := time.NewTicker(200 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-pctx.Done():
				return
			case <-cut:
				return
			case now := <-tk.C:
				mu.Lock()
				if start.IsZero() || now.Sub(start) < warm+win/2 {
					mu.Unlock()
					continue
				}
				sig, sat := saturation(recs, start.Add(warm), now, now, openLoop)
				mu.Unlock()
				if sat {
					cutSignals = sig
					close(cut)
					stopSending()
					cancelJobs()
					return
				}
			}
		}
	}()
	res := r.send.execute(pctx, plan, func(_ context.Context, i int, scheduled, sent time.Time) {
		startOnce.Do(func() {
			mu.Lock()
			if start.IsZero() {
				start = scheduled
			}
			mu.Unlock()
		})
		mu.Lock()
		measured := !sent.Before(start.Add(warm))
		k := len(recs)
		recs = append(recs, record{scheduled: scheduled, sent: sent})
		mu.Unlock()
		out, _ := r.stream(jobCtx, prompts(base+i))
		end := time.Now()
		if shape {
			end = sent.Add(time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		canceled := out.Err != nil && out.Err.Class == measure.ClassCanceled && jobCtx.Err() != nil
		if !canceled {
			recs[k].end, recs[k].ttftMS, recs[k].ok = end, out.TTFTMs, out.Err == nil
		}
		if !measured {
			return
		}
		if canceled {
			unfinished++
			return
		}
		smp := sampleOf(out, 0, p.Name, "", i, 0)
		st, wr := sendTimes(out, sent)
		pt.Add(fold.Request{Sample: &smp, Name: requestName(p.Name, fmt.Sprintf("probe %g", v), i), Scheduled: scheduled, Start: st, Written: wr, End: end})
	})
	stopSending()
	<-watchDone
	mu.Lock()
	defer mu.Unlock()
	if start.IsZero() {
		start = res.Start
	}
	from, to := start.Add(warm), start.Add(warm+win)
	end := res.End
	if cutSignals != nil {
		pr.CutShort = true
		to = end
	}
	if shape {
		from, to, end = start, start.Add(2*time.Millisecond), start.Add(2*time.Millisecond)
	}
	pr.DurationS = to.Sub(from).Seconds()
	lp := pt.Close(false)
	m, good := lp.ServingMetrics, pt.Good()
	pr.Requests, pr.Succeeded, pr.Unfinished = m.Requests+unfinished, m.Succeeded, unfinished
	if secs := to.Sub(from).Seconds(); secs > 0 {
		served := 0
		for _, rc := range recs {
			if !rc.end.IsZero() && !rc.end.Before(from) && rc.end.Before(to) && rc.ok {
				served++
			}
		}
		pr.AchievedRatePerS = report.F(float64(pr.Requests) / secs)
		pr.ServedPerS = report.F(float64(served) / secs)
	}
	sig, sat := cutSignals, cutSignals != nil
	if !sat {
		sig, sat = saturation(recs, from, to, end, openLoop)
	}
	pr.Saturation = append(pr.Saturation, sig...)
	judgeProbe(c, pr, probeFigures{m: m, queue: lp.QueueMS, good: good, unfinished: unfinished}, sat, sig, shape)
	return pr
}

// probeFigures are what a probe's window measured, for its objectives.
type probeFigures struct {
	m          *report.ServingMetrics
	queue      report.Stat
	good       int
	unfinished int
}

// judgeProbe holds a probe's figures against the objectives and gives its
// verdict: saturated, pass, or fail with the reasons.
func judgeProbe(c *scenarios.Capacity, pr *report.CapacityProbe, f probeFigures, sat bool, sig []string, shape bool) {
	// Objectives read the window's aggregate; a statistic with no samples
	// fails its objective (it cannot be shown to pass).
	var doc map[string]map[string]any
	if data, err := json.Marshal(f.m); err == nil {
		_ = json.Unmarshal(data, &doc)
	}
	pass := true
	for _, o := range c.Objectives {
		val := objectiveValue(o, pr, f, doc)
		ok := val != nil && (o.Op == "<=" && *val <= o.Limit || o.Op == ">=" && *val >= o.Limit)
		pr.Objectives = append(pr.Objectives, report.ObjectiveValue{Objective: o.Text, Value: val, Pass: ok})
		if !ok {
			pass = false
			if val == nil {
				pr.Reasons = append(pr.Reasons, fmt.Sprintf("%s: no value (no request in the window produced it)", o.Text))
			} else {
				pr.Reasons = append(pr.Reasons, fmt.Sprintf("%s: was %.4g", o.Text, *val))
			}
		}
	}
	if f.unfinished > 0 {
		pass = false
		pr.Reasons = append(pr.Reasons, fmt.Sprintf("%d requests unanswered when the probe ended", f.unfinished))
	}
	if f.m.Requests+f.unfinished < c.Probe.MinRequests && !pr.CutShort && !shape {
		pass = false
		pr.Reasons = append(pr.Reasons, fmt.Sprintf("only %d requests in the window, under probe.min_requests %d", pr.Requests, c.Probe.MinRequests))
	}
	switch {
	case sat:
		pr.Verdict = report.ProbeSaturated
		pr.Reasons = append(pr.Reasons, "saturated: "+sig[0])
	case pass:
		pr.Verdict = report.ProbePass
	default:
		pr.Verdict = report.ProbeFail
	}
}

// objectiveValue is an objective's metric over the probe's window (nil when
// the window has none).
func objectiveValue(o scenarios.Objective, pr *report.CapacityProbe, f probeFigures, doc map[string]map[string]any) *float64 {
	switch o.Metric {
	case "error_rate":
		if pr.Requests > 0 {
			return report.F(float64(f.m.Errors.Count+f.unfinished) / float64(pr.Requests))
		}
	case "goodput_pct":
		if pr.Requests > 0 {
			return report.F(100 * float64(f.good) / float64(pr.Requests))
		}
	case "queue_ms":
		return statField(f.queue, o.Stat)
	default:
		if v, ok := doc[o.Metric][o.Stat].(float64); ok {
			return &v
		}
	}
	return nil
}

func statField(s report.Stat, name string) *float64 {
	switch name {
	case "mean":
		return s.Mean
	case "min":
		return s.Min
	case "p50":
		return s.P50
	case "p90":
		return s.P90
	case "p95":
		return s.P95
	case "p99":
		return s.P99
	case "max":
		return s.Max
	}
	return nil
}
