package live

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// capacityKind searches the load (rate or concurrency) for the highest
// value whose probes meet every objective: it grows ×2 from start until a
// probe fails (or shrinks ÷2 when start fails), then bisects (geometric
// midpoints; whole numbers by concurrency) until fail ÷ pass ≤ 1 +
// precision, probes the found value probe.repeat times in all, and then
// holds it for a sustained window (holdLength) in which a slow build-up of
// queueing shows. A repeat or a hold that fails makes that value the new
// fail and the search goes on below it.
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
	hold                       bool    // the found value is held before the search ends
	pass, fail                 float64 // 0: none yet
	passes                     map[float64]int
	held                       map[float64]bool
	passed                     []float64 // every value that passed, for a failed repeat
	stop                       string
}

func newSearch(c *scenarios.Capacity) *search {
	return &search{min: c.Min, max: c.Max, start: c.Start, precision: c.Precision.Fraction,
		integer: c.By == "concurrency", repeat: c.Probe.Repeat, hold: c.Probe.Hold == nil || c.Probe.Hold.Duration > 0,
		passes: map[float64]int{}, held: map[float64]bool{}}
}

// next is the value to probe and its step; ok is false when the search is done.
func (s *search) next() (v float64, step string, ok bool) {
	switch {
	case s.stop != "":
		return 0, "", false
	case s.pass == 0 && s.fail == 0:
		return s.start, report.StepBracket, true
	case s.fail == 0:
		if s.pass >= s.max {
			return s.finish(report.CapacityAtMax)
		}
		return s.round(math.Min(s.pass*2, s.max)), report.StepBracket, true
	case s.pass == 0:
		if s.fail <= s.min {
			s.stop = report.CapacityBelowMin
			return 0, "", false
		}
		return s.round(math.Max(s.fail/2, s.min)), report.StepBracket, true
	}
	narrow := s.fail/s.pass <= 1+s.precision
	mid := s.round(math.Sqrt(s.pass * s.fail))
	if s.integer && (s.fail-s.pass <= 1 || mid <= s.pass || mid >= s.fail) {
		narrow = true
	}
	if narrow {
		return s.finish(report.CapacityConverged)
	}
	return mid, report.StepBisect, true
}

// finish confirms the found value, repeat times in all and then with a
// hold, before the search stops with stop.
func (s *search) finish(stop string) (float64, string, bool) {
	if s.passes[s.pass] < s.repeat {
		return s.pass, report.StepConfirm, true
	}
	if s.hold && !s.held[s.pass] {
		return s.pass, report.StepHold, true
	}
	s.stop = stop
	return 0, "", false
}

func (s *search) round(v float64) float64 {
	if s.integer {
		return math.Max(1, math.Round(v))
	}
	return v
}

// record notes a probe's outcome.
func (s *search) record(v float64, step string, pass bool) {
	if pass {
		s.passes[v]++
		if step == report.StepHold {
			s.held[v] = true
		}
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
		// A repeat or a hold (or a lower value) failed: the highest pass
		// below it stands.
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
	out := &report.Capacity{By: c.By, PrecisionPct: c.Precision.Fraction * 100, Min: c.Min, Max: c.Max, Objectives: []string{}, Probes: []*report.CapacityProbe{}}
	for _, o := range c.Objectives {
		out.Objectives = append(out.Objectives, o.Text)
	}
	ph.Capacity = out
	s := newSearch(c)
	started := time.Now()
	err = r.runSearch(ctx, p, prompts, s, out, started)
	out.WallS = time.Since(started).Seconds()
	finishCapacity(out, s, c)
	r.checkProbeLag(p, out)
	if _, shape := r.send.(*shapeSender); shape && len(c.Objectives) > 0 {
		// A real search bound by an objective (or by the client) has its
		// value; the shape's max only saturates, so it holds the key a
		// gate may read.
		out.BoundValue = report.F(1)
	}
	if err == nil && s.stop == report.CapacityBelowMin {
		return belowMin(out, c)
	}
	return err
}

// runSearch probes until the search is done, the budget would be
// overrun or ctx ends.
func (r *runner) runSearch(ctx context.Context, p *scenarios.Phase, prompts func(int) measure.Request, s *search, out *report.Capacity, started time.Time) error {
	c := &p.Capacity
	_, shape := r.send.(*shapeSender)
	next := 0
	e2e := map[float64]float64{} // median e2e seconds of the last probe at a value
	var settle time.Duration
	served := 0.0                   // the most completions per second any probe saw
	var again *report.CapacityProbe // a client-late probe to run again
	reruns := 0                     // of again's value, so far
	for {
		v, step, ok := 0.0, "", true
		if again != nil {
			v, step = again.Value, again.Step
		} else {
			v, step, ok = s.next()
		}
		if shape {
			// The shape probes min (a pass) and max (saturated), so every
			// key a search can fill is in it.
			v, step, ok = shapeStep(len(out.Probes), c)
			if !ok {
				s.stop = report.CapacityConverged
				w := window(c, c.Min).Seconds()
				out.HoldS, out.HoldWantedS = &w, &w
				out.Interval = report.Interval{Low: report.F(c.Min), High: report.F(c.Max), ConfidencePct: report.IntervalConfidencePct}
			}
		}
		if !ok {
			return nil
		}
		win := window(c, v)
		if step == report.StepHold {
			wanted := holdLength(c, v, e2e[v])
			win = min(wanted, c.Budget.Duration-time.Since(started)-holdOverhead(c, e2e[v]))
			out.HoldWantedS = report.F(wanted.Seconds())
			if win < window(c, v) {
				return nil // no hold fits: the budget ends the search unconfirmed
			}
			out.HoldS = report.F(win.Seconds())
		} else if time.Since(started)+probeLength(c, v) > c.Budget.Duration {
			return nil
		}
		if !r.wait(ctx, settle) {
			return ctx.Err()
		}
		pr, po := r.probe(ctx, p, prompts, v, next, win)
		pr.Step = step
		next += pr.Requests + pr.Unfinished + 1_000_000
		if shape && len(out.Probes) == 1 {
			pr.Verdict, pr.CutShort, pr.Clear = report.ProbeSaturated, true, true
			pr.Reasons = append(pr.Reasons, "saturated: shape")
			pr.Saturation = append(pr.Saturation, "shape")
		}
		out.Probes = append(out.Probes, pr)
		if err := ctx.Err(); err != nil {
			return err
		}
		e2e[v] = po.e2eS
		if pr.ServedPerS != nil {
			served = max(served, *pr.ServedPerS)
		}
		settle = settleTime(po.cancelled, served)
		if pr.ClientLate && reruns < lateReruns {
			// The client, not the server, fell behind: a busy moment on the
			// client's machine is run again before the search hears of it,
			// so a burst elsewhere neither bounds the search nor passes.
			again = pr
			reruns++
			continue
		}
		again, reruns = nil, 0
		s.record(v, step, pr.Verdict == report.ProbePass)
	}
}

// lateReruns is how many times a client-late probe is run again at its
// value before its failure counts. A probe's p99 lateness is close to its
// latest send (a window holds tens of requests), so one stall of the
// client's machine makes a probe late; measured beside stress-ng --cpu 4 on
// 2 cores, about 1 probe in 10 was. Three late in a row is the client.
const lateReruns = 2

// settleTime is the pause before the next probe when this one cancelled
// requests (cut short, or unanswered after its drain): a server may still
// work on what the client gave up on (the simulator, like many servers,
// finishes a prefill it started), and the next probe would start behind a
// backlog that is not its own. It is the time to serve what was cancelled
// at the best rate any probe was served at, 1.5 × over, plus a second;
// none when nothing was cancelled.
func settleTime(cancelled int, servedPerS float64) time.Duration {
	if cancelled == 0 {
		return 0
	}
	secs := 1.0
	if servedPerS > 0 {
		secs += 1.5 * float64(cancelled) / servedPerS
	} else {
		secs += 2
	}
	return time.Duration(secs * float64(time.Second))
}

// shapeStep is the shape's probes: min (a pass), then max, then done.
func shapeStep(n int, c *scenarios.Capacity) (float64, string, bool) {
	switch n {
	case 0:
		return c.Min, report.StepBracket, true
	case 1:
		return c.Max, report.StepBracket, true
	}
	return 0, "", false
}

// finishCapacity fills what the search found: the value, its bracket and
// interval, whether it was held, and what bound it.
func finishCapacity(out *report.Capacity, s *search, c *scenarios.Capacity) {
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
		out.Confirmed = s.held[s.pass]
	}
	if out.Interval.Low == nil && out.Interval.High == nil {
		out.Interval = capacityInterval(out.Probes, s.pass)
	}
	out.BoundBy, out.AlsoFailed = report.CapacityAtMax, []string{}
	if s.fail > 0 {
		out.Bracket.Fail = report.F(s.fail)
		out.BoundBy, out.BoundValue, out.AlsoFailed = "", nil, []string{}
		for _, pr := range out.Probes {
			if pr.Value == s.fail && pr.Verdict != report.ProbePass {
				out.BoundBy, out.BoundValue, out.AlsoFailed = boundBy(pr, c.Objectives)
				if out.AlsoFailed == nil {
					out.AlsoFailed = []string{}
				}
			}
		}
	}
}

// checkProbeLag marks the run's measurement invalid when the search was
// bound by a probe the client could not offer (ClientLate): the capacity
// found is then the client's limit as much as the server's.
func (r *runner) checkProbeLag(p *scenarios.Phase, out *report.Capacity) {
	if out.BoundBy != "dispatch_lag_ms" || out.Bracket.Fail == nil {
		return
	}
	for i := len(out.Probes) - 1; i >= 0; i-- {
		pr := out.Probes[i]
		if pr.Value != *out.Bracket.Fail || !pr.ClientLate {
			continue
		}
		found := "no capacity"
		if out.Bracket.Pass != nil {
			found = fmt.Sprintf("the capacity found, %g,", *out.Bracket.Pass)
		}
		msg := fmt.Sprintf("phase %s: the capacity probe at %g: %s; %s is the client's limit as much as the server's: "+
			"give the client more CPU, lower capacity.max, or raise max_dispatch_lag to accept it", p.Name, pr.Value, pr.Reasons[0], found)
		r.out.Invalid = append(r.out.Invalid, report.Invalidity{Reason: report.InvalidDispatchLag,
			Path: report.Pointer("runs", r.run.Name, "phases", p.Name, "capacity", "probes", strconv.Itoa(i), "dispatch_lag_p99_ms"), Message: msg})
		return
	}
}

// belowMin is the error of a search whose min already failed: no load in
// its range meets the objectives, so there is no capacity to judge (exit
// 3). It names what failed at min and what to change.
func belowMin(out *report.Capacity, c *scenarios.Capacity) error {
	var at *report.CapacityProbe
	for _, pr := range out.Probes {
		if pr.Value == c.Min && pr.Verdict != report.ProbePass {
			at = pr
		}
	}
	unit := "/s"
	if c.By == "concurrency" {
		unit = " in flight"
	}
	what := "it did not pass"
	if at != nil && len(at.Reasons) > 0 {
		what = strings.Join(at.Reasons, "; ")
	}
	fix := "lower capacity.min (" + c.At("min").String() + ")"
	for _, o := range c.Objectives {
		if at != nil && failedObjective(at, o.Text) {
			fix += " or relax " + o.Text + " (" + o.Pos.String() + ")"
		}
	}
	return fmt.Errorf("%w: no load meets the capacity objectives: at capacity.min %g%s %s; %s", ErrPhase, c.Min, unit, what, fix)
}

func failedObjective(pr *report.CapacityProbe, text string) bool {
	for _, o := range pr.Objectives {
		if o.Objective == text && !o.Pass {
			return true
		}
	}
	return false
}

// boundBy names what failed a probe: of its failed objectives, the one
// furthest past its limit (relative to the limit: under a load that only
// grows, that one crossed its limit first, at a lower load), with its value
// and the others that failed too; else saturation, else the first reason.
func boundBy(pr *report.CapacityProbe, objs scenarios.Objectives) (string, *float64, []string) {
	if pr.ClientLate {
		// The client, not the server: what failed with it is its doing too.
		var also []string
		for _, o := range pr.Objectives {
			if !o.Pass {
				also = append(also, o.Objective)
			}
		}
		return "dispatch_lag_ms", pr.DispatchLagP99MS, also
	}
	best, worst := -1, 0.0
	for i, o := range pr.Objectives {
		if o.Pass {
			continue
		}
		if x := excess(o, objs); best < 0 || x > worst {
			best, worst = i, x
		}
	}
	if best >= 0 {
		var also []string
		for i, o := range pr.Objectives {
			if !o.Pass && i != best {
				also = append(also, o.Objective)
			}
		}
		return pr.Objectives[best].Objective, pr.Objectives[best].Value, also
	}
	if pr.Verdict == report.ProbeSaturated {
		return report.ProbeSaturated, nil, nil
	}
	if len(pr.Reasons) > 0 {
		return pr.Reasons[0], nil, nil
	}
	return "", nil, nil
}

// excess is how far a failed objective's value is past its limit, as a
// ratio (value ÷ limit for <=, limit ÷ value for >=); a value that is
// absent, or past a limit of 0, is infinitely far.
func excess(ov report.ObjectiveValue, objs scenarios.Objectives) float64 {
	inf := math.Inf(1)
	if ov.Value == nil {
		return inf
	}
	for _, o := range objs {
		if o.Text != ov.Objective {
			continue
		}
		v := *ov.Value
		switch {
		case o.Op == "<=" && o.Limit > 0:
			return v / o.Limit
		case o.Op == ">=" && v > 0:
			return o.Limit / v
		}
		return inf
	}
	return 1
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

// holdLength is the sustained window a found value v is held for:
// probe.hold when given, else 2 × S ÷ precision, S the median e2e (in
// seconds) of the probe that found it, and never under a probe's window.
//
// Why that long: at a rate one precision step ε above capacity μ (offered
// (1 + ε)·μ), the backlog grows by ε·μ requests a second and every
// request waits ε seconds longer per second of the hold. After 2·S ÷ ε it
// has grown by 2·μ·S, twice the number in flight at capacity, and the
// last requests wait 2·S more than the first: the served ÷ offered rule
// sees a backlog of two server-loads (far above its noise of about one),
// and any latency objective with less than two service times of headroom
// is broken. A short probe (a few S) shows a tenth of that, which is how
// a search overestimates a server that degrades gradually.
func holdLength(c *scenarios.Capacity, v, e2eS float64) time.Duration {
	if c.Probe.Hold != nil {
		return max(c.Probe.Hold.Duration, window(c, v))
	}
	want := time.Duration(2 * e2eS / c.Precision.Fraction * float64(time.Second))
	return max(want, window(c, v))
}

// holdOverhead is what a hold takes beyond its window, for the budget: its
// warm-up and the drain of its last requests.
func holdOverhead(c *scenarios.Capacity, e2eS float64) time.Duration {
	return c.Probe.Warmup.Duration + max(2*time.Second, time.Duration(2*e2eS*float64(time.Second)))
}
