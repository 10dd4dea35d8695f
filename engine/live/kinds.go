package live

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/report/fold"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// PhaseKind is one kind of live phase. Run fills ph: it plans the phase's
// requests, sends them through r (real or placeholder, the code is the same)
// and lays the results out under the keys the kind produces; MaxInFlight
// sizes the keep-alive pool.
//
// A new kind, counted from trace's: in this package its own file (the
// type, named after the kind as traceKind, with Run and MaxInFlight); in
// scenarios its own file (its name constant, its KindSpec function, keys,
// defaults, checks and any fields type) and, in kinds.go, its row in
// phaseKindTable and, when it has keys of its own, one embed in
// KindFields: three code files. go generate ./engine then writes its
// entry in Kinds (kinds_gen.go); its shape and pool size follow with no
// other edit. Its name goes in report/kinds.go only when a writer
// special-cases it. Its definition is
// in schema/scenario.schema.json (then go test ./schema -update for the
// derived parts). Its requests go through the recorder
// (record.go) and report/fold, so a kind laid out as metrics, points or
// slices needs nothing in the merge or repetitions. A kind that fills
// report keys no kind fills yet also touches the report types,
// schema/report.schema.json, the shard merge (report/fold/merge.go) and
// the writers that show the keys (report/view and the renderers).
type PhaseKind interface {
	Run(ctx context.Context, r *runner, p *scenarios.Phase, ph *report.Phase) error
	// MaxInFlight is the most requests p keeps in flight at once (1 for a
	// kind that sends them one after another); the keep-alive pool is sized
	// to the largest over a run's phases (poolSize).
	MaxInFlight(p *scenarios.Phase) int
}

// step is one request of a phase. Point names the breakdown it belongs to
// ("" for none).
type step struct {
	point string
	index int
	req   measure.Request
}

// outcome is a sent step and what came back.
type outcome struct {
	step
	res measure.Result
}

// Plan yields a phase's requests one at a time. Next sees the previous
// outcome (nil before the first), so a request may depend on a reply (the
// next turn of a conversation); ok is false when the phase is done.
type Plan interface {
	Next(prev *outcome) (s step, ok bool)
	// Len is the number of steps when known in advance (for the error
	// budget and progress), else 0.
	Len() int
}

// fixedPlan is a list of requests prepared before any is sent, so
// calibration traffic never interleaves with the timings.
type fixedPlan struct {
	steps []step
	next  int
}

// sized marks req as built to a prompt of target tokens, when the phase
// calibrates its prompts (uncalibrated ones are sized by words only).
func sized(req measure.Request, target int, p *scenarios.Phase) measure.Request {
	if calibrated(p) {
		req.TargetPromptTokens = target
	}
	return req
}

func (f *fixedPlan) add(point string, index int, req measure.Request) {
	f.steps = append(f.steps, step{point: point, index: index, req: req})
}

func (f *fixedPlan) Next(*outcome) (step, bool) {
	if f.next >= len(f.steps) {
		return step{}, false
	}
	f.next++
	return f.steps[f.next-1], true
}

func (f *fixedPlan) Len() int { return len(f.steps) }

// folded is a sequential phase's results: all requests, and per point in
// first-seen order.
type folded struct {
	rec    *recorder
	points map[string]*fold.Slice
	order  []string
}

// point returns the named point's aggregate (nil when none ran).
func (f *folded) point(name string) *report.Point {
	a := f.points[name]
	if a == nil {
		return nil
	}
	return &report.Point{ServingMetrics: a.Close()}
}

// sequential sends a plan's requests one after another and folds them. It
// stops at an interrupt or when the phase's error budget is certainly spent;
// the error says why, and the fold holds what was measured.
func (r *runner) sequential(ctx context.Context, p *scenarios.Phase, plan Plan) (*folded, error) {
	f := &folded{rec: r.newRecorder(p, plan.Len()), points: map[string]*fold.Slice{}}
	phaseStart := time.Now()
	var prev *outcome
	for {
		s, ok := plan.Next(prev)
		if !ok {
			return f, f.rec.overErr("")
		}
		if err := ctx.Err(); err != nil {
			return f, err
		}
		startMS := float64(time.Since(phaseStart).Microseconds()) / 1000
		res, retries := r.stream(r.hard, s.req)
		if canceledByUs(res, ctx.Err()) {
			return f, ctx.Err()
		}
		var into []func(*report.RequestSample, string)
		if s.point != "" {
			a, ok := f.points[s.point]
			if !ok {
				a = r.newSlice()
				f.points[s.point] = a
				f.order = append(f.order, s.point)
			}
			into = append(into, intoSlice(a))
		}
		if _, spent := f.rec.record(entry{res: res, retries: retries, point: s.point, index: s.index, startMS: startMS}, into...); spent {
			return f, f.rec.spentErr("")
		}
		prev = &outcome{step: s, res: res}
	}
}

// measured lays out what every measured sequential phase shows: the
// phase's metrics, its warnings and, when asked, its samples.
func (r *runner) measured(f *folded, ph *report.Phase) {
	f.rec.close(ph)
	ph.Warnings = append(ph.Warnings, r.warnings...)
}

// minJudged is how many requests a phase of unknown length sends before its
// error rate may stop it early: fewer say too little about the rate.
const minJudged = 50

// errorBudget judges a phase's max_error_rate so that the outcome does not
// depend on when the errors land: a phase stops early only when the budget
// is certainly spent, and the rest is judged once it ends.
type errorBudget struct {
	rate    float64
	planned int // requests the phase will send; 0: unknown (duration-bound)
}

func newErrorBudget(p *scenarios.Phase, planned int) errorBudget {
	b := errorBudget{planned: planned}
	if p.MaxErrorRate != nil {
		b.rate = *p.MaxErrorRate
	}
	return b
}

// spent reports whether errs failures in n requests so far spend the
// budget whatever follows: more than rate × planned, when that is known.
// When it is not, only rate 0 is certain; otherwise, after minJudged
// requests, an error rate more than three standard deviations above the
// budget (a server failing far more often than allowed, not a random early
// cluster of errors within it).
func (b errorBudget) spent(errs, n int) bool {
	switch {
	case errs == 0:
		return false
	case b.planned > 0:
		return errs > int(math.Floor(b.rate*float64(b.planned)))
	case b.rate == 0:
		return true
	case n < minJudged:
		return false
	}
	fn := float64(n)
	return float64(errs) > b.rate*fn+3*math.Sqrt(fn*b.rate*(1-b.rate))
}

// over is the judgment at the end: more than rate × the requests sent.
func (b errorBudget) over(errs, n int) bool {
	return errs > 0 && errs > int(math.Floor(b.rate*float64(n)))
}

func (b errorBudget) err(label string, errs, n int, last *measure.Error) error {
	if label != "" {
		label += ": "
	}
	return fmt.Errorf("%w: %s%d of %d requests failed, over max_error_rate %g (last: %v)", ErrPhase, label, errs, n, b.rate, last)
}
